"""ELECTRA: losses by hand, weight tying, losses and gradients against Model Garden's."""
import numpy as np
from official.nlp.configs import electra as mg_electra_config
from official.nlp.data import pretrain_dataloader as mg_pretrain_dataloader
from official.nlp.modeling import models as mg_models
from official.nlp.modeling import networks as mg_networks
from official.nlp.modeling.models import electra_pretrainer as mg_electra_pretrainer
from official.nlp.tasks import electra_task as mg_electra_task
import tensorflow as tf
import tf_keras

from official_rtd.interop import model_garden
from official_rtd.methods import electra
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import transformer_encoder

VOCAB = 50
CONFIG = EncoderConfig(vocab_size=VOCAB, hidden_size=16, num_layers=2, num_attention_heads=2,
                       intermediate_size=32, embedding_size=8, max_position_embeddings=16,
                       dropout_rate=0.0, attention_dropout_rate=0.0)


def toy_batch():
  """2 sequences of 8 (the second padded after 6); 3 prediction slots, one unused in row 0."""
  ids = np.array([[2, 10, 4, 12, 13, 4, 15, 3],
                  [2, 20, 21, 4, 23, 3, 0, 0]], np.int32)
  return {
      "input_word_ids": tf.constant(ids),
      "input_mask": tf.constant((ids > 0).astype(np.int32)),
      "input_type_ids": tf.zeros_like(ids),
      "masked_lm_positions": tf.constant([[2, 5, 0], [3, 0, 0]], tf.int32),
      "masked_lm_ids": tf.constant([[11, 14, 0], [22, 0, 0]], tf.int32),
      "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
  }


def forcing_noise(token_ids):
  """Gumbel noise that makes the sampler return `token_ids` ([batch, P])."""
  return 1e6 * tf.one_hot(token_ids, VOCAB)


def peaked_distribution_batch(masked_lm, rows=4000):
  """`rows` copies of `toy_batch()`'s first row, with `masked_lm`'s output bias set to a steep
  Zipf profile (p ∝ 1/rank², ranks in a fixed random order), so the MLM distribution π at each
  masked position has a head and a long tail."""
  rng = np.random.default_rng(0)
  ranks = rng.permutation(VOCAB) + 1
  masked_lm.bias.assign(-2.0 * np.log(ranks).astype(np.float32))
  return {k: tf.repeat(v[:1], rows, axis=0) for k, v in toy_batch().items()}


