"""corpus: independent work units that own whole documents (long ones cut at range boundaries)."""
import collections
import os
import random
import tempfile

import tensorflow as tf

from official_rtd.data import corpus
from tests import testutil


def reference_pieces(data: bytes, cap: int):
  """The ownership rule read sequentially: {range index: [piece (list of lines)]}, documents."""
  lines, position = [], 0
  for raw in data.splitlines(keepends=True):
    lines.append((position, raw))
    position += len(raw)
  documents, current = [], []
  for start, raw in lines:
    if raw.strip():
      current.append((start, raw))
    elif current:
      documents.append(current)
      current = []
  if current:
    documents.append(current)
  pieces = collections.defaultdict(list)
  for document in documents:
    length = document[-1][0] + len(document[-1][1]) - document[0][0]
    if length <= cap:
      pieces[document[0][0] // cap].append([raw.strip().decode() for _, raw in document])
    else:
      groups = {}
      for start, raw in document:
        groups.setdefault(start // cap, []).append(raw.strip().decode())
      for index, group in groups.items():
        pieces[index].append(group)
  return pieces, len(documents)


def split_pieces(chunk):
  pieces, current = [], []
  for line in chunk.lines:
    if line == corpus.DOCUMENT_BREAK:
      pieces.append(current)
      current = []
    else:
      current.append(line)
  assert not current, "a chunk must end with a document break"
  return pieces


class TextRangeTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp(dir=self.get_temp_dir())

  def test_units_read_alone_partition_the_documents(self):
    rng = random.Random(0)
    for trial in range(150):
      lines = []
      for _ in range(rng.randint(0, 40)):
        kind = rng.random()
        lines.append("" if kind < 0.25 else "  " if kind < 0.3 else
                     " ".join(f"w{rng.randint(0, 99)}" for _ in range(rng.randint(1, 8))))
      text = "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")
      path = testutil.write_text(os.path.join(self.tmp, f"t{trial}.txt"), text)
      with open(path, "rb") as f:
        data = f.read()
      for chunk_bytes in (1, 3, 7, 20, 50, 200, 1 << 20):
        want, num_documents = reference_pieces(data, chunk_bytes)
        units = corpus.plan_text_units([path], chunk_bytes)
        self.assertLen(units, -(-len(data) // chunk_bytes))
        documents = 0
        for unit in reversed(units):  # any order: each unit is read by itself
          chunk = unit.read()
          index = int(unit.key.split(":")[1])
          self.assertEqual(split_pieces(chunk), want.get(index, []), (text, chunk_bytes, index))
          documents += chunk.documents
        self.assertEqual(documents, num_documents)

  def test_short_documents_are_never_split(self):
    documents = [testutil.sample_paragraphs(n, start=10 * n) for n in (3, 5, 2, 8, 4)]
    path = testutil.write_text(os.path.join(self.tmp, "c.txt"),
                               "\n\n".join("\n".join(d) for d in documents) + "\n")
    longest = max(len("\n".join(d).encode()) + 3 for d in documents)
    got = [piece for chunk in corpus.read_chunks([path], longest) for piece in split_pieces(chunk)]
    self.assertEqual(got, documents)

  def test_decode_errors_name_the_line_in_any_range(self):
    path = testutil.write_text(os.path.join(self.tmp, "bad.txt"),
                               b"one\ntwo\n\nthree\nfour\ncaf\xe9\n\nfive\n", "wb")
    with self.assertRaisesRegex(corpus.CorpusError, r"bad.txt:6: invalid UTF-8 at byte 3"):
      list(corpus.read_chunks([path], 4))
    warnings = []
    # 10-byte units: "one two" (8 bytes) stays whole, the 16-byte second document is cut at the
    # units' boundaries (bytes 10 and 20); the undecodable line is reported by its owner only.
    chunks = list(corpus.read_chunks([path], 10, "skip", warn=warnings.append))
    self.assertEqual([p for c in chunks for p in split_pieces(c)],
                     [["one", "two"], ["three"], ["four"], ["five"]])
    self.assertEqual([c.documents for c in chunks], [2, 0, 1, 0])
    self.assertEqual(sum(c.lines_skipped for c in chunks), 1)
    self.assertEqual(warnings, [f"{path}:6: skipping a line that is not valid UTF-8"])


if __name__ == "__main__":
  tf.test.main()
