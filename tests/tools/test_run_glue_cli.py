"""run_glue's (and run_parsing's) command line: a bad task, export or out-of-range number fails with one clear line."""
import re
import tempfile

import tensorflow as tf

from official_rtd.finetune import configs
from tests import tool_server


class RunGlueCliTest(tf.test.TestCase):

  def test_errors(self):
    tmp = tempfile.mkdtemp()
    for args, message in [
        (["--task=squad", f"--init_checkpoint={tmp}"],
         "--task=squad is not a run_glue task (its tasks: bam, cola, mnli, mrpc, qnli, qqp, rte, "
         "sst-2, sts-b, wnli); squad is fine-tuned by run_squad"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--data_dir=/nonexistent",
          "--num_train_epochs=-1"], "--num_train_epochs=-1.0 must be > 0"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--data_dir=/nonexistent"],
         f"{tmp} is not an encoder export"),
    ]:
      result = tool_server.run(["run_glue", f"--model_dir={tmp}/out", *args], timeout=300)
      self.assertEqual(result.returncode, 1, result.stderr[-2000:])
      errors = [l for l in result.stderr.splitlines() if l.startswith("run_glue: error:")]
      self.assertLen(errors, 1, result.stderr[-2000:])
      self.assertIn(message, errors[0])
    # A task of another tool, through run_parsing (its config has no GLUE or tagging fields).
    for task, owner in (("pos", "run_tagging"), ("rte", "run_glue")):
      result = tool_server.run(["run_parsing", f"--task={task}", f"--init_checkpoint={tmp}",
                                f"--model_dir={tmp}/out", "--data_dir=/nonexistent"], timeout=300)
      self.assertEqual(result.returncode, 1, result.stderr[-2000:])
      self.assertEqual(result.stderr.strip().splitlines()[-1],
                       f"run_parsing: error: --task={task} is not a run_parsing task (its tasks: "
                       f"ud, ud_ewt); {task} is fine-tuned by {owner}")
    # The other range checks are the config's (the flags' values as parsed), in this process.
    for field, value, message in [
        ("num_train_epochs", 0.0, "--num_train_epochs=0.0 must be > 0"),
        ("train_batch_size", 0, "--train_batch_size=0 must be >= 1"),
        ("learning_rate", -1e-4, "--learning_rate=-0.0001 must be > 0"),
        ("warmup_proportion", 2.0, "--warmup_proportion=2.0 must be in [0, 1]"),
        ("layerwise_lr_decay", 1.5, "--layerwise_lr_decay=1.5 must be in (0, 1]"),
        ("max_train_examples", -5, "--max_train_examples=-5 must be >= 0"),
    ]:
      with self.assertRaisesRegex(ValueError, re.escape(message)):
        configs.GlueConfig(task="rte", init_checkpoint=tmp, model_dir=f"{tmp}/out",
                           **{field: value})

if __name__ == "__main__":
  tf.test.main()