def goodness_of_fit(samples, probabilities):
  """Pearson χ² p-value of integer `samples` against `probabilities`, pooling the categories
  expected fewer than 5 times into one (so the χ² approximation holds)."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  expected = probabilities / probabilities.sum() * len(samples)
  observed = np.bincount(samples, minlength=len(probabilities)).astype(np.float64)
  small = expected < 5
  if small.any():
    expected = np.append(expected[~small], expected[small].sum())
    observed = np.append(observed[~small], observed[small].sum())
  return stats.chisquare(observed, expected).pvalue


def assert_samples_follow_mlm(test, model, masked_lm, temperature=1.0):
  """The `sampled_ids` of every masked slot of `model(batch)` follow softmax(mlm_logits / T)
  (fresh, unseeded draws, eval mode), and the check rejects a distribution that differs."""
  batch = peaked_distribution_batch(masked_lm)
  out = model(batch, training=False)
  logits = out["mlm_logits"].numpy().astype(np.float64)[0] / temperature  # [P, vocab]
  for slot in (0, 1):  # the two real masked positions of the row
    pi = np.exp(logits[slot] - logits[slot].max())
    pi /= pi.sum()
    test.assertGreater(pi.max(), 0.15)  # a peaked distribution, so a distortion shows
    samples = out["sampled_ids"].numpy()[:, slot]
    test.assertGreater(goodness_of_fit(samples, pi), 1e-4, f"slot {slot}")
    flattened = pi ** 0.8 / np.sum(pi ** 0.8)  # a mildly different distribution is rejected
    test.assertLess(goodness_of_fit(samples, flattened), 1e-6, f"slot {slot}")


class ElectraLossTest(tf.test.TestCase):

  def test_loss_equals_direct_computation(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_weight=50.0)
    batch = toy_batch()
    # Row 0: position 2 samples the original (11) -> not replaced; position 5 samples 30 ->
    # replaced. Row 1: position 3 samples 40 -> replaced.
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    outputs = model(batch, training=False)
    losses = model.compute_losses(batch, outputs)

    expected_labels = np.zeros([2, 8], np.float32)
    expected_labels[0, 5] = expected_labels[1, 3] = 1.0
    self.assertAllEqual(outputs["rtd_labels"], expected_labels)
    original = batch["input_word_ids"].numpy().copy()
    original[0, 2], original[0, 5], original[1, 3] = 11, 14, 22
    self.assertAllEqual(outputs["original_ids"], original)
    corrupted = original.copy()
    corrupted[0, 5], corrupted[1, 3] = 30, 40
    self.assertAllEqual(outputs["corrupted_ids"], corrupted)

    # L_MLM: mean over the 3 real masked positions of -log softmax(logits)[original].
    logits = outputs["mlm_logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    mlm = -(log_probs[0, 0, 11] + log_probs[0, 1, 14] + log_probs[1, 0, 22]) / 3
    # L_Disc: mean over the 14 non-pad positions of the sigmoid cross-entropy.
    z = outputs["rtd_logits"].numpy().astype(np.float64)
    y = expected_labels
    per_position = -(y * np.log(1 / (1 + np.exp(-z))) + (1 - y) * np.log(1 - 1 / (1 + np.exp(-z))))
    mask = batch["input_mask"].numpy()
    rtd = (per_position * mask).sum() / mask.sum()
    self.assertAllClose(losses["mlm_loss"].value, mlm, rtol=1e-5)
    self.assertAllClose(losses["rtd_loss"].value, rtd, rtol=1e-5)
    self.assertAllClose(losses["total_loss"].value, mlm + 50.0 * rtd, rtol=1e-5)

  def test_a_generator_only_warmup_counts_the_discriminator_from_its_step(self):
    """`rtd_start_step` (issue 72's screen): total = L_MLM before the step, L_MLM + λ·L_Disc from
    it on; the reported L_Disc is the same either way."""
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_start_step=3)
    step = tf.Variable(0, dtype=tf.int64)
    model.bind_step(lambda: step)
    batch = toy_batch()
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    outputs = model(batch, training=False)
    for value, weight in ((2, 0.0), (3, 50.0), (10, 50.0)):
      step.assign(value)
      losses = model.compute_losses(batch, outputs)
      self.assertAllClose(losses["total_loss"].value,
                          losses["mlm_loss"].value + weight * losses["rtd_loss"].value)
      self.assertGreater(float(losses["rtd_loss"].value), 0.0)
    with self.assertRaisesRegex(ValueError, "rtd_start_step = -1 must be an integer >= 0"):
      electra.build_electra_pretrainer(CONFIG, rtd_start_step=-1)

  def test_the_discriminators_masked_lm_by_hand_and_its_decay(self):
    """L_DMLM (issue 72): −log p_D(original) at the masked positions of the *corrupted* input,
    weighted by μ_t = μ·max(0, 1 − t/T); total = L_MLM + λ L_Disc + μ_t L_DMLM."""
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5,
                                             discriminator_mlm_weight=4.0,
                                             discriminator_mlm_steps=10)
    step = tf.Variable(0, dtype=tf.int64)
    model.bind_step(lambda: step)
    batch = toy_batch()
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    outputs = model(batch, training=False)
    # The logits read the corrupted sequence (30 at row 0 position 5, 40 at row 1 position 3).
    corrupted = dict(batch, input_word_ids=outputs["corrupted_ids"])
    sequence = model.discriminator(corrupted, training=False)["sequence_output"]
    self.assertAllClose(outputs["discriminator_mlm_logits"],
                        model.discriminator_lm(sequence, batch["masked_lm_positions"]))
    logits = outputs["discriminator_mlm_logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    d_mlm = -(log_probs[0, 0, 11] + log_probs[0, 1, 14] + log_probs[1, 0, 22]) / 3
    for value, weight in ((0, 4.0), (5, 2.0), (10, 0.0), (25, 0.0)):
      step.assign(value)
      losses = model.compute_losses(batch, outputs)
      self.assertAllClose(losses["discriminator_mlm_loss"].value, d_mlm, rtol=1e-5)
      self.assertAllClose(losses["total_loss"].value,
                          losses["mlm_loss"].value + 50.0 * losses["rtd_loss"].value
                          + weight * d_mlm, rtol=1e-5)
    # Its gradient trains the discriminator's layers, not the generator's (embeddings apart).
    step.assign(0)
    with tf.GradientTape() as tape:
      d_mlm_value = model.compute_losses(batch, model(batch, training=True))[
          "discriminator_mlm_loss"].value
    own = tape.gradient(d_mlm_value, model.discriminator.trainable_variables
                        + model.generator.trainable_variables)
    names = [v.name for v in model.discriminator.trainable_variables
             + model.generator.trainable_variables]
    reached = {n for n, g in zip(names, own) if g is not None}
    self.assertTrue(any("discriminator" in n and "transformer" in n for n in reached), reached)
    self.assertFalse([n for n in reached if n.startswith("generator/") and "embedding" not in n])
    with self.assertRaisesRegex(ValueError, "discriminator_mlm_weight = -1.0 must be >= 0"):
      electra.build_electra_pretrainer(CONFIG, discriminator_mlm_weight=-1.0)
    with self.assertRaisesRegex(ValueError, "discriminator_mlm_steps = -2 must be an integer"):
      electra.build_electra_pretrainer(CONFIG, discriminator_mlm_weight=1.0,
                                       discriminator_mlm_steps=-2)
    self.assertNotIn("discriminator_mlm_logits",
                     electra.build_electra_pretrainer(CONFIG)(toy_batch(), training=False))

  def test_a_masked_warmup_feeds_the_discriminator_the_masked_input_until_rtd_starts(self):
    """`masked_warmup`: before `rtd_start_step` the discriminator reads `[MASK]` where the
    generator's samples would go (its own MLM is then a plain masked LM), the samples after."""
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_start_step=3,
                                             discriminator_mlm_weight=1.0, masked_warmup=True)
    step = tf.Variable(0, dtype=tf.int64)
    model.bind_step(lambda: step)
    batch = toy_batch()
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    seen = []
    real_call = model.discriminator.call

    def spy(inputs, *args, **kwargs):
      seen.append(inputs["input_word_ids"].numpy().copy())
      return real_call(inputs, *args, **kwargs)

    model.discriminator.call = spy
    for value in (2, 3):
      step.assign(value)
      outputs = model(batch, training=False)
    self.assertAllEqual(seen[0], batch["input_word_ids"])  # step 2: the masked input
    self.assertAllEqual(seen[1], outputs["corrupted_ids"])  # step 3: the generator's samples
    self.assertNotAllEqual(seen[0], seen[1])
    with self.assertRaisesRegex(ValueError, "masked_warmup needs rtd_start_step > 0"):
      electra.build_electra_pretrainer(CONFIG, masked_warmup=True)
    for steps in (1, 3):  # μ would reach 0 by the time RTD starts: no loss for the discriminator
      with self.assertRaisesRegex(ValueError, f"discriminator_mlm_steps = {steps} must be 0 "
                                  r"\(constant\) or > rtd_start_step = 3 with masked_warmup"):
        electra.build_electra_pretrainer(CONFIG, rtd_start_step=3, discriminator_mlm_weight=1.0,
                                         discriminator_mlm_steps=steps, masked_warmup=True)
    for steps in (0, 4):
      electra.build_electra_pretrainer(CONFIG, rtd_start_step=3, discriminator_mlm_weight=1.0,
                                       discriminator_mlm_steps=steps, masked_warmup=True)

  def test_the_discriminators_masked_lm_head_stops_running_when_its_weight_is_zero(self):
    """From T_μ on the head is not called (its logits are zeros and its loss counts nothing);
    with a constant μ (T_μ = 0) it runs at every step."""
    for mlm_steps, runs_at in ((4, {0: True, 3: True, 4: False, 9: False}),
                               (0, {0: True, 9: True})):
      model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5,
                                               discriminator_mlm_weight=1.0,
                                               discriminator_mlm_steps=mlm_steps)
      step = tf.Variable(0, dtype=tf.int64)
      model.bind_step(lambda step=step: step)
      batch = toy_batch()
      model(batch, training=False)
      calls = []
      real_call = model.discriminator_lm.call
      model.discriminator_lm.call = lambda *a, **k: calls.append(1) or real_call(*a, **k)
      for value, expected in runs_at.items():
        step.assign(value)
        del calls[:]
        outputs = model(batch, training=False)
        losses = model.compute_losses(batch, outputs)
        self.assertEqual(bool(calls), expected, (mlm_steps, value))
        self.assertEqual(float(losses["discriminator_mlm_loss"].weight), 3.0 if expected else 0.0)
        if not expected:
          self.assertAllEqual(outputs["discriminator_mlm_logits"],
                              tf.zeros([2, 3, VOCAB]))

  def test_an_annealed_temperature_falls_linearly_from_detection_start(self):
    """`initial_temperature` T_0 (issue 86's screen, Fast-ELECTRA's descending schedule): T_0
    until detection starts at t_s = 5, then linearly to T = 1 over S = 10 steps; replacements
    follow softmax(logits / T_t)."""
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_start_step=5,
                                             initial_temperature=3.0, temperature_steps=10)
    step = tf.Variable(0, dtype=tf.int64)
    model.bind_step(lambda: step)
    for value, expected in ((0, 3.0), (5, 3.0), (7, 2.6), (10, 2.0), (15, 1.0), (40, 1.0)):
      step.assign(value)
      self.assertAllClose(model.sampling_temperature(), expected, msg=value)
    step.assign(10)
    batch = toy_batch()
    outputs = model(batch, training=False)
    assert_samples_follow_mlm(self, model, model.masked_lm, temperature=2.0)
    metrics = model.build_metrics()
    model.update_metrics(metrics, batch, outputs, model.compute_losses(batch, outputs))
    self.assertAllClose(metrics["sampling_temperature"].result(), 2.0)  # logged with the step's
    self.assertNotIn("sampling_temperature", electra.build_electra_pretrainer(CONFIG).build_metrics())
    constant = electra.build_electra_pretrainer(CONFIG, temperature=0.7)
    self.assertEqual(constant.sampling_temperature(), 0.7)
    for kwargs in (dict(initial_temperature=2.0), dict(initial_temperature=-1.0),
                   dict(initial_temperature=2.0, temperature_steps=5, temperature=0.0)):
      with self.assertRaisesRegex(ValueError, "initial_temperature = .* needs temperature_steps"):
        electra.build_electra_pretrainer(CONFIG, **kwargs)

  def test_a_generator_frozen_from_a_step_leaves_the_total_and_gets_no_gradient(self):
    """`generator_frozen_step` = 3 (issue 86's screen): total = L_MLM + λ L_Disc before, λ L_Disc
    from step 3 on (L_MLM still reported); the generator's own layers and head then get no
    gradient, the discriminator's still do."""
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, generator_frozen_step=3)
    step = tf.Variable(0, dtype=tf.int64)
    model.bind_step(lambda: step)
    batch = toy_batch()
    batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
    model(batch, training=False)
    shared = {v.ref() for v in model.discriminator.trainable_variables}
    own = [v for v in model.generator.trainable_variables + model.masked_lm.trainable_variables
           if v.ref() not in shared]
    self.assertNotEmpty(own)
    for value, mlm_weight in ((2, 1.0), (3, 0.0), (9, 0.0)):
      step.assign(value)
      with tf.GradientTape() as tape:
        losses = model.compute_losses(batch, model(batch, training=True))
      self.assertAllClose(losses["total_loss"].value, mlm_weight * losses["mlm_loss"].value
                          + 50.0 * losses["rtd_loss"].value, rtol=1e-5)
      self.assertGreater(float(losses["mlm_loss"].value), 0.0)
      own_grads, disc_grads = tape.gradient(
          losses["total_loss"].value, (own, model.discriminator.trainable_variables))
      moved = [g is not None and float(tf.reduce_max(tf.abs(g))) > 0 for g in own_grads]
      self.assertEqual(any(moved), bool(mlm_weight), value)
      self.assertTrue(all(g is not None for g in disc_grads))
    with self.assertRaisesRegex(ValueError, "generator_frozen_step must be >= 0"):
      electra.build_electra_pretrainer(CONFIG, generator_frozen_step=-1)

  def test_the_rtd_prior_sets_the_untrained_heads_replaced_fraction(self):
    """`rtd_prior` p (issue 72's screen): the head's bias starts at log(p / (1 − p)), so with a
    zero kernel σ(logit) = p on every token; 0.5 keeps ELECTRA's bias 0."""
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_prior=0.14)
    outputs = model(toy_batch(), training=False)
    self.assertAllClose(model.rtd_head.logit.bias.numpy(), [np.log(0.14 / 0.86)])
    model.rtd_head.logit.kernel.assign(tf.zeros_like(model.rtd_head.logit.kernel))
    logits = model.rtd_head(tf.random.normal([2, 8, CONFIG.hidden_size]))
    self.assertAllClose(tf.sigmoid(logits), tf.fill([2, 8], 0.14))
    self.assertIn("rtd_logits", outputs)
    default = electra.build_electra_pretrainer(CONFIG, generator_size=0.5)
    default(toy_batch(), training=False)
    self.assertAllClose(default.rtd_head.logit.bias.numpy(), [0.0])
    with self.assertRaisesRegex(ValueError, r"prior must be in \(0, 1\), got 1.0"):
      electra.build_electra_pretrainer(CONFIG, rtd_prior=1.0)

  def test_no_discriminator_gradient_reaches_the_generator(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, tie_embeddings=False)
    batch = toy_batch()
    with tf.GradientTape() as tape:
      outputs = model(batch, training=True)
      rtd = model.compute_losses(batch, outputs)["rtd_loss"].value
    grads = tape.gradient(rtd, model.generator.trainable_variables)
    self.assertTrue(all(g is None for g in grads))

  def test_replacements_follow_the_generator_softmax(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5)
    model(toy_batch(), training=False)
    assert_samples_follow_mlm(self, model, model.masked_lm)
    model.temperature = 2.0  # softmax(logits / T)
    assert_samples_follow_mlm(self, model, model.masked_lm, temperature=2.0)

  def test_disallow_correct(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, disallow_correct=True)
    batch = toy_batch()
    for _ in range(20):
      outputs = model(batch, training=False)
      sampled = outputs["sampled_ids"].numpy()
      self.assertNotEqual(sampled[0, 0], 11)
      self.assertNotEqual(sampled[1, 0], 22)
      self.assertEqual(outputs["rtd_labels"].numpy()[0, 2], 1.0)


