"""The test suite's own plumbing: what pytest collects, and how missing data is reported."""
import os
import sys
import tempfile
from unittest import mock

import tensorflow as tf

from tests import conftest
from tests import testutil
from tests import tool_server


class CollectionTest(tf.test.TestCase):

  def test_inherited_test_session_is_not_collected(self):
    """tf.test.TestCase's `test_session` (a deprecated context manager) used to be collected and
    skip itself: 73 false "skipped" per run."""
    result = tool_server.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                              "tests/ops/test_sampling.py"], cwd=testutil.REPO, timeout=300)
    self.assertEqual(result.returncode, 0, result.stdout[-2000:])
    self.assertIn("test_sample_matches_softmax", result.stdout)
    self.assertNotIn("test_session", result.stdout)


  def test_the_longest_classes_are_collected_first(self):
    result = tool_server.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0",
                              "tests/training/test_evaluation.py", "tests/test_readme_commands.py"],
                             cwd=testutil.REPO, timeout=300)
    self.assertEqual(result.returncode, 0, result.stdout[-2000:])
    classes = []
    for line in result.stdout.splitlines():
      scope = "::".join(line.split("::")[:2])
      if "::" in line and scope not in classes:
        classes.append(scope)
    self.assertEqual(classes[:2], ["tests/test_readme_commands.py::ReadmePretrainingTest",
                                   "tests/training/test_evaluation.py::EvaluatorTest"])
    self.assertIn("tests/test_readme_commands.py::PretrainingValueFlagsTest", classes[2:])
    for scope in conftest.LONGEST_FIRST:  # a renamed class would silently lose its place
      path, name = scope.split("::")
      with open(os.path.join(testutil.REPO, path), encoding="utf-8") as f:
        self.assertIn(f"\nclass {name}(", f.read(), scope)


class TemporaryFolderTest(tf.test.TestCase):

  def test_a_run_writes_its_temporary_files_in_a_folder_it_removes(self):
    here = tempfile.gettempdir()
    self.assertEqual(os.environ["TMPDIR"], here)
    self.assertStartsWith(os.path.basename(here), "official_rtd_tests_")
    print("RUN_TMPDIR", here, os.path.isdir(here))
    if os.environ.get("NESTED_RUN"):  # the run below
      return
    outer = self.create_tempdir().full_path
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    result = tool_server.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-n", "0", "-p", "no:cacheprovider",
         f"{os.path.relpath(__file__, testutil.REPO)}::TemporaryFolderTest"],
        cwd=testutil.REPO, env=dict(env, TMPDIR=outer, NESTED_RUN="1"), timeout=300)
    self.assertEqual(result.returncode, 0, result.stdout[-2000:])
    line = next(l for l in result.stdout.splitlines() if l.startswith("RUN_TMPDIR"))
    nested, existed = line.split()[1:]
    self.assertEqual((os.path.dirname(nested), existed), (outer, "True"))
    self.assertEqual(os.listdir(outer), [])  # removed at the run's end


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
