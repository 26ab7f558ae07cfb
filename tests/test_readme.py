"""The README's set-up commands are exactly what CI runs."""
import os
import re

import tensorflow as tf

from tests import testutil


class ReadmeTest(tf.test.TestCase):

  def test_ci_runs_the_readme_commands(self):
    with open(os.path.join(testutil.REPO, "README.md"), encoding="utf-8") as f:
      readme = f.read()
    setup = re.search(r"## Set up\s+```bash\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    self.assertLen(setup, 2)
    with open(os.path.join(testutil.REPO, ".ci", "run"), encoding="utf-8") as f:
      ci = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    self.assertEqual(ci[-2:], setup)


if __name__ == "__main__":
  tf.test.main()