class ElectraTyingTest(tf.test.TestCase):

  def _ids(self, variables):
    return {id(v) for v in variables}

  def test_tied_embeddings_share_token_position_type_and_layer_norm(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.25)
    model(toy_batch())
    gen, disc = model.generator, model.discriminator
    self.assertIs(gen.embeddings, disc.embeddings)
    self.assertEqual(self._ids(disc.embeddings.trainable_variables), self._ids(
        gen.embeddings.trainable_variables))
    self.assertLen(disc.embeddings.trainable_variables, 5)  # token, position, type, LN γ/β
    self.assertIs(model.masked_lm.embedding_table, disc.get_embedding_table())
    self.assertEqual(gen.config.hidden_size, 4)
    self.assertEqual(gen.config.intermediate_size, 8)
    self.assertEqual(gen.config.num_attention_heads, 1)  # round(2 * 0.25) clipped to 1
    self.assertEqual(gen.config.num_layers, 2)
    self.assertIsNot(gen.embedding_projection, disc.embedding_projection)

  def test_untied_and_tie_all(self):
    untied = electra.build_electra_pretrainer(CONFIG, tie_embeddings=False)
    untied(toy_batch())
    self.assertFalse(self._ids(untied.generator.embeddings.trainable_variables)
                     & self._ids(untied.discriminator.embeddings.trainable_variables))
    self.assertIs(untied.masked_lm.embedding_table, untied.generator.get_embedding_table())
    tied = electra.build_electra_pretrainer(CONFIG, generator_size=1.0, tie_all=True)
    self.assertIs(tied.generator, tied.discriminator)
    with self.assertRaisesRegex(ValueError, "tie_all needs a same-size generator"):
      electra.build_electra_pretrainer(CONFIG, generator_size=0.5, tie_all=True)


