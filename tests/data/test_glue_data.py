"""GLUE TSV readers on the real files in ../shared/data/glue, and their errors."""
import collections
import os
import tempfile
import time

import tensorflow as tf

from official_rtd.data import glue_data
from tests import testutil

GLUE = os.path.join(testutil.REPO, "..", "shared", "data", "glue")


@testutil.requires(GLUE)
class GlueTsvTest(tf.test.TestCase):

  def _read(self, task, split, folder):
    return glue_data.load_split(os.path.join(GLUE, folder), glue_data.get_task(task), split)[0][1]

  def test_row_counts_and_labels_of_the_real_files(self):
    # name, folder, train rows, dev rows, train label counts (from ../shared/data/README.md)
    expected = [("cola", "CoLA", 8551, 1043, {1: 6023, 0: 2528}),
                ("sst-2", "SST-2", 67349, 872, {1: 37569, 0: 29780}),
                ("mrpc", "MRPC", 3668, 408, {1: 2474, 0: 1194}),
                ("rte", "RTE", 2490, 277, {0: 1249, 1: 1241})]
    for task, folder, n_train, n_dev, counts in expected:
      train, dev = self._read(task, "train", folder), self._read(task, "dev", folder)
      self.assertLen(train, n_train, task)
      self.assertLen(dev, n_dev, task)
      self.assertEqual(dict(collections.Counter(e.label for e in train)), counts, task)
    stsb = self._read("sts-b", "train", "STS-B")
    self.assertLen(stsb, 5749)
    self.assertAllClose(sum(e.label for e in stsb) / len(stsb), 2.70, atol=0.01)
    self.assertLen(self._read("sts-b", "dev", "STS-B"), 1500)

  def test_quotes_bom_and_pairs(self):
    mrpc = self._read("mrpc", "train", "MRPC")
    self.assertTrue(mrpc[0].text_a.startswith("Amrozi accused his brother"))
    self.assertTrue(mrpc[0].text_b)
    self.assertTrue(any('"' in e.text_a for e in mrpc))  # quotes kept verbatim, not CSV-parsed
    cola = self._read("cola", "dev", "CoLA")
    self.assertIsNone(cola[0].text_b)
    self.assertEqual(cola[-1].label in (0, 1), True)  # the file does not end in a newline

  def test_malformed_rows_fail_with_file_and_line(self):
    tmp = tempfile.mkdtemp()
    path = testutil.write_text(os.path.join(tmp, "train.tsv"),
                               "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly\n")
    with self.assertRaisesRegex(glue_data.GlueDataError, r"train.tsv:3: expected at least 4"):
      glue_data.read_tsv(path, glue_data.get_task("rte"), "train")
    testutil.write_text(path, "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tmaybe\n")
    with self.assertRaisesRegex(glue_data.GlueDataError, r"train.tsv:2: label 'maybe' is not one"):
      glue_data.read_tsv(path, glue_data.get_task("rte"), "train")
    with self.assertRaisesRegex(glue_data.GlueDataError, r"dev.tsv does not exist"):
      glue_data.load_split(tmp, glue_data.get_task("rte"), "dev")
    with self.assertRaisesRegex(glue_data.GlueDataError, "unknown GLUE task 'squad'"):
      glue_data.get_task("squad")

  def test_another_tasks_files_are_refused_by_their_header(self):
    glue = os.path.join(testutil.REPO, "..", "shared", "data", "glue")
    for task, folder, message in [
        ("sst-2", "CoLA", r"CoLA/train.tsv:1: column 0 of the header is 'gj04', not sst-2's "
                          r"'sentence'"),
        ("qnli", "RTE", r"RTE/train.tsv:1: column 1 of the header is 'sentence1', not qnli's "
                        r"'question'"),
        ("mrpc", "STS-B", r"STS-B/train.tsv:1: column 3 of the header is 'year', not mrpc's "
                          r"'#1 String'"),
    ]:
      with self.assertRaisesRegex(glue_data.GlueDataError, message):
        glue_data.read_tsv(os.path.join(glue, folder, "train.tsv"), glue_data.get_task(task),
                           "train")

  def test_tfds_without_a_prepared_cache_fails_fast(self):
    start = time.time()
    with self.assertRaisesRegex(glue_data.GlueDataError, r"glue/rte .*(not prepared|cannot read)"):
      glue_data.load_tfds_split(tempfile.mkdtemp(), glue_data.get_task("rte"), "train")
    self.assertLess(time.time() - start, 60)


if __name__ == "__main__":
  tf.test.main()
