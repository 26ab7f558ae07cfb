"""Tagging data: column-file readers on the real shipped sets and bad input, word-piece
alignment and windowing."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import tag_schemes
from official_rtd.data import tagging_data
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from tests import testutil

TAGGING = os.path.join(testutil.SHARED_DATA, "tagging")


def tokenizer():
  return tokenizer_lib.WordPieceTokenizer(vocab_lib.load_vocab(testutil.SAMPLE_VOCAB))


class ReadConllTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp()

  def write(self, name, text):
    return testutil.write_text(os.path.join(self.tmp, name), text)

  def test_tabs_spaces_docstart_and_label_column(self):
    path = self.write("a.txt", "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects\tVBZ I-VP O\n\n\n"
                      "Peter NNP I-NP I-PER\n-DOCSTART- -X- O O\nBlackburn NNP I-NP I-LOC")
    sentences = tagging_data.read_conll(path)
    self.assertEqual([s.words for s in sentences], [("EU", "rejects"), ("Peter",),
                                                   ("Blackburn",)])
    self.assertEqual(sentences[0].tags, ("I-ORG", "O"))
    self.assertEqual(tagging_data.read_conll(path, label_column=2)[0].tags, ("I-NP", "I-VP"))
    self.assertEqual(tagging_data.read_conll(path, label_column=1)[2].tags, ("NNP",))

  def test_bad_lines_name_file_and_line(self):
    path = self.write("bad.txt", "EU NNP I-ORG\nrejects VBZ O\n\nGerman JJ\n")
    with self.assertRaisesRegex(ValueError, r"bad\.txt:4: 2 columns where line 1 has 3"):
      tagging_data.read_conll(path)
    with self.assertRaisesRegex(ValueError, r"one\.txt:2: one column"):
      tagging_data.read_conll(self.write("one.txt", "\nEU\n"))
    with self.assertRaisesRegex(ValueError, r"label_column=5 but lines have 3"):
      tagging_data.read_conll(path, label_column=5)
    with self.assertRaisesRegex(ValueError, "no sentences"):
      tagging_data.read_conll(self.write("empty.txt", "\n-DOCSTART- -X- O O\n"))
    with self.assertRaisesRegex(ValueError, "--task must be one of"):
      tagging_data.get_task("srl")

  def test_span_tasks_refuse_tags_that_are_not_span_tags(self):
    pos = self.write("pos.txt", "EU NNP\nrejects VBZ\n\nGerman JJ\n")
    self.assertEqual(tagging_data.read_conll(pos)[0].tags, ("NNP", "VBZ"))  # fine for POS
    with self.assertRaisesRegex(ValueError, r"pos\.txt:1: tag 'NNP' is not a span tag .*"
                                r"is this a part-of-speech file"):
      tagging_data.read_conll(pos, span_tags=True)
    ner = self.write("ner.txt", "EU I-ORG\nrejects O\n\nGerman S-MISC\nto B-\n")
    with self.assertRaisesRegex(ValueError, r"ner\.txt:5: tag 'B-' is not a span tag"):
      tagging_data.read_conll(ner, span_tags=True)

  def test_unseen_dev_tags(self):
    s = tagging_data.Sentence
    train = [s(("a", "b"), ("NN", "VB")), s(("c",), ("DT",))]
    dev = [s(("a", "b", "c"), ("NN", "SYM", "SYM")), s(("x",), ("LS",))]
    self.assertEqual(tagging_data.unseen_dev_tags(train, dev, spans=False), {"LS": 1, "SYM": 2})
    self.assertEqual(tagging_data.unseen_dev_tags(train, train, spans=False), {})
    train = [s(("EU", "x"), ("B-ORG", "O"))]
    dev = [s(("EU", "Bonn", "y"), ("S-ORG", "I-LOC", "O"))]  # a span type, not a tag, is new
    self.assertEqual(tagging_data.unseen_dev_tags(train, dev, spans=True), {"LOC": 1})



@testutil.requires(TAGGING)
class ShippedSetsTest(tf.test.TestCase):

  def test_shipped_sets(self):
    pos_train, pos_dev = tagging_data.load_task(tagging_data.TASKS["pos"],
                                                os.path.join(TAGGING, "pos_ptb"))
    self.assertEqual((len(pos_train), sum(len(s.words) for s in pos_train)), (3396, 81793))
    self.assertEqual((len(pos_dev), sum(len(s.words) for s in pos_dev)), (273, 6327))
    self.assertLen({t for s in pos_train + pos_dev for t in s.tags}, 45)
    ner_train, ner_dev = tagging_data.load_task(tagging_data.TASKS["ner"],
                                                os.path.join(TAGGING, "ner_conll2003"))
    self.assertEqual((len(ner_train), sum(len(s.words) for s in ner_train)), (14041, 203621))
    self.assertEqual((len(ner_dev), sum(len(s.words) for s in ner_dev)), (3250, 51362))
    self.assertEqual(sum(len(tag_schemes.spans_of(s.tags)) for s in ner_train), 23499)
    self.assertEqual(sum(len(tag_schemes.spans_of(s.tags)) for s in ner_dev), 5942)
    chunk_train, chunk_dev = tagging_data.load_task(tagging_data.TASKS["chunk"],
                                                    os.path.join(TAGGING, "chunk_conll2000"))
    self.assertEqual((len(chunk_train), len(chunk_dev)), (7936, 1000))  # the last 1000 are dev
    self.assertEqual(chunk_dev[0].words[:3], ("The", "biggest", "wild"))


class EncodeTest(tf.test.TestCase):

  def test_labels_on_first_pieces(self):
    tok = tokenizer()
    sentence = tagging_data.Sentence(("The", "unbelievably", "cat"), ("DT", "RB", "NN"))
    pieces = tok.tokenize_to_lists(list(sentence.words))
    self.assertGreater(len(pieces[1]), 1)  # a word of several pieces
    windows = tagging_data.encode([sentence], tok, 32, {"DT": 0, "NN": 1, "RB": 2})
    ids = windows.inputs["input_word_ids"][0]
    expected = [tok.vocab.cls_id, *pieces[0], *pieces[1], *pieces[2], tok.vocab.sep_id]
    self.assertAllEqual(ids[:len(expected)], expected)
    self.assertAllEqual(ids[len(expected):], [tok.vocab.pad_id] * (32 - len(expected)))
    first = [1, 1 + len(pieces[0]), 1 + len(pieces[0]) + len(pieces[1])]
    self.assertAllEqual(windows.inputs["word_positions"][0, :3], first)
    self.assertAllEqual(windows.word_labels[0, :3], [0, 2, 1])
    self.assertEqual(windows.inputs["word_lengths"][0], 3)
    # Unknown tags (a dev tag never seen in training) get -1.
    self.assertEqual(tagging_data.encode([sentence], tok, 32, {"DT": 0}).word_labels[0, 1], -1)

  def test_300_word_sentence_is_windowed_without_losing_a_word(self):
    tok = tokenizer()
    words = tuple(testutil.sample_paragraphs(40)[0].split() * 10)[:300]
    self.assertLen(words, 300)
    sentence = tagging_data.Sentence(words, tuple(f"T{i}" for i in range(300)))
    label_ids = {f"T{i}": i for i in range(300)}
    windows = tagging_data.encode([sentence], tok, 64, label_ids)
    self.assertGreater(len(windows), 5)
    # Every word is labelled exactly once, at its first piece, and each window's piece count fits.
    owned = []
    pieces = tok.tokenize_to_lists(list(words))
    for row in range(len(windows)):
      n = windows.inputs["word_lengths"][row]
      labels = windows.word_labels[row, :n]
      owned.extend(labels.tolist())
      positions = windows.inputs["word_positions"][row, :n]
      ids = windows.inputs["input_word_ids"][row]
      for word, position in zip(labels, positions):
        self.assertEqual(ids[position], pieces[word][0])
      self.assertLessEqual(windows.inputs["input_mask"][row].sum(), 64)
    self.assertEqual(owned, list(range(300)))
    # Each word sits in the window where it has the most context (min of left/right pieces).
    counts = [len(p) for p in pieces]
    offsets = np.concatenate([[0], np.cumsum(counts)])
    ranges = tagging_data.word_windows(counts, 62, 31)
    for row in range(len(windows)):
      for word in windows.word_labels[row, :windows.inputs["word_lengths"][row]]:
        context = {i: min(offsets[word] - offsets[s], offsets[e] - offsets[word + 1])
                   for i, (s, e) in enumerate(ranges) if s <= word < e}
        self.assertEqual(context[tagging_data.owners(counts, ranges)[word]],
                         max(context.values()))
    # Predictions reassemble into the sentence, each word once.
    per_window = [windows.word_labels[r, :windows.inputs["word_lengths"][r]]
                  for r in range(len(windows))]
    self.assertEqual(tagging_data.words_by_sentence(windows, per_window, [sentence])[0],
                     list(range(300)))

  def test_windows_cover_every_word_once(self):
    rng = np.random.default_rng(0)
    for _ in range(500):
      counts = rng.integers(1, 9, size=rng.integers(1, 60))
      max_pieces = int(rng.integers(8, 30))
      ranges = tagging_data.word_windows(counts, max_pieces, int(rng.integers(1, max_pieces)))
      owner = tagging_data.owners(counts, ranges)
      self.assertTrue(np.all(owner >= 0))
      self.assertTrue(np.all(np.diff(owner) >= 0))  # owned words are consecutive per window
      for start, end in ranges:
        self.assertLessEqual(sum(counts[start:end]), max_pieces)


if __name__ == "__main__":
  tf.test.main()
