"""The shared-fixture copy (`testutil.session_copy`): built once per key, each caller's copy its
own, with the built path in JSON files rewritten to the caller's."""
import json
import os
import tempfile

import tensorflow as tf

from tests import testutil


def build(path, calls):
  calls.append(path)
  os.makedirs(os.path.join(path, "inner"), exist_ok=True)
  testutil.write_text(path + ".txt", "corpus")
  testutil.write_text(os.path.join(path, "inner", "info.json"),
                      json.dumps({"input_files": [path + ".txt"], "n": len(calls)}))


class SessionCopyTest(tf.test.TestCase):

  def test_built_once_and_copied_with_its_paths(self):
    calls, root = [], tempfile.mkdtemp()
    key = ("session_copy_test", root)  # a key of this test alone
    first, second = os.path.join(root, "a"), os.path.join(root, "b")
    testutil.session_copy(key, lambda path: build(path, calls), first)
    testutil.session_copy(key, lambda path: build(path, calls), second)
    self.assertLen(calls, 1)
    for destination in (first, second):
      with open(os.path.join(destination, "inner", "info.json"), encoding="utf-8") as f:
        self.assertEqual(json.load(f), {"input_files": [destination + ".txt"], "n": 1})
      with open(destination + ".txt", encoding="utf-8") as f:
        self.assertEqual(f.read(), "corpus")
    testutil.write_text(os.path.join(first, "inner", "changed"), "x")  # copies are separate
    self.assertNotIn("changed", os.listdir(os.path.join(second, "inner")))
    # A destination that exists (a caller's mkdtemp) is merged into; another key builds anew.
    existing = tempfile.mkdtemp()
    testutil.session_copy(key + ("other",), lambda path: build(path, calls), existing)
    self.assertLen(calls, 2)
    self.assertTrue(os.path.isdir(os.path.join(existing, "inner")))


if __name__ == "__main__":
  tf.test.main()
