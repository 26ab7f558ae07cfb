"""run_glue's command line: a bad task or export fails with one clear line."""
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
    ]:
      result = subprocess.run(["run_glue", f"--model_dir={tmp}/out", *args], capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
      self.assertEqual(result.returncode, 1, result.stderr[-2000:])
      errors = [l for l in result.stderr.splitlines() if l.startswith("run_glue: error:")]
      self.assertLen(errors, 1, result.stderr[-2000:])
      self.assertIn(message, errors[0])


if __name__ == "__main__":
  tf.test.main()
