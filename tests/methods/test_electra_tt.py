"""ELECTRA-TT: two-tower generator inside ELECTRA; loss and one-pass PLL by direct computation."""
import math

import numpy as np
import tensorflow as tf

from official_rtd.methods import electra_tt
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import forcing_noise
from tests.methods.test_electra import toy_batch


class ElectraTTTest(tf.test.TestCase):

  def test_losses_and_labels(self):
    model = electra_tt.build_electra_tt_pretrainer(CONFIG, generator_size=0.5)
    batch = toy_batch()
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    mask = batch["input_mask"].numpy()
    cloze = (-out["log_q_data"].numpy() * mask).sum() / mask.sum()
    self.assertAllClose(losses["cloze_loss"].value, cloze, rtol=1e-5)
    # L_Disc from the discriminator's logits on the hand-built corrupted input and hand labels.
    corrupted = batch["input_word_ids"].numpy().copy()
    corrupted[0, 2], corrupted[0, 5], corrupted[1, 3] = 11, 30, 40
    labels = np.zeros([2, 8])
    labels[0, 5] = labels[1, 3] = 1.0  # position (0, 2) sampled its original: not replaced
    z = model.rtd_head(model.discriminator(dict(batch, input_word_ids=tf.constant(corrupted)),
                                           training=False)["sequence_output"]).numpy()
    z = z.astype(np.float64)
    bce = np.logaddexp(0.0, z) - labels * z  # sigmoid cross-entropy
    rtd = (bce * mask).sum() / mask.sum()
    self.assertAllClose(losses["rtd_loss"].value, rtd, rtol=1e-5)
    self.assertAllClose(losses["total_loss"].value, cloze + 50 * rtd, rtol=1e-5)
    # ELECTRA's labels: the sample equal to the original (row 0, position 2) is not "replaced".
    self.assertEqual(out["rtd_labels"].numpy()[0, 2], 0.0)
    self.assertEqual(out["rtd_labels"].numpy()[0, 5], 1.0)
    self.assertEqual(out["mlm_logits"].shape, [2, 3, 50])

  def test_one_pass_pll(self):
    model = electra_tt.build_electra_tt_pretrainer(CONFIG, generator_size=0.5, mask_prob=0.15)
    ids = tf.constant([[2, 10, 11, 12, 3, 0]])
    mask = tf.cast(ids > 0, tf.int32)
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": tf.zeros_like(ids)}
    pll = model.pseudo_log_likelihood(ids, mask, tf.zeros_like(ids), mask_id=4).numpy()
    log_q = tf.nn.log_softmax(model.generator(inputs)["logits"]).numpy()[0]
    d = tf.sigmoid(-model.replaced_token_logits(inputs)).numpy()[0]  # P(original)
    expected = sum(math.log(0.15 * math.exp(log_q[t, ids[0, t]]) * d[t] / (1 - d[t]))
                   for t in (1, 2, 3))
    self.assertAllClose(pll[0], expected, rtol=1e-4)


if __name__ == "__main__":
  tf.test.main()
