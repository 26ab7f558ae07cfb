"""CVT inputs: GloVe-format embeddings (a file written here), vocabularies, batches and the
unlabeled sentence stream over the shipped corpus sample."""
import itertools
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.cvt import data
from tests import testutil

SAMPLE = os.path.join(testutil.REPO, "data", "corpus_sample", "*.txt")


class GloveTest(tf.test.TestCase):

  def test_reads_vectors_and_rejects_bad_lines(self):
    path = testutil.write_text(os.path.join(tempfile.mkdtemp(), "glove.txt"),
                               "the 0.1 0.2 0.3\n, -1 0 1\nbank 1e-2 2 3\n")
    words, vectors = data.load_glove(path)
    self.assertEqual(words, ["the", ",", "bank"])
    self.assertAllClose(vectors, [[0.1, 0.2, 0.3], [-1, 0, 1], [0.01, 2, 3]])
    self.assertEqual(data.load_glove(path, {"bank": 0})[0], ["bank"])
    bad = testutil.write_text(path + ".bad", "the 0.1 0.2 0.3\nof 0.1 0.2\n")
    with self.assertRaisesRegex(ValueError, r"glove\.txt\.bad:2: 2 values where line 1 has 3"):
      data.load_glove(bad)
    nan = testutil.write_text(path + ".nan", "the 0.1 x 0.3\n")
    with self.assertRaisesRegex(ValueError, r"\.nan:1: a value of 'the' is not a number"):
      data.load_glove(nan)
    vocab = data.WordCharVocab.build([["The", "Bank", "1999"]], extra_words=["the"])
    matrix = data.embedding_matrix(vocab, 3, dict(zip(words, vectors)), seed=0)
    self.assertAllClose(matrix[vocab.words["bank"]], [0.01, 2, 3])  # lowercased lookup
    self.assertIn("0000", vocab.words)  # digits normalised
    self.assertAllEqual(matrix[0], [0, 0, 0])  # padding


  def test_unlabeled_words_count_after_normalising(self):
    unlabeled = [["The", "owl", "saw", "1999"], ["the", "Owl", "flew", "2000"], ["Zoë"]]
    counts = data.word_counts(unlabeled)
    self.assertEqual(counts["owl"] + counts["Owl"], 2)
    vocab = data.WordCharVocab.build([["A", "cat"]], unlabeled_counts=counts, min_count=2)
    # "the"/"The", "owl"/"Owl" and "1999"/"2000" (both "0000") reach 2; "saw", "flew", "zoë" not.
    self.assertEqual(set(vocab.words) - {data.PAD, data.UNK, data.REMOVED},
                     {"a", "cat", "the", "owl", "0000"})
    self.assertIn("e", vocab.chars)  # 3 times: kept
    self.assertNotIn("ë", vocab.chars)  # once
    # 9 tokens, of which The, the, owl, Owl, 1999, 2000 have a word id: 6 / 9 by hand.
    self.assertAllClose(vocab.coverage(counts), 6 / 9)
    self.assertTrue(np.isnan(vocab.coverage({})))


