"""AMOS: gradient reversal into the mixture, stop-gradient between blocks, no discriminator
gradient into the MLM heads, mixture weights, ablations, learning on real text."""
import dataclasses
import functools
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.methods import amos
from official_rtd.ops import gradient_reversal
from official_rtd.ops import sampling
from tests import testutil
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import toy_batch
from tests.methods.test_electra import VOCAB
from tests.training.test_trainer import make_records
from tests.training.test_trainer import text_trainer


def fixed_noise_batch(seed=0):
  batch = toy_batch()
  batch["gumbel_noise"] = tf.constant(
      np.random.default_rng(seed).gumbel(size=[2, 3, VOCAB]), tf.float32)
  return batch


def build(config=CONFIG, **kwargs):
  values = dict(mlm_layers=(1, 2, 3))
  values.update(kwargs)
  tf_keras.utils.set_random_seed(0)
  model = amos.build_amos_pretrainer(config, **values)
  model(toy_batch(), training=False)
  return model


def mean_nll(logits, batch):
  """−log softmax(logits) of the masked-LM targets, averaged over the real masked positions."""
  logits = np.asarray(logits, np.float64)
  log_p = logits - logits.max(-1, keepdims=True)
  log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
  nll = -np.take_along_axis(log_p, batch["masked_lm_ids"].numpy()[..., None], -1)[..., 0]
  weights = batch["masked_lm_weights"].numpy()
  return (nll * weights).sum() / weights.sum()


def variables_named(model, part):
  return [v for v in model.trainable_variables if part in v.name]


class OpsTest(tf.test.TestCase):

  def test_gradient_reversal(self):
    x = tf.constant([1.0, -2.0])
    with tf.GradientTape(persistent=True) as tape:
      tape.watch(x)
      y = gradient_reversal.reverse_gradient(x, 0.5)
      loss = tf.reduce_sum(3.0 * y)
    self.assertAllEqual(y, x)
    self.assertAllClose(tape.gradient(loss, x), [-1.5, -1.5])

  def test_straight_through_gumbel_softmax(self):
    logits = tf.constant([[0.5, 2.0, -1.0, 0.0]])
    noise = tf.constant([[0.3, -0.2, 2.9, 0.1]])
    with tf.GradientTape() as tape:
      tape.watch(logits)
      hard, ids = sampling.gumbel_softmax(logits, 0.3, gumbel_noise=noise)
      loss = tf.reduce_sum(hard * tf.constant([1.0, 2.0, 3.0, 4.0]))
    expected_id = int(np.argmax(tf.nn.log_softmax(logits).numpy() + noise.numpy()))
    self.assertEqual(int(ids[0]), expected_id)
    self.assertAllClose(hard, tf.one_hot([expected_id], 4))
    with tf.GradientTape() as soft_tape:
      soft_tape.watch(logits)
      soft, _ = sampling.gumbel_softmax(logits, 0.3, hard=False, gumbel_noise=noise)
      soft_loss = tf.reduce_sum(soft * tf.constant([1.0, 2.0, 3.0, 4.0]))
    self.assertAllClose(tape.gradient(loss, logits), soft_tape.gradient(soft_loss, logits))