def copy_encoder_to_model_garden(mg_encoder, ours: transformer_encoder.TransformerEncoder):
  """Gives Model Garden's BertEncoder our encoder's weights."""
  emb = ours.embeddings
  for mg_layer, layer in [(mg_encoder._embedding_layer, emb.word_embeddings),
                          (mg_encoder._position_embedding_layer, emb.position_embeddings),
                          (mg_encoder._type_embedding_layer, emb.type_embeddings),
                          (mg_encoder._embedding_norm_layer, emb.layer_norm)]:
    mg_layer.set_weights(layer.get_weights())
  if ours.embedding_projection is not None:
    mg_encoder._embedding_projection.set_weights(ours.embedding_projection.get_weights())
  for mg_layer, layer in zip(mg_encoder._transformer_layers, ours.transformer_layers):
    model_garden.copy_weights_by_name(layer, mg_layer)


class ModelGardenParityTest(tf.test.TestCase):
  """Same weights, same sampled tokens: our L_MLM and L_RTD equal Model Garden's; with
  `embedding_sharing = "tokens"` (its sharing) every gradient does too."""

  SAMPLES = [[11, 30, 0], [40, 0, 0]]

  def _pair(self, embedding_sharing):
    """Ours and Model Garden's ElectraPretrainer (plus its two encoders) on the same weights."""
    ours = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_weight=50.0,
                                            embedding_sharing=embedding_sharing)
    ours(toy_batch(), training=False)

    def mg_encoder(config, embedding_layer=None):
      return mg_networks.BertEncoder(
          vocab_size=VOCAB, hidden_size=config.hidden_size, num_layers=config.num_layers,
          num_attention_heads=config.num_attention_heads, max_sequence_length=16,
          type_vocab_size=2, inner_dim=config.intermediate_size,
          inner_activation=transformer_encoder.gelu, output_dropout=0.0, attention_dropout=0.0,
          embedding_width=config.embedding_size, embedding_layer=embedding_layer,
          dict_outputs=True)

    mg_disc = mg_encoder(CONFIG)
    mg_gen = mg_encoder(ours.generator.config, embedding_layer=mg_disc.get_embedding_layer())
    mg_model = mg_models.ElectraPretrainer(
        generator_network=mg_gen, discriminator_network=mg_disc, vocab_size=VOCAB, num_classes=2,
        num_token_predictions=3, mlm_activation=transformer_encoder.gelu,
        mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
    mg_model(toy_batch())  # build
    copy_encoder_to_model_garden(mg_disc, ours.discriminator)
    # Model Garden ties only the token table: with "shared" its generator gets copies of the
    # shared rest, with "tokens" the generator's own.
    copy_encoder_to_model_garden(mg_gen, ours.generator)
    mg_model.masked_lm.set_weights(ours.masked_lm.get_weights())
    mg_model.discriminator_projection.set_weights(ours.rtd_head.dense.get_weights())
    mg_model.discriminator_head.set_weights(ours.rtd_head.logit.get_weights())
    return ours, mg_model, mg_disc, mg_gen

  def _losses(self, ours, mg_model):
    """(ours' outputs and losses, Model Garden's outputs, its metrics by name and total loss)."""
    batch = toy_batch()
    samples = tf.constant(self.SAMPLES)
    ours_out = ours(dict(batch, gumbel_noise=forcing_noise(samples)), training=False)
    ours_losses = ours.compute_losses(batch, ours_out)
    original_sampler = mg_electra_pretrainer.sample_from_softmax
    mg_electra_pretrainer.sample_from_softmax = (
        lambda logits, disallow=None: tf.one_hot(samples, VOCAB))
    try:
      mg_out = mg_model(batch)
    finally:
      mg_electra_pretrainer.sample_from_softmax = original_sampler
    task = mg_electra_task.ElectraPretrainTask(mg_electra_task.ElectraPretrainConfig(
        model=mg_electra_config.ElectraPretrainerConfig(discriminator_loss_weight=50.0),
        train_data=mg_pretrain_dataloader.BertPretrainDataConfig(use_next_sentence_label=False)))
    metrics = task.build_metrics()
    mg_total = task.build_losses(batch, mg_out, metrics)
    return ours_out, ours_losses, mg_out, {m.name: m.result() for m in metrics}, mg_total

  def test_losses_match_electra_pretrainer_and_electra_task(self):
    for sharing in ("shared", "tokens"):
      ours, mg_model, _, _ = self._pair(sharing)
      ours_out, ours_losses, mg_out, by_name, mg_total = self._losses(ours, mg_model)
      self.assertAllClose(mg_out["lm_outputs"], ours_out["mlm_logits"], atol=1e-5, msg=sharing)
      self.assertAllEqual(tf.cast(mg_out["disc_label"], tf.float32), ours_out["rtd_labels"])
      self.assertAllClose(mg_out["disc_logits"], ours_out["rtd_logits"], atol=1e-5, msg=sharing)
      self.assertAllClose(by_name["lm_example_loss"], ours_losses["mlm_loss"].value, rtol=1e-5)
      self.assertAllClose(by_name["discriminator_loss"], ours_losses["rtd_loss"].value,
                          rtol=1e-5)
      self.assertAllClose(mg_total, ours_losses["total_loss"].value, rtol=1e-5)

  def test_token_sharing_gradients_match_model_garden(self):
    ours, mg_model, mg_disc, mg_gen = self._pair("tokens")
    with tf.GradientTape(persistent=True) as tape:
      _, ours_losses, _, _, mg_total = self._losses(ours, mg_model)

    def embedding_weights(mg_encoder, encoder):
      return [(getattr(mg_encoder, name).trainable_weights, getattr(encoder.embeddings, role))
              for name, role in (("_embedding_layer", "word_embeddings"),
                                 ("_position_embedding_layer", "position_embeddings"),
                                 ("_type_embedding_layer", "type_embeddings"),
                                 ("_embedding_norm_layer", "layer_norm"))]

    pairs = embedding_weights(mg_disc, ours.discriminator) + embedding_weights(
        mg_gen, ours.generator) + [(mg_model.masked_lm.trainable_weights,
                                    ours.masked_lm)]
    mg_weights = [w for mg_list, _ in pairs for w in mg_list]
    our_weights = [w for _, layer in pairs for w in layer.trainable_weights]
    self.assertLen(our_weights, len(mg_weights))
    mg_grads = tape.gradient(mg_total, mg_weights)
    our_grads = tape.gradient(ours_losses["total_loss"].value, our_weights)
    for weight, mg_grad, our_grad in zip(our_weights, mg_grads, our_grads):
      self.assertGreater(float(tf.reduce_max(tf.abs(tf.convert_to_tensor(our_grad)))), 0.0,
                         weight.name)
      self.assertAllClose(tf.convert_to_tensor(mg_grad), tf.convert_to_tensor(our_grad),
                          rtol=1e-4, atol=1e-5, msg=weight.name)


if __name__ == "__main__":
  tf.test.main()
