"""Minimal-pair scoring: each score kind against a one-copy-at-a-time computation by hand, ties,
macro/micro accuracy by hand, and bad input named by file:line."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import electra
from official_rtd.methods import mlm
from official_rtd.methods import noise_generator
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import minimal_pairs
from official_rtd.training import scoring
from tests import testutil

SENTENCES = ["Alice was beginning to get very tired of sitting by her sister.",
             "The whole party swam to the shore.",
             "She ate unbelievably quickly"]


def config(vocab):
  return EncoderConfig(hidden_size=32, num_layers=2, num_attention_heads=2, intermediate_size=64,
                       embedding_size=32, max_position_embeddings=64, vocab_size=vocab.size)


def pieces_of(tokenizer, sentence):
  return tokenizer.tokenize_to_lists([sentence])[0]


def reference_pll(encoder, masked_lm, vocab, pieces, l2r=False):
  """Σ_t log p(x_t | copy t), one masked copy at a time through the encoder and head; with `l2r`
  copy t also masks the `##` pieces that follow t inside its word (found from the strings)."""
  ids = [vocab.cls_id, *pieces, vocab.sep_id]
  total = 0.0
  for t in range(1, len(ids) - 1):
    copy = list(ids)
    copy[t] = vocab.mask_id
    if l2r:
      s = t + 1
      while s < len(ids) - 1 and vocab.tokens[ids[s]].startswith("##"):
        copy[s] = vocab.mask_id
        s += 1
    row = tf.constant([copy])
    sequence = encoder({"input_word_ids": row, "input_mask": tf.ones_like(row),
                        "input_type_ids": tf.zeros_like(row)}, training=False)["sequence_output"]
    logits = masked_lm(sequence, tf.constant([[t]])).numpy()[0, 0].astype(np.float64)
    total += logits[ids[t]] - (np.log(np.sum(np.exp(logits - logits.max()))) + logits.max())
  return total


class SentenceScorerTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    cls.tokenizer = tokenizer_lib.WordPieceTokenizer(cls.vocab)
    tf_keras.utils.set_random_seed(1)
    cls.electra = electra.build_electra_pretrainer(config(cls.vocab), generator_size=0.5)
    electra.create_variables(cls.electra)
    # Larger weights than the initialisation's, so each position's output depends on the others
    # by more than float noise (otherwise masking more of a word would change nothing visible).
    for variable in cls.electra.trainable_variables:
      if "kernel" in variable.name or "embeddings" in variable.name:
        variable.assign(variable * 8.0)

  def test_sentences_have_multi_piece_words(self):
    # The l2r test below is only informative if some word splits into several pieces.
    tokens = [self.vocab.tokens[i] for p in SENTENCES for i in pieces_of(self.tokenizer, p)]
    self.assertTrue(any(t.startswith("##") for t in tokens))

  def test_pll_equals_one_copy_at_a_time(self):
    scores = scoring.SentenceScorer(self.electra, self.tokenizer, "pll", batch_size=2)(
        SENTENCES)
    encoder, head = self.electra.generator, self.electra.masked_lm
    expected = [reference_pll(encoder, head, self.vocab, pieces_of(self.tokenizer, s))
                for s in SENTENCES]
    self.assertAllClose(scores, expected, atol=1e-3)

  def test_pll_word_l2r_equals_one_copy_at_a_time(self):
    scores = scoring.SentenceScorer(self.electra, self.tokenizer, "pll_word_l2r",
                                          batch_size=3)(SENTENCES)
    encoder, head = self.electra.generator, self.electra.masked_lm
    expected = [reference_pll(encoder, head, self.vocab, pieces_of(self.tokenizer, s), l2r=True)
                for s in SENTENCES]
    self.assertAllClose(scores, expected, atol=1e-3)
    plain = [reference_pll(encoder, head, self.vocab, pieces_of(self.tokenizer, s))
             for s in SENTENCES]
    self.assertGreater(np.max(np.abs(np.array(scores) - plain)), 0.01)  # differs where words split

  def test_discriminator_score_from_logits_by_hand(self):
    scores = scoring.SentenceScorer(self.electra, self.tokenizer, "discriminator")(SENTENCES)
    for sentence, score in zip(SENTENCES, scores):
      ids = tf.constant([[self.vocab.cls_id, *pieces_of(self.tokenizer, sentence),
                          self.vocab.sep_id]])
      logits = self.electra.replaced_token_logits(
          {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
           "input_type_ids": tf.zeros_like(ids)}).numpy()[0, 1:-1].astype(np.float64)
      original = 1.0 - 1.0 / (1.0 + np.exp(-logits))  # 1 − D(x)_t, D = σ(logit) = P(replaced)
      self.assertAllClose(score, np.sum(np.log(original)), atol=1e-4)

  def test_masked_lm_baseline_and_truncation(self):
    model = mlm.build_mlm_pretrainer(config(self.vocab))
    scorer = scoring.SentenceScorer(model, self.tokenizer, "pll", max_seq_length=6)
    score = scorer(SENTENCES[:1])[0]
    expected = reference_pll(model.encoder, model.masked_lm, self.vocab,
                             pieces_of(self.tokenizer, SENTENCES[0])[:4])
    self.assertAllClose(score, expected, atol=1e-3)

  def test_methods_without_the_score_are_refused(self):
    model = noise_generator.build_noise_generator_electra(config(self.vocab), vocab=self.vocab,
                                                          distribution="uniform")
    with self.assertRaisesRegex(scoring.ScoringError, "has no masked LM"):
      scoring.SentenceScorer(model, self.tokenizer, "pll_word_l2r")
    with self.assertRaisesRegex(scoring.ScoringError, "score must be one of"):
      scoring.SentenceScorer(self.electra, self.tokenizer, "perplexity")


def pair(paradigm, phenomenon="p"):
  return minimal_pairs.Pair(paradigm, phenomenon, "0", "good", "bad", "f:1")


class AccuracyReportTest(tf.test.TestCase):

  def test_ties_macro_and_micro_by_hand(self):
    pairs = [pair("a", "x")] * 4 + [pair("b", "x")] * 2 + [pair("c", "y")] * 2
    good = [1.0, 1.0, 0.0, 2.0, 5.0, 1.0, 3.0, 3.0]
    bad = [0.0, 2.0, 0.0, 1.0, 4.0, 1.0, 1.0, 4.0]
    # a: right, wrong, tie, right = 2.5/4; b: right, tie = 1.5/2; c: right, wrong = 1/2
    report = minimal_pairs.accuracy_report(pairs, good, bad)
    self.assertAllClose(report["paradigms"]["a"]["accuracy"], 62.5)
    self.assertAllClose(report["paradigms"]["b"]["accuracy"], 75.0)
    self.assertEqual(report["paradigms"]["a"]["ties"], 1)
    self.assertEqual(report["ties"], 2)
    self.assertAllClose(report["overall"], (62.5 + 75.0 + 50.0) / 3)
    self.assertAllClose(report["overall_pairs"], 100 * 5.0 / 8)
    self.assertAllClose(report["phenomena"]["x"]["accuracy"], (62.5 + 75.0) / 2)
    self.assertEqual(report["phenomena"]["y"]["paradigms"], 1)
    self.assertIn("1/2", report["tie_rule"])


class ReadPairsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()

  def write(self, name, lines, mode="w"):
    return testutil.write_text(os.path.join(self.dir, name), lines, mode)

  def test_reads_blimp_fields_from_a_directory(self):
    row = {"sentence_good": "Cats sleep.", "sentence_bad": "Cats sleeps.", "UID": "sv",
           "linguistics_term": "agreement", "pairID": "7", "field": "morphology"}
    self.write("a.jsonl", json.dumps(row) + "\n\n" + json.dumps(dict(row, pairID="8")) + "\n")
    pairs = minimal_pairs.read_pairs([self.dir])
    self.assertEqual([(p.paradigm, p.phenomenon, p.pair_id, p.good, p.bad) for p in pairs],
                     [("sv", "agreement", "7", "Cats sleep.", "Cats sleeps."),
                      ("sv", "agreement", "8", "Cats sleep.", "Cats sleeps.")])
    self.assertEqual(pairs[1].source, os.path.join(self.dir, "a.jsonl") + ":3")

  def test_bad_input_names_file_and_line(self):
    good = json.dumps({"sentence_good": "a", "sentence_bad": "b", "UID": "u"})
    cases = {
        "broken.jsonl": (good + "\n{not json\n", r"broken.jsonl:2: not a JSON object"),
        "missing.jsonl": (good + "\n" + json.dumps({"sentence_good": "a", "UID": "u"}) + "\n",
                          r"missing.jsonl:2: missing or empty sentence_bad"),
        "list.jsonl": ("[1, 2]\n", r"list.jsonl:1: not a JSON object"),
    }
    for name, (text, message) in cases.items():
      path = self.write(name, text)
      with self.assertRaisesRegex(scoring.ScoringError, message):
        minimal_pairs.read_pairs([path])
    path = self.write("latin1.jsonl", good.encode() + b"\n\xe9t\xe9\n", "wb")
    with self.assertRaisesRegex(scoring.ScoringError, r"latin1.jsonl:2: not UTF-8"):
      minimal_pairs.read_pairs([path])
    with self.assertRaisesRegex(scoring.ScoringError, "no such file"):
      minimal_pairs.read_pairs([os.path.join(self.dir, "absent.jsonl")])
    empty = tempfile.mkdtemp()
    with self.assertRaisesRegex(scoring.ScoringError, "holds no .jsonl files"):
      minimal_pairs.read_pairs([empty])


if __name__ == "__main__":
  tf.test.main()