class AmosGradientTest(tf.test.TestCase):

  def _losses(self, model, batch):
    return model.compute_losses(batch, model(batch, training=False))

  def test_mixture_weights_sum_to_one(self):
    model = build()
    out = model(fixed_noise_batch(), training=False)
    self.assertEqual(out["mixture_weights"].shape, (2, 3, 3))
    self.assertAllClose(tf.reduce_sum(out["mixture_weights"], -1), np.ones([2, 3]))
    # The mixture's logits are Σ_d γ_d · logits_d.
    self.assertAllClose(out["mlm_logits"], tf.einsum("bpk,kbpv->bpv", out["mixture_weights"],
                                                     out["depth_mlm_logits"]), atol=1e-5)
    # Independently: f^(d) is generator layer d's output at the masked positions, γ =
    # softmax_d(vᵀ f^(d)) (eq. 3), and each head's MLM loss is its own cross-entropy (eq. 2).
    batch = fixed_noise_batch()
    layers = model.generator(batch, training=False)["encoder_outputs"]
    positions = batch["masked_lm_positions"].numpy()
    v = model.mixture_scorer.kernel.numpy()[:, 0]
    scores = np.stack([np.take_along_axis(layers[d - 1].numpy(), positions[..., None], 1) @ v
                       for d in (1, 2, 3)], -1)                              # [batch, P, K]
    gamma = np.exp(scores - scores.max(-1, keepdims=True))
    gamma /= gamma.sum(-1, keepdims=True)
    self.assertAllClose(out["mixture_weights"], gamma, atol=1e-5)
    losses = model.compute_losses(batch, out)
    for d in (1, 2, 3):
      logits = model.masked_lm(layers[d - 1], batch["masked_lm_positions"])
      self.assertAllClose(losses[f"mlm_loss_layer_{d}"].value, mean_nll(logits, batch),
                          rtol=1e-5)

  def test_v_ascends_the_discriminator_loss(self):
    """With the soft relaxation (differentiable forward), the gradient of the total loss reaching v
    is −λ × the finite-difference gradient of L_DISC: reversed, and L_GEN does not touch v."""
    # Large initial weights (stddev 0.5, not 0.02) so that γ visibly moves L_DISC.
    model = build(dataclasses.replace(CONFIG, initializer_range=0.5), temperature=1.0)
    model.straight_through = False
    batch = fixed_noise_batch()
    (v,) = variables_named(model, "mixture_v")
    original = v.numpy()
    with tf.GradientTape() as tape:
      losses = self._losses(model, batch)
    grad = tape.gradient(losses["total_loss"].value, v).numpy()
    self.assertGreater(np.abs(grad).max(), 1e-6)
    numeric = np.zeros_like(original)
    eps = 1e-2
    for index in np.ndindex(original.shape):
      values = []
      for sign in (1, -1):
        shifted = original.copy()
        shifted[index] += sign * eps
        v.assign(shifted)
        values.append(float(self._losses(model, batch)["rtd_loss"].value))
      numeric[index] = (values[0] - values[1]) / (2 * eps)
    v.assign(original)
    self.assertAllClose(grad, -50.0 * numeric, rtol=0.05, atol=1e-4)
    self.assertLess(np.sum(grad * numeric), 0.0)  # opposite signs

  def test_mlm_heads_get_no_discriminator_gradient(self):
    model = build()
    batch = fixed_noise_batch()
    with tf.GradientTape() as tape:
      losses = self._losses(model, batch)
    head = variables_named(model, "generator_masked_lm")
    self.assertNotEmpty(head)
    grads = tape.gradient(losses["rtd_loss"].value, head)
    self.assertTrue(all(g is None or not np.any(g.numpy()) for g in grads))
    # ... while the hard (straight-through) path does reach v, reversed.
    with tf.GradientTape() as tape:
      losses = self._losses(model, batch)
    (v,) = variables_named(model, "mixture_v")
    self.assertGreater(np.abs(tape.gradient(losses["rtd_loss"].value, v).numpy()).max(), 0.0)
    # With "+ adv. MLM" the heads do get a (reversed, scaled) share.
    model = build(adversarial_mlm_scale=0.1)
    with tf.GradientTape() as tape:
      losses = self._losses(model, batch)
    grads = tape.gradient(losses["rtd_loss"].value, variables_named(model, "generator_masked_lm"))
    self.assertTrue(any(g is not None and np.any(g.numpy()) for g in grads))

  def test_stop_gradient_between_blocks(self):
    """Block 1's parameters get no gradient from the deepest head's MLM loss (eq. 2)."""
    for stop, expect_gradient in ((True, False), (False, True)):
      model = build(stop_gradient_between_blocks=stop)
      batch = fixed_noise_batch()
      with tf.GradientTape() as tape:
        losses = self._losses(model, batch)
      layer_0 = variables_named(model, "generator/transformer/layer_0/")
      self.assertNotEmpty(layer_0)
      grads = tape.gradient(losses["mlm_loss_layer_3"].value, layer_0)
      has_gradient = any(g is not None and np.any(g.numpy()) for g in grads)
      self.assertEqual(has_gradient, expect_gradient, stop)
      # The first head's own loss does train block 1.
      if stop:
        with tf.GradientTape() as tape:
          losses = self._losses(model, batch)
        grads = tape.gradient(losses["mlm_loss_layer_1"].value, layer_0)
        self.assertTrue(all(g is not None for g in grads))

  def test_losses_and_discriminator_input(self):
    model = build()
    batch = fixed_noise_batch()
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    # mlm_loss (and so mlm_perplexity) is the mixture's cross-entropy, not the sum over heads.
    self.assertAllClose(losses["mlm_loss"].value, mean_nll(out["mlm_logits"], batch), rtol=1e-5)
    self.assertEqual(float(losses["mlm_loss"].weight), batch["masked_lm_weights"].numpy().sum())
    # eq. 2: the generator's loss is the sum over its heads; what is minimised with λ·L_Disc.
    self.assertAllClose(losses["generator_loss"].value,
                        sum(losses[f"mlm_loss_layer_{d}"].value for d in (1, 2, 3)))
    self.assertAllClose(losses["total_loss"].value,
                        losses["generator_loss"].value + 50 * losses["rtd_loss"].value)
    # The samples are Gumbel-max draws from the mixture and land at the masked positions.
    expected = np.argmax(tf.nn.log_softmax(out["mlm_logits"]).numpy()
                         + batch["gumbel_noise"].numpy(), -1)
    self.assertAllEqual(out["sampled_ids"], expected)
    self.assertEqual(int(out["corrupted_ids"][0, 5]), expected[0, 1])
    # The discriminator's input embeddings equal the plain look-up of the corrupted ids.
    rtd = model.rtd_head(model.discriminator(dict(batch, input_word_ids=out["corrupted_ids"]),
                                             training=False)["sequence_output"])
    self.assertAllClose(out["rtd_logits"], rtd, atol=1e-5)

  def test_random_layer_and_gumbel_noise_use_distinct_streams(self):
    batch = {k: v for k, v in fixed_noise_batch().items() if k != "gumbel_noise"}
    batch["sampling_seed"] = tf.constant([5, 1], tf.int64)
    model = build(mixture="random_layer")
    with testutil.record_stateless_seeds() as seeds:
      first = model(batch, training=False)
    self.assertLen(seeds, 2)  # the random layer choice and the Gumbel noise
    self.assertLen(set(seeds), 2, seeds)
    self.assertAllEqual(first["mixture_weights"],
                        model(batch, training=False)["mixture_weights"])

  def test_ablation_mixtures(self):
    batch = fixed_noise_batch()
    average = build(mixture="average")(batch, training=False)["mixture_weights"]
    self.assertAllClose(average, np.full([2, 3, 3], 1 / 3))
    random = build(mixture="random_layer")(batch, training=False)["mixture_weights"]
    self.assertAllClose(tf.reduce_sum(random, -1), np.ones([2, 3]))
    self.assertAllEqual(tf.reduce_max(random, -1), np.ones([2, 3]))
    model = build(mixture="layer_switch", layer_switch_steps=(2, 4))
    step = tf.Variable(0, dtype=tf.int64)  # the optimizer's step, as the trainer binds it
    model.bind_step(lambda: step)
    chosen = []
    for s in range(6):
      step.assign(s)
      for _ in range(3):  # several forward passes in one optimizer step do not move the switch
        weights = model(batch, training=True)["mixture_weights"]
      chosen.append(int(tf.argmax(weights[0, 0])))
    self.assertEqual(chosen, [0, 0, 1, 1, 2, 2])
    with self.assertRaisesRegex(ValueError, "needs 2 layer_switch_steps"):
      build(mixture="layer_switch")
    with self.assertRaisesRegex(ValueError, "must lie in 1..3"):
      amos.AmosPretrainer(build().generator, build().discriminator, mlm_layers=(2, 4))


class AmosTrainingTest(tf.test.TestCase):

  def test_losses_fall_on_real_text(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=300)
    trainer, logged = text_trainer(
        os.path.join(tmp, "amos"), records,
        functools.partial(amos.build_amos_pretrainer, mlm_layers=(1, 2, 3)))
    trainer.train()
    for d in (1, 2, 3):
      self.assertLess(logged[-1][f"mlm_loss_layer_{d}"], logged[0][f"mlm_loss_layer_{d}"] - 0.5,
                      logged)
    self.assertLess(logged[-1]["rtd_loss"], logged[0]["rtd_loss"], logged)
    weights = [logged[-1][f"mixture_weight_layer_{d}"] for d in (1, 2, 3)]
    self.assertAllClose(sum(weights), 1.0, atol=1e-4)


if __name__ == "__main__":
  tf.test.main()
