"""Fine-tuning run directories written by older code (a finished trial, and a second trial killed
after its step-4 checkpoint) resume with today's code: the finished trial is reused, the second
resumes from that checkpoint (its variables under the older names: `task.Task.older_layouts`)
and ends where the old code's own resume of the same directory ended. `run_glue` before the one
fine-tuning contract (commit 1adce74), and `run_tagging --crf` before the one head contract
(commit 61d1935: the encoder, the head and the CRF's transitions on the model)."""
import os
import shutil

import tensorflow as tf

from official_rtd.finetune import all_tasks  # pylint: disable=unused-import
from official_rtd.finetune import configs
from official_rtd.finetune import runner as runner_lib
from official_rtd.utils import textio
from tests import testutil

FIXTURE = os.path.join(testutil.REPO, "tests", "testdata", "finetune_run_1adce74")
# The fingerprint records the paths the run was given: the fixture is put back where it was made.
ROOT = "/tmp/official_rtd_ft_fixture"
TAGGING_FIXTURE = os.path.join(testutil.REPO, "tests", "testdata", "tagging_run_61d1935")
TAGGING_ROOT = "/tmp/official_rtd_tag_fixture"


class EarlierFinetuneRunTest(tf.test.TestCase):

  def test_a_run_written_before_the_one_contract_resumes(self):
    shutil.rmtree(ROOT, ignore_errors=True)
    shutil.copytree(FIXTURE, ROOT)
    self.addCleanup(shutil.rmtree, ROOT, ignore_errors=True)
    config = configs.GlueConfig(
        task="sst-2", data_dir=os.path.join(ROOT, "data"),
        init_checkpoint=os.path.join(ROOT, "export"), model_dir=os.path.join(ROOT, "run"),
        max_seq_length=16, train_batch_size=8, num_trials=2, num_train_epochs=2,
        save_checkpoints_steps=4, log_every_steps=1)
    first = textio.load_json(os.path.join(ROOT, "run", "trial_0", "results.json"))
    logged = []
    summary = runner_lib.Runner(config, log=logged.append).run()
    self.assertTrue(any(line.startswith("trial 1/2: already done") for line in logged), logged)
    self.assertTrue(any("resuming at step 4" in line for line in logged), logged)
    self.assertEqual(summary["trials"][0], first)
    second = summary["trials"][1]
    self.assertEqual(second["train_steps"], 8)
    # What commit 1adce74 itself gives when it resumes this directory (run once by hand; its
    # uninterrupted run ended at the same accuracy and a final loss of 0.67998).
    self.assertEqual(second["dev"], {"dev": {"accuracy": 0.6875}})
    self.assertAllClose(second["final_train_loss"], 0.6795337647199631, rtol=1e-6)

  def test_a_crf_tagging_run_written_before_the_one_head_contract_resumes(self):
    shutil.rmtree(TAGGING_ROOT, ignore_errors=True)
    shutil.copytree(TAGGING_FIXTURE, TAGGING_ROOT)
    shutil.copytree(os.path.join(FIXTURE, "export"), os.path.join(TAGGING_ROOT, "export"))
    self.addCleanup(shutil.rmtree, TAGGING_ROOT, ignore_errors=True)
    config = configs.TaggingConfig(
        task="pos", crf=True, data_dir=os.path.join(TAGGING_ROOT, "data"),
        init_checkpoint=os.path.join(TAGGING_ROOT, "export"),
        model_dir=os.path.join(TAGGING_ROOT, "run"), max_seq_length=16, train_batch_size=8,
        num_trials=2, num_train_epochs=2, save_checkpoints_steps=4, log_every_steps=1)
    first = textio.load_json(os.path.join(TAGGING_ROOT, "run", "trial_0", "results.json"))
    logged = []
    summary = runner_lib.Runner(config, log=logged.append).run()
    self.assertTrue(any(line.startswith("trial 1/2: already done") for line in logged), logged)
    self.assertTrue(any("resuming at step 4" in line for line in logged), logged)
    self.assertEqual(summary["trials"][0], first)
    second = summary["trials"][1]
    self.assertEqual(second["train_steps"], 34)
    # What commit 61d1935 itself gives when it resumes this directory (run once by hand).
    self.assertAllClose(second["dev"]["accuracy"], 0.37037037037037035)
    self.assertAllClose(second["final_train_loss"], 1.3361786127090454, rtol=1e-6)


if __name__ == "__main__":
  tf.test.main()
