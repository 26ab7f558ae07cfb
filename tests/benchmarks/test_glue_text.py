"""`benchmarks/glue_text.py`: GLUE's sentences as unlabeled text (issue 73's news text for NER),
checked on small GLUE folders written here, and on the shipped sets when they are beside the
repository."""
import os
import subprocess
import sys

import tensorflow as tf

from tests import testutil

SCRIPT = os.path.join(testutil.REPO, "benchmarks", "glue_text.py")
MRPC = ("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t1\t2\tAmrozi accused his brother .\tReferring to him , Amrozi accused .\n"
        "0\t3\t4\tThe \"stock\" fell .\t Amrozi accused his brother . \n")
STS_B = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\t"
         "score\n"
         "0\tmain-captions\tMSRvid\t2012\t1\tnone\tnone\tA plane takes off .\tA plane flies ."
         "\t5.0\n"
         "1\tmain-news\theadlines\t2013\t2\tnone\tnone\tShares rose .\tStocks rose .\t4.0\n")
RTE = ("index\tsentence1\tsentence2\tlabel\n"
       "0\tReuters reported it .\tShares rose .\tentailment\n")


def glue_text(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                        timeout=120, stdin=subprocess.DEVNULL, cwd=testutil.REPO)


class GlueTextTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.glue = self.create_tempdir().full_path
    for folder, text in (("MRPC", MRPC), ("STS-B", STS_B), ("RTE", RTE)):
      os.makedirs(os.path.join(self.glue, folder))
      testutil.write_text(os.path.join(self.glue, folder, "train.tsv"), text)
    self.output = os.path.join(self.create_tempdir().full_path, "news.txt")

  def test_distinct_sentences_in_order_and_sts_b_news_rows_only(self):
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train",
                       f"--output_file={self.output}")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    with open(self.output, encoding="utf-8") as f:
      lines = f.read().splitlines()
    # MRPC (BOM dropped, the repeat and its padding left out), STS-B's news row, RTE ("Shares
    # rose ." again left out); the caption row is not news.
    self.assertEqual(lines, ["Amrozi accused his brother .", "Referring to him , Amrozi accused .",
                             "The \"stock\" fell .", "Shares rose .", "Stocks rose .",
                             "Reuters reported it ."])
    self.assertIn("6 sentences, 26 words", result.stdout)
    args = (f"--glue_dir={self.glue}", "--splits=train", "--tasks=sts-b", "--sts_b_genres=",
            f"--output_file={self.output}")
    result = glue_text(*args)  # an existing output is not replaced without --overwrite
    self.assertEqual(result.returncode, 1)
    self.assertEqual(result.stderr.strip().splitlines()[-1],
                     f"glue_text.py: --output_file={self.output} exists: give --overwrite to "
                     "replace it, or another --output_file")
    result = glue_text(*args, "--overwrite")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    with open(self.output, encoding="utf-8") as f:
      self.assertEqual(f.read().splitlines(), ["A plane takes off .", "A plane flies .",
                                               "Shares rose .", "Stocks rose ."])
    nested = os.path.join(self.create_tempdir().full_path, "new", "folder", "news.txt")
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train", f"--output_file={nested}")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])  # its folder is made
    self.assertTrue(os.path.isfile(nested))

  def test_a_short_row_or_another_task_s_file_names_it_and_keeps_the_output(self):
    testutil.write_text(self.output, "kept\n")
    glue_text = lambda *args: globals()["glue_text"](*args, "--overwrite")  # refused, not kept
    rte = os.path.join(self.glue, "RTE", "train.tsv")
    testutil.write_text(rte, RTE + "1\tonly two columns\n")
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train",
                       f"--output_file={self.output}")
    self.assertEqual(result.returncode, 1)
    self.assertIn(f"glue_text.py: {rte}:3: 2 tab-separated columns, rte needs 3",
                  result.stderr)
    testutil.write_text(rte, STS_B)
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train",
                       f"--output_file={self.output}")
    self.assertEqual(result.returncode, 1)
    self.assertIn(f"{rte}:1: column 1 of the header is 'genre', not rte's 'sentence1'",
                  result.stderr)
    result = glue_text(f"--glue_dir={self.glue}", "--splits=dev",
                       f"--output_file={self.output}")
    self.assertIn(f"GLUE file {os.path.join(self.glue, 'MRPC', 'dev.tsv')} does not exist",
                  result.stderr)
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train", "--tasks=mrpc,mprc",
                       f"--output_file={self.output}")
    self.assertIn("glue_text.py: unknown GLUE task 'mprc'", result.stderr)
    sts_b = os.path.join(self.glue, "STS-B", "train.tsv")
    testutil.write_text(sts_b, STS_B.replace("\tgenre\t", "\tkind\t", 1))
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train", "--tasks=sts-b",
                       f"--output_file={self.output}")
    self.assertIn(f"glue_text.py: {sts_b}:1: no `genre` column to select ['main-news'] by",
                  result.stderr)
    testutil.write_text(sts_b, STS_B)
    result = glue_text(f"--glue_dir={self.glue}", "--splits=train", "--tasks=sts-b",
                       "--sts_b_genres=main-nwes", f"--output_file={self.output}")
    self.assertEqual(result.stderr.strip().splitlines()[-1],
                     f"glue_text.py: {sts_b}: no row of the STS-B genres ['main-nwes'] "
                     "(--sts_b_genres); its genres: main-captions, main-news")
    with open(self.output, encoding="utf-8") as f:
      self.assertEqual(f.read(), "kept\n")

  def test_the_shipped_sets_give_the_runs_news_text(self):
    glue = os.path.join(testutil.REPO, "..", "shared", "data", "glue")
    if not os.path.isdir(os.path.join(glue, "STS-B")):
      self.skipTest("../shared/data/glue is not beside the repository")
    result = glue_text(f"--output_file={self.output}")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    # The file the fine-tuning page's NER-with-news runs read (tenth session of issue 73).
    self.assertIn("18759 sentences, 346247 words", result.stdout)


if __name__ == "__main__":
  tf.test.main()
