"""The frozen-feature parsing probe: arc scores against a loop over (head, dependent), the encoded
treebank's first-piece positions by hand, and the head selector learning a synthetic treebank
whose word vectors spell out their heads (UAS 1) but not one whose vectors are noise."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import conllu
from official_rtd.data import parsing_data
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.probes import parsing_probe
from tests import testutil


class ParsingProbeTest(tf.test.TestCase):

  def test_arc_scores_by_loop(self):
    rng = np.random.default_rng(0)
    a, b, u = rng.normal(size=[6, 3]), rng.normal(size=[6, 3]), rng.normal(size=[6, 1])
    x = rng.normal(size=[2, 4, 6])
    scores = parsing_probe.arc_scores([tf.constant(w) for w in (a, b, u)], tf.constant(x)).numpy()
    for s in range(2):
      for h in range(4):
        for d in range(4):
          expected = (x[s, h] @ a) @ (x[s, d] @ b) + x[s, h] @ u[:, 0]
          self.assertAllClose(scores[s, h, d], expected)

  def test_encoded_positions_by_hand(self):
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    tokenizer = tokenizer_lib.for_vocab(vocab, True)
    words = ["the", "unbelievably", "dog"]
    sentence = conllu.Sentence(words, [3, 3, 0], ["det", "amod", "root"], ["X"] * 3, ["X"] * 3)
    long = conllu.Sentence(["the"] * 40, [0] + [1] * 39, ["x"] * 40, ["X"] * 40, ["X"] * 40)
    encoded = parsing_data.EncodedTreebank([sentence, long], tokenizer, max_seq_length=16)
    pieces = [len(p) for p in tokenizer.tokenize_to_lists(words)]
    self.assertLen(encoded, 1)
    self.assertEqual(encoded.skipped, 1)  # 40 words do not fit 16 positions
    self.assertEqual(list(encoded.positions[0]), [0, 1, 1 + pieces[0], 1 + pieces[0] + pieces[1]])
    self.assertEqual(list(encoded.heads[0]), [-1, 3, 3, 0])
    self.assertEqual(encoded.input_word_ids[0, 0], vocab.cls_id)
    self.assertEqual(encoded.input_word_ids[0, sum(pieces) + 1], vocab.sep_id)

  def test_head_selector_learns_heads_spelled_in_the_vectors(self):
    rng = np.random.default_rng(0)
    sentences, size = 300, 8
    nodes = rng.integers(4, size + 1, size=sentences)
    heads = np.full([sentences, size], -1)
    for s, n in enumerate(nodes):
      heads[s, 1:n] = [rng.integers(0, n - 1) if d > 1 else 0 for d in range(1, n)]
      heads[s, 1:n] = np.where(heads[s, 1:n] == np.arange(1, n), 0, heads[s, 1:n])
    # Node vectors: one-hot of the node's own position and one-hot of its head's position.
    x = np.zeros([sentences, size, 2 * size])
    for s, n in enumerate(nodes):
      for d in range(n):
        x[s, d, d] = 1.0
        if d > 0:
          x[s, d, size + heads[s, d]] = 1.0
    weights = parsing_probe.train_head_selector(x[:200], heads[:200], nodes[:200], rank=16,
                                                steps=400, batch=64, seed=0)
    predicted = parsing_probe.predict_heads(weights, x[200:], nodes[200:])
    words = heads[200:, 1:] >= 0
    self.assertGreater((predicted[:, 1:] == heads[200:, 1:])[words].mean(), 0.98)
    noise = rng.normal(size=x.shape)
    weights = parsing_probe.train_head_selector(noise[:200], heads[:200], nodes[:200], rank=16,
                                                steps=400, batch=64, seed=0)
    predicted = parsing_probe.predict_heads(weights, noise[200:], nodes[200:])
    self.assertLess((predicted[:, 1:] == heads[200:, 1:])[words].mean(), 0.5)

  def test_treebank_file_must_be_unique(self):
    folder = tempfile.mkdtemp()
    with self.assertRaisesRegex(FileNotFoundError, "expected one \\*-ud-train.conllu file"):
      parsing_data.treebank_file(folder, "train")
    self.assertFalse(os.listdir(folder))


if __name__ == "__main__":
  tf.test.main()