class BatchesTest(tf.test.TestCase):

  def test_make_batch(self):
    vocab = data.WordCharVocab.build([["The", "cat"], ["A", "dog", "ran"]])
    batch = data.make_batch([["The", "cat"], ["A", "wolf", "ran"]], vocab, [[1, 2], [0, 1, 2]])
    self.assertAllEqual(batch.lengths, [2, 3])
    self.assertEqual(batch.words[1, 1], vocab.words[data.UNK])  # unknown word
    self.assertEqual(batch.words[0, 2], 0)  # padding
    self.assertEqual(batch.chars[1, 1, 0], vocab.chars["w"] if "w" in vocab.chars else 1)
    self.assertAllEqual(batch.chars[0, 0, :4], [vocab.chars[c] for c in "The"] + [0])
    self.assertAllEqual(batch.tags, [[1, 2, 0], [0, 1, 2]])

  def test_sentences_and_stream(self):
    text = ("Mr. Smith went to Washington. He arrived at 10 a.m. on Monday! Did it rain? "
            "\"Yes,\" she said.")
    sentences = data.split_sentences(text, max_words=100)
    self.assertEqual(sentences[0], ["Mr.", "Smith", "went", "to", "Washington", "."])
    self.assertEqual(sentences[-1], ["\"", "Yes", ",", "\"", "she", "said", "."])
    self.assertEqual(data.split_sentences(text, max_words=5)[0], ["Did", "it", "rain", "?"])
    stream = data.unlabeled_sentences([SAMPLE], 40, seed=0, buffer_size=100)
    first = list(itertools.islice(stream, 500))
    self.assertTrue(all(2 <= len(s) <= 40 for s in first))
    again = list(itertools.islice(data.unlabeled_sentences([SAMPLE], 40, 0, 100), 500))
    self.assertEqual(first, again)  # seeded
    other = list(itertools.islice(data.unlabeled_sentences([SAMPLE], 40, 1, 100), 500))
    self.assertNotEqual(first, other)
    self.assertGreater(len({tuple(s) for s in first}), 450)
    with self.assertRaisesRegex(ValueError, "matches no file"):
      next(data.unlabeled_sentences(["/nonexistent/*.txt"], 40, 0))
    # One pass: every sentence of the file once, then the stream ends.
    once = list(data.unlabeled_sentences([SAMPLE], 40, 0, 100, passes=1))
    twice = list(data.unlabeled_sentences([SAMPLE], 40, 0, 100, passes=2))
    self.assertLen(twice, 2 * len(once))
    self.assertCountEqual(map(tuple, twice[:len(once)]), map(tuple, once))
    self.assertEqual(sorted(data.shuffled_passes("abc", 0, passes=2)), list("aabbcc"))
    # Alternating: one of each in turn; a stream that ends leaves the others going.
    self.assertEqual(list(data.alternate([iter("ab"), iter("wxyz")])), list("awbxyz"))

  def test_undecodable_unlabeled_line_fails_or_is_skipped(self):
    path = testutil.write_text(os.path.join(self.get_temp_dir(), "bad.txt"),
                               b"Good words come first here.\n\nA bad \xff line.\n", "wb")
    with self.assertRaisesRegex(ValueError, r"bad\.txt:3: invalid UTF-8 .*--on_decode_error=skip"):
      next(data.unlabeled_sentences([path], 40, 0))
    warnings = []
    stream = data.unlabeled_sentences([path], 40, 0, on_decode_error="skip", warn=warnings.append)
    self.assertEqual(next(stream), ["Good", "words", "come", "first", "here", "."])
    self.assertTrue(any("bad.txt:3: skipping" in w for w in warnings), warnings)

  def test_a_corpus_smaller_than_a_batch_is_refused(self):
    """Issue 87: `run_cvt --max_sentence_length=2` left one unlabeled sentence and trained on it
    again and again; fewer sentences than `min_sentences` (run_cvt: one batch) are refused."""
    path = testutil.write_text(os.path.join(self.get_temp_dir(), "short.txt"),
                               "Go home.\nThe cat sat on the mat today.\nWe saw it.\n")
    with self.assertRaisesRegex(ValueError, r"short\.txt'\]: 1 sentence\(s\) of 2\.\.3 words, "
                                r"fewer than 8 \(one unlabeled batch\): give more text or a "
                                r"larger --max_sentence_length"):
      list(itertools.islice(data.unlabeled_sentences([path], 3, 0, min_sentences=8), 20))
    self.assertLen(list(data.unlabeled_sentences([path], 40, 0, passes=1, min_sentences=3)), 3)


if __name__ == "__main__":
  tf.test.main()


class LengthBatchesTest(tf.test.TestCase):

  def test_every_index_once_in_batches_of_similar_length(self):
    lengths = {0: 5, 2: 1, 3: 9, 5: 2, 6: 5, 8: 7, 9: 3}
    seen = []
    data.run_in_length_batches(list(lengths), lengths.get, 3, seen.append, print, "x")
    self.assertEqual(seen, [[2, 5, 9], [0, 6, 8], [3]])  # by hand: sorted by length, stable
