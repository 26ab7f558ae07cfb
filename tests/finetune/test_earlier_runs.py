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


def fixture_config(config_class, root, **kwargs):
  """The settings both fixtures were written with, in `root`."""
  return config_class(
      data_dir=os.path.join(root, "data"), init_checkpoint=os.path.join(root, "export"),
      model_dir=os.path.join(root, "run"), max_seq_length=16, train_batch_size=8, num_trials=2,
      num_train_epochs=2, save_checkpoints_steps=4, log_every_steps=1, **kwargs)


class EarlierFinetuneRunTest(tf.test.TestCase):

  def resume(self, fixture, root, config):
    """Resumes a copy of `fixture` at `root` (where it was made) with `config`; checks that the
    finished trial is reused and the second resumes at step 4; returns the second's result."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(fixture, root)
    if not os.path.isdir(os.path.join(root, "export")):
      shutil.copytree(os.path.join(FIXTURE, "export"), os.path.join(root, "export"))
    self.addCleanup(shutil.rmtree, root, ignore_errors=True)
    first = textio.load_json(os.path.join(root, "run", "trial_0", "results.json"))
    logged = []
    summary = runner_lib.Runner(config, log=logged.append).run()
    self.assertTrue(any(line.startswith("trial_0 of 2: already done") for line in logged), logged)
    self.assertTrue(any("resuming at step 4" in line for line in logged), logged)
    self.assertEqual(summary["trials"][0], first)
    return summary["trials"][1]

  def test_a_run_written_before_the_one_contract_resumes(self):
    second = self.resume(FIXTURE, ROOT, fixture_config(configs.GlueConfig, ROOT, task="sst-2"))
    self.assertEqual(second["train_steps"], 8)
    # Commit 1adce74 itself, resuming this directory (run once by hand), ends at this accuracy and
    # a final loss of 0.6795338 (its uninterrupted run: 0.67998); so did today's code until
    # dropout's draw changed (469aeda; b18fcc0 still gives 0.6795338 here). With the new draw,
    # and nothing else changed, 0.6727102.
    self.assertEqual(second["dev"], {"dev": {"accuracy": 0.6875}})
    self.assertAllClose(second["final_train_loss"], 0.6727101802825928, rtol=1e-6)

  def test_a_crf_tagging_run_written_before_the_one_head_contract_resumes(self):
    second = self.resume(TAGGING_FIXTURE, TAGGING_ROOT, fixture_config(
        configs.TaggingConfig, TAGGING_ROOT, task="pos", crf=True))
    self.assertEqual(second["train_steps"], 34)
    # Commit 61d1935 itself, resuming this directory (run once by hand), ends at this accuracy and
    # a final loss of 1.3361786; so did today's code until dropout's draw changed (469aeda: a
    # counter-based hash instead of TensorFlow's Philox; the code before that change, b18fcc0,
    # still gives 1.3361786 here). With the new draw, and nothing else changed, 1.3351638.
    self.assertAllClose(second["dev"]["accuracy"], 0.37037037037037035)
    self.assertAllClose(second["final_train_loss"], 1.3351637959480285, rtol=1e-6)


if __name__ == "__main__":
  tf.test.main()
