"""The test suite's own plumbing: what pytest collects, and how missing data is reported."""
import os
import subprocess
import sys
from unittest import mock

import tensorflow as tf

from tests import testutil


class CollectionTest(tf.test.TestCase):

  def test_inherited_test_session_is_not_collected(self):
    """tf.test.TestCase's `test_session` (a deprecated context manager) used to be collected and
    skip itself: 73 false "skipped" per run."""
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "tests/ops/test_sampling.py"], cwd=testutil.REPO,
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    self.assertEqual(result.returncode, 0, result.stdout[-2000:])
    self.assertIn("test_sample_matches_softmax", result.stdout)
    self.assertNotIn("test_session", result.stdout)


class MissingDataTest(tf.test.TestCase):

  def test_skip_locally_fail_under_ci(self):
    missing = os.path.join(self.get_temp_dir(), "no_such_data")
    with mock.patch.dict(os.environ, {"CI": ""}):
      self.assertIn("no_such_data is not available", testutil.missing_data_reason(missing))
    with mock.patch.dict(os.environ, {"CI": "true"}):
      with self.assertRaisesRegex(AssertionError, "CI always has ../shared"):
        testutil.missing_data_reason(missing)
    self.assertIsNone(testutil.missing_data_reason(self.get_temp_dir()))


if __name__ == "__main__":
  tf.test.main()
