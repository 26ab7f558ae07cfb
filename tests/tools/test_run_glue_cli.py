"""run_glue's command line: a bad task, export or out-of-range number fails with one clear line."""
import subprocess
import tempfile

import tensorflow as tf


class RunGlueCliTest(tf.test.TestCase):

  def test_errors(self):
    tmp = tempfile.mkdtemp()
    for args, message in [
        (["--task=squad", f"--init_checkpoint={tmp}"], "unknown GLUE task 'squad'"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--data_dir=/nonexistent"],
         f"{tmp} is not an encoder export"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--num_train_epochs=-1"],
         "--num_train_epochs=-1.0 must be > 0"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--num_train_epochs=0"],
         "--num_train_epochs=0.0 must be > 0"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--train_batch_size=0"],
         "--train_batch_size=0 must be >= 1"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--learning_rate=-1e-4"],
         "--learning_rate=-0.0001 must be > 0"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--warmup_proportion=2"],
         "--warmup_proportion=2.0 must be in [0, 1]"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--layerwise_lr_decay=1.5"],
         "--layerwise_lr_decay=1.5 must be in (0, 1]"),
        (["--task=rte", f"--init_checkpoint={tmp}", "--max_train_examples=-5"],
         "--max_train_examples=-5 must be >= 0"),
    ]:
      result = subprocess.run(["run_glue", f"--model_dir={tmp}/out", *args], capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
      self.assertEqual(result.returncode, 1, result.stderr[-2000:])
      errors = [l for l in result.stderr.splitlines() if l.startswith("run_glue: error:")]
      self.assertLen(errors, 1, result.stderr[-2000:])
      self.assertIn(message, errors[0])


if __name__ == "__main__":
  tf.test.main()
