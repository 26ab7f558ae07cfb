"""Every Python file's imports stay in the order `isort` gives them under the repository's
`.isort.cfg` (Google's style, as Model Garden): a file that drifts fails here, naming it."""
import os
import subprocess
import sys

import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ImportsSortedTest(tf.test.TestCase):

  def test_isort_finds_nothing_to_change(self):
    result = subprocess.run([sys.executable, "-m", "isort", "--check-only", "--quiet", "."],
                            cwd=REPO, capture_output=True, text=True, check=False)
    self.assertEqual(result.returncode, 0,
                     "imports out of order (run `isort .` at the repository's root):\n"
                     + result.stderr + result.stdout)


if __name__ == "__main__":
  tf.test.main()
