"""The ELECTRA study's objectives (dissertation §5.4.3) on a hand-checkable batch: BERT MLM,
ELECTRA 15%, Replace MLM, All-Tokens MLM."""
import numpy as np
import tensorflow as tf

from official_rtd.modeling.models import electra
from official_rtd.modeling.models import mlm
from official_rtd.modeling.models import replace_mlm
from tests.modeling.test_electra import CONFIG, forcing_noise, toy_batch


def log_softmax(x):
  x = np.asarray(x, np.float64)
  return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(
      -1, keepdims=True)


def masked_mean_nll(logits, batch):
  """−log softmax at (row, slot) of the 3 real masked positions of toy_batch."""
  lp = log_softmax(logits)
  ids = batch["masked_lm_ids"].numpy()
  return -(lp[0, 0, ids[0, 0]] + lp[0, 1, ids[0, 1]] + lp[1, 0, ids[1, 0]]) / 3


class StudyObjectivesTest(tf.test.TestCase):

  def test_bert_mlm(self):
    model = mlm.build_mlm_pretrainer(CONFIG)
    batch = toy_batch()
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    self.assertAllClose(losses["total_loss"], masked_mean_nll(out["mlm_logits"], batch), rtol=1e-5)
    self.assertIs(model.exported_encoder, model.encoder)

  def test_electra_15_uses_only_masked_positions(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_positions="masked")
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    z = out["rtd_logits"].numpy().astype(np.float64)
    y = out["rtd_labels"].numpy()
    bce = -(y * np.log(1 / (1 + np.exp(-z))) + (1 - y) * np.log(1 - 1 / (1 + np.exp(-z))))
    expected = (bce[0, 2] + bce[0, 5] + bce[1, 3]) / 3  # the three masked positions only
    self.assertAllClose(losses["rtd_loss"], expected, rtol=1e-5)
    with self.assertRaisesRegex(ValueError, "rtd_positions"):
      electra.build_electra_pretrainer(CONFIG, rtd_positions="some")

  def test_replace_mlm(self):
    model = replace_mlm.build_replace_mlm_pretrainer(CONFIG, generator_size=0.5)
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    corrupted = out["corrupted_ids"].numpy()
    self.assertEqual((corrupted[0, 5], corrupted[1, 3]), (30, 40))  # samples, not [MASK] (4)
    self.assertNotIn(4, corrupted)
    losses = model.compute_losses(batch, out)
    self.assertAllClose(losses["model_loss"], masked_mean_nll(out["replace_mlm_logits"], batch),
                        rtol=1e-5)
    self.assertAllClose(losses["total_loss"], losses["mlm_loss"] + losses["model_loss"], rtol=1e-6)

  def test_all_tokens_mlm_copy_mechanism(self):
    model = replace_mlm.build_replace_mlm_pretrainer(CONFIG, generator_size=0.5, all_tokens=True)
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    # Recompute p(x_t) = D·1[x_t = input_t] + (1 − D)·softmax(W h_t)[x_t] by hand.
    sequence = model.discriminator(dict(batch, input_word_ids=out["corrupted_ids"]),
                                   training=False)["sequence_output"]
    positions = tf.tile(tf.range(8)[tf.newaxis], [2, 1])
    probs = np.exp(log_softmax(model.model_lm(sequence, positions)))
    d = 1 / (1 + np.exp(-out["copy_logits"].numpy().astype(np.float64)))
    original, corrupted = out["original_ids"].numpy(), out["corrupted_ids"].numpy()
    mask = batch["input_mask"].numpy()
    nll = []
    for b in range(2):
      for t in range(8):
        if mask[b, t]:
          p = (d[b, t] * (corrupted[b, t] == original[b, t])
               + (1 - d[b, t]) * probs[b, t, original[b, t]])
          nll.append(-np.log(p))
    self.assertAllClose(losses["model_loss"], np.mean(nll), rtol=1e-5)


if __name__ == "__main__":
  tf.test.main()
