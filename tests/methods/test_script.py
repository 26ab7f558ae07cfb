"""SCRIPT: critic probabilities, labels against the original token, gradients, PLL, learning."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.methods import script
from official_rtd.ops import sampling
from tests.methods.test_electra import assert_samples_follow_mlm
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import forcing_noise
from tests.methods.test_electra import goodness_of_fit
from tests.methods.test_electra import toy_batch
from tests.training.test_trainer import make_records
from tests.training.test_trainer import text_trainer


class CriticTest(tf.test.TestCase):

  def test_probabilities_sum_to_one_and_match_float64_for_large_logits(self):
    logits = np.array([[1000.0, 999.0, -5.0], [-800.0, -801.0, -900.0], [0.1, -0.2, 0.3],
                       [30.0, 29.5, 0.0]], np.float32)
    log_pos, log_neg = script.critic_log_probabilities(tf.constant(logits))
    self.assertTrue(np.all(np.isfinite(log_pos)) and np.all(np.isfinite(log_neg)))
    self.assertAllClose(np.exp(log_pos) + np.exp(log_neg), np.ones(4), atol=1e-6)
    x = logits.astype(np.float64)
    lse = x.max(-1) + np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1))
    # p(t⁻) = 1 / (Σ exp(s) + 1): log p(t⁻) = −log(1 + e^LSE), exactly in float64.
    expected_neg = -np.logaddexp(0.0, lse)
    expected_pos = lse - np.logaddexp(0.0, lse)
    self.assertAllClose(log_neg, expected_neg, rtol=1e-6, atol=1e-6)
    self.assertAllClose(log_pos, expected_pos, rtol=1e-6, atol=1e-6)


class ScriptModelTest(tf.test.TestCase):

  def test_replacements_follow_p_theta(self):
    """eq. 3 read as the Gumbel-softmax's discrete value: x̄_t ~ π_t exactly (script.py)."""
    model = script.build_script_pretrainer(CONFIG)
    model(toy_batch(), training=False)
    assert_samples_follow_mlm(self, model, model.masked_lm)

  def test_the_other_reading_of_eq3_would_be_detected(self):
    """A categorical draw from softmax((log π + g)/τ) at τ = 1 (the previous reading) flattens π;
    the goodness-of-fit check used above rejects it."""
    rng = np.random.default_rng(1)
    pi = 1.0 / np.arange(1, 51) ** 2
    pi /= pi.sum()
    relaxed = np.log(pi) - np.log(-np.log(rng.uniform(size=(4000, 50))))
    relaxed = np.exp(relaxed - relaxed.max(-1, keepdims=True))
    relaxed /= relaxed.sum(-1, keepdims=True)
    two_draws = np.array([rng.choice(50, p=row) for row in relaxed])
    self.assertLess(goodness_of_fit(two_draws, pi), 1e-6)
    gumbel_max = np.argmax(np.log(pi) - np.log(-np.log(rng.uniform(size=(4000, 50)))), -1)
    self.assertGreater(goodness_of_fit(gumbel_max, pi), 1e-4)

  def test_labels_use_the_original_token_and_loss_formula(self):
    model = script.build_script_pretrainer(CONFIG, disc_weight=50.0)
    batch = toy_batch()  # row 0 masks positions 2 (original 11) and 5 (14); row 1 position 3
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    out = model(batch, training=False)
    negative = np.zeros([2, 8])
    negative[0, 5] = negative[1, 3] = 1.0  # position 2 was masked but sampled its original: positive
    self.assertAllEqual(out["negative"], negative)
    self.assertEqual(out["critic_ids"].numpy()[0, 2], 11)
    losses = model.compute_losses(batch, out)
    mask = batch["input_mask"].numpy()
    per = np.where(negative == 1, -out["log_p_negative"].numpy(), -out["log_p_positive"].numpy())
    critic = (per * mask).sum() / mask.sum()
    self.assertAllClose(losses["critic_loss"].value, critic, rtol=1e-5)
    self.assertAllClose(losses["total_loss"].value, losses["mlm_loss"].value + 50 * critic, rtol=1e-5)

  def test_the_critic_waits_for_its_start_step(self):
    """With `critic_start_step` = 2: L = L_MLM at steps 0 and 1, L_MLM + α L_Disc from step 2 (the
    figures of the same batch and weights); the run's checks read it as the detection start."""
    with self.assertRaisesRegex(ValueError, "critic_start_step = -1 must be >= 0"):
      script.build_script_pretrainer(CONFIG, critic_start_step=-1)
    model = script.build_script_pretrainer(CONFIG, critic_start_step=2)
    self.assertEqual(model.detection_start_step(), 2)
    self.assertEqual(model.detection_start_setting(), "build_script_pretrainer.critic_start_step")
    step = tf.Variable(0, dtype=tf.int64)
    model.bind_step(lambda: step)
    batch = toy_batch()
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    out = model(batch, training=False)
    for value, alpha in ((0, 0.0), (1, 0.0), (2, 50.0), (9, 50.0)):
      step.assign(value)
      losses = model.compute_losses(batch, out)
      self.assertGreater(float(losses["critic_loss"].value), 0.0)
      self.assertAllClose(losses["total_loss"].value,
                          losses["mlm_loss"].value + alpha * losses["critic_loss"].value,
                          rtol=1e-5, msg=f"step {value}")

  def test_no_gradient_through_the_sampled_tokens(self):
    """L_Disc reaches the weights only through the critic pass: its gradient with respect to the
    MLM pass's logits (which the samples come from) is None."""
    model = script.build_script_pretrainer(CONFIG)
    batch = toy_batch()
    with tf.GradientTape(persistent=True) as tape:
      out = model(batch, training=False)
      losses = model.compute_losses(batch, out)
    self.assertIsNone(tape.gradient(losses["critic_loss"].value, out["mlm_logits"]))
    grads = tape.gradient(losses["critic_loss"].value, model.encoder.trainable_variables)
    self.assertTrue(any(g is not None for g in grads))  # the critic pass trains the encoder

  def test_one_pass_pll(self):
    model = script.build_script_pretrainer(CONFIG)
    ids = tf.constant([[2, 10, 11, 12, 3, 0]])
    mask = tf.cast(ids > 0, tf.int32)
    pll = model.pseudo_log_likelihood(ids, mask, tf.zeros_like(ids), mask_id=4)
    log_pos, _ = model.critic({"input_word_ids": ids, "input_mask": mask,
                               "input_type_ids": tf.zeros_like(ids)})
    self.assertAllClose(pll[0], log_pos.numpy()[0, 1:4].sum(), rtol=1e-6)

  def test_temperature(self):
    """τ → 0 samples from π; a huge τ samples uniformly."""
    logits = tf.math.log(tf.constant([[[0.7, 0.2, 0.1]]] * 6000))
    for tau, expected in ((1e-3, [0.7, 0.2, 0.1]), (1e3, [1 / 3, 1 / 3, 1 / 3])):
      g = tf.constant(-np.log(-np.log(np.random.default_rng(0).random([6000, 1, 3]))), tf.float32)
      ids = sampling.sample(logits + g, temperature=tau).numpy().ravel()
      self.assertAllClose(np.bincount(ids, minlength=3) / 6000, expected, atol=0.03)


class ScriptTrainingTest(tf.test.TestCase):

  def test_mlm_and_critic_losses_fall_on_real_text(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=300, mask_strategy="bert")
    trainer, logged = text_trainer(os.path.join(tmp, "script"), records,
                                   script.build_script_pretrainer)
    trainer.train()
    self.assertLess(logged[-1]["mlm_loss"], logged[0]["mlm_loss"] - 0.5, logged)
    self.assertLess(logged[-1]["critic_loss"], logged[0]["critic_loss"], logged)


if __name__ == "__main__":
  tf.test.main()
