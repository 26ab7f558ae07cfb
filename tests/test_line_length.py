"""The house's 100 columns: every line of the package's code and docstrings fits (a trailing
`# pylint: disable=...` and a line holding a URL may run over, as the Google style allows)."""
import glob
import os

import tensorflow as tf

from tests import testutil

LIMIT = 100
HOUSE = ("official_rtd", "data_prep")


def long_lines(paths):
  """`path:line: N columns` of each line over LIMIT."""
  out = []
  for path in paths:
    with open(path, encoding="utf-8") as f:
      for number, line in enumerate(f, 1):
        line = line.rstrip("\n")
        if len(line) > LIMIT and "pylint: disable" not in line and "://" not in line:
          out.append(f"{os.path.relpath(path, testutil.REPO)}:{number}: {len(line)} columns")
  return out


class LineLengthTest(tf.test.TestCase):

  def test_the_package_fits_in_100_columns(self):
    paths = [p for folder in HOUSE
             for p in glob.glob(os.path.join(testutil.REPO, folder, "**", "*.py"), recursive=True)]
    self.assertGreater(len(paths), 100)
    self.assertEqual(long_lines(paths), [])

  def test_a_long_line_is_found_and_the_exemptions_are_not(self):
    path = os.path.join(self.create_tempdir().full_path, "m.py")
    with open(path, "w", encoding="utf-8") as f:
      f.write("x = 1\n" + "y = '" + "a" * 100 + "'\n" + "z = 2  # pylint: disable=" + "b" * 90
              + "\n# https://example.org/" + "c" * 90 + "\n")
    self.assertEqual([line.split(": ", 1)[1] for line in long_lines([path])], ["106 columns"])


if __name__ == "__main__":
  tf.test.main()
