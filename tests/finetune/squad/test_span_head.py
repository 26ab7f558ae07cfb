"""ELECTRA's SQuAD head: beam search agrees with the teacher-forced end logits; loss by hand."""
import dataclasses

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.finetune.squad import span_head
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.trials import steps as trial_steps
from tests.training.test_trainer import TINY

ENCODER = dataclasses.replace(TINY, vocab_size=128)


def inputs(batch=2, seq=12, query=4):
  rng = np.random.default_rng(0)
  ids = rng.integers(5, 100, size=[batch, seq]).astype(np.int32)
  mask = np.ones([batch, seq], np.int32)
  mask[1, -3:] = 0
  types = np.zeros([batch, seq], np.int32)
  types[:, query:] = 1
  types *= mask
  return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


class SpanHeadTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    tf_keras.utils.set_random_seed(1)
    self.features = inputs()
    self.model = span_head.SpanQuestionAnswerer(TransformerEncoder(ENCODER), beam_size=3)
    self.model(self.features, start_positions=tf.constant([5, 6]))

  def test_beam_equals_teacher_forced_end_logits(self):
    out = self.model(self.features, training=False)
    start_log_probs = tf.nn.log_softmax(out["start_logits"]).numpy()
    for b in range(2):
      expected = np.sort(start_log_probs[b])[::-1][:3]
      self.assertAllClose(out["start_top_log_probs"][b], expected, atol=1e-5)
      for i in range(3):
        start = out["start_top_index"][b, i]
        forced = self.model(self.features, start_positions=tf.fill([2], start), training=False)
        end_log_probs = tf.nn.log_softmax(forced["end_logits"][b]).numpy()
        self.assertAllClose(out["end_top_log_probs"][b, i], np.sort(end_log_probs)[::-1][:3],
                            atol=1e-5)
        self.assertAllEqual(out["end_top_index"][b, i], np.argsort(-end_log_probs)[:3])

  def test_only_context_and_cls_can_be_picked(self):
    out = self.model(self.features, training=False)
    allowed = self.features["input_type_ids"].astype(bool)
    allowed[:, 0] = True
    logits = out["start_logits"].numpy()
    self.assertTrue(np.all(logits[~allowed] < -900))
    self.assertTrue(np.all(logits[allowed] > -100))
    self.assertTrue(np.all(allowed[np.arange(2)[:, None], out["start_top_index"].numpy()]))

  def test_loss_by_hand(self):
    starts, ends, impossible = np.array([5, 0]), np.array([7, 0]), np.array([0, 1])
    out = self.model(self.features, start_positions=tf.constant(starts, tf.int32), training=False)
    got = span_head.loss(out, starts, ends, impossible, answerable_weight=0.5)

    def log_softmax(x):
      x = x.astype(np.float64)
      return x - x.max() - np.log(np.exp(x - x.max()).sum())

    total = 0.0
    for b in range(2):
      start_ce = -log_softmax(out["start_logits"][b].numpy())[starts[b]]
      end_ce = -log_softmax(out["end_logits"][b].numpy())[ends[b]]
      z = float(out["answerable_logit"][b])
      bce = np.log1p(np.exp(-z)) if impossible[b] else np.log1p(np.exp(z))
      total += (start_ce + end_ce) / 2 + 0.5 * bce
    self.assertAllClose(got, total / 2, rtol=1e-5)

  def test_xla_prediction_equals_the_plain_forward(self):
    """run_squad predicts through `trial_steps.predict` (XLA, padded batches): the same beams."""
    features = inputs(batch=5, seq=16)
    plain = self.model(features, training=False)
    logs = []
    fast = trial_steps.predict(lambda batch: self.model(batch, training=False), features, 2,
                          logs.append, "windows", log_every_seconds=0.0)
    for name in ("start_top_index", "end_top_index"):
      self.assertAllEqual(fast[name], plain[name], msg=name)
    for name in ("start_top_log_probs", "end_top_log_probs", "answerable_logit"):
      self.assertAllClose(fast[name], plain[name], atol=1e-4, msg=name)
    self.assertEqual(fast["end_top_index"].shape, (5, 3, 3))  # the padded rows are dropped
    self.assertRegex(logs[0], r"^windows: 4/5 \(\d+/s\), ETA \d+:\d\d:\d\d$")
    self.assertRegex(logs[-1], r"^windows: 5 in [\d.]+s")

  def test_independent_head_and_v11(self):
    model = span_head.SpanQuestionAnswerer(TransformerEncoder(ENCODER), joint=False,
                                           version_2=False)
    out = model(self.features, training=False)
    self.assertEqual(sorted(out), ["end_logits", "start_logits"])
    self.assertEqual(out["end_logits"].shape, (2, 12))


if __name__ == "__main__":
  tf.test.main()
