"""benchmarks/cvt_translate_teacher.py refuses what it cannot run, naming the flag, before any
run directory is written."""
import os
import sys

import tensorflow as tf

from tests import testutil
from tests import tool_server

SCRIPT = os.path.join(testutil.REPO, "benchmarks", "cvt_translate_teacher.py")


class BadInputTest(tf.test.TestCase):

  def test_another_task_or_teacher_is_refused_naming_the_flag(self):
    for flags, message in (
        (["--tasks=chunk"], "--tasks=chunk: cvt_translate_teacher replaces translation's teacher"),
        (["--tasks=translate", "--teacher=oracle"], "--teacher")):
      model_dir = os.path.join(self.create_tempdir().full_path, "run")
      result = tool_server.run(
          [sys.executable, SCRIPT, *flags, f"--data_dir={testutil.REPO}",
           f"--model_dir={model_dir}"],
          timeout=300, cwd=testutil.REPO)
      self.assertNotEqual(result.returncode, 0, flags)
      self.assertIn(message, result.stderr)
      self.assertFalse(os.path.exists(model_dir))


if __name__ == "__main__":
  tf.test.main()
