"""Packing of tokenized lines into [CLS] A [SEP] B [SEP] examples."""
import random

import numpy as np
import tensorflow as tf

from official_rtd.data import packing


def _builder(max_len, mode, **kwargs):
  kwargs.setdefault("short_seq_prob", 0.0)
  return packing.ExampleBuilder(max_len, random.Random(0), mode=mode, **kwargs)


class ExampleBuilderTest(tf.test.TestCase):

  def test_fill_keeps_every_piece_in_order(self):
    builder = _builder(16, "fill")
    lines = [list(range(100 + 10 * i, 100 + 10 * i + n)) for i, n in enumerate([5, 9, 30, 2, 7])]
    examples = []
    for line in lines:
      examples += builder.add_line(line)
    examples += builder.end_document()
    flat = [t for first, second in examples for t in first + second]
    self.assertEqual(flat, [t for line in lines for t in line])
    for first, second in examples:
      self.assertLessEqual(len(first) + len(second), 16 - 3 if second else 16 - 2)
    self.assertEqual(builder.stats.tokens_truncated, 0)
    # Full examples are exactly max_seq_length - 3 pieces long.
    self.assertEqual(len(examples[0][0]) + len(examples[0][1]), 13)

  def test_electra_mode_truncates_overflow_like_electra(self):
    builder = _builder(16, "electra", single_segment_prob=1.0)
    self.assertEqual(builder.add_line(list(range(10))), [])
    (first, second), = builder.add_line(list(range(10, 20)))  # 20 >= 16: emit, truncate to 14
    self.assertEqual(first, list(range(14)))
    self.assertEqual(second, [])
    self.assertEqual(builder.stats.tokens_truncated, 6)

  def test_fill_cuts_at_word_starts(self):
    is_continuation = np.zeros(50, bool)
    is_continuation[40:] = True  # ids 40.. are ## pieces
    builder = _builder(10, "fill", is_continuation=is_continuation, single_segment_prob=1.0)
    # Room is 7 pieces; the word `6 ##41 ##42` would straddle the cut, so it moves to the next
    # example whole.
    examples = builder.add_line([1, 2, 3, 4, 5, 6, 41, 42, 7, 8])
    self.assertEqual(examples[0][0], [1, 2, 3, 4, 5])
    self.assertEqual(builder.end_document()[0][0], [6, 41, 42, 7, 8])

  def test_segments_and_features(self):
    builder = _builder(32, "fill", single_segment_prob=0.0)
    for i in range(6):
      builder.add_line([10 + i] * 4)
    (first, second), = builder.end_document()
    self.assertTrue(first and second)
    features = packing.to_features([(first, second), ([7], [])], 32, cls_id=2, sep_id=3, pad_id=0)
    ids, types, mask = (features[k] for k in ("input_word_ids", "input_type_ids", "input_mask"))
    n = len(first) + len(second) + 3
    self.assertEqual(ids[0, :n].tolist(), [2, *first, 3, *second, 3])
    self.assertEqual(types[0, :n].tolist(), [0] * (len(first) + 2) + [1] * (len(second) + 1))
    self.assertEqual(mask[0].sum(), n)
    self.assertEqual(ids[1, :4].tolist(), [2, 7, 3, 0])
    self.assertEqual(types[1].sum(), 0)

  def test_sentences_whole_sentences_up_to_the_length(self):
    # Sentences (lines) of 5, 9, 30, 2 and 7 pieces; room for 14 pieces per example ([CLS] s [SEP]).
    lines = [list(range(100 + 40 * i, 100 + 40 * i + n)) for i, n in enumerate([5, 9, 30, 2, 7])]
    builder = _builder(16, "sentences", sentences_per_example=0)
    examples = []
    for line in lines:
      examples += builder.add_line(line)
    examples += builder.end_document()
    a, b, c, d, e = lines
    # 5 + 9 fit together; 30 is cut at 14 and 14 (no word boundaries known), its last 2 pieces
    # start the next example; 2 + 2 + 7 fit.
    self.assertEqual([first for first, _ in examples],
                     [a + b, c[:14], c[14:28], c[28:] + d + e])
    self.assertTrue(all(not second for _, second in examples))
    self.assertEqual(builder.stats.tokens_truncated, 0)
    # One sentence per example; a document break flushes.
    builder = _builder(64, "sentences", sentences_per_example=1)
    got = builder.add_line(a) + builder.add_line(b) + builder.end_document() + builder.add_line(d)
    got += builder.end_document()
    self.assertEqual([first for first, _ in got], [a, b, d])
    builder = _builder(64, "sentences", sentences_per_example=2)
    got = builder.add_line(a) + builder.add_line(b) + builder.add_line(d) + builder.end_document()
    self.assertEqual([first for first, _ in got], [a + b, d])

  def test_bad_mode(self):
    with self.assertRaisesRegex(ValueError, "packing mode"):
      _builder(16, "nsp")


if __name__ == "__main__":
  tf.test.main()
