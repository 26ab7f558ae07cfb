"""ELECTRA's alternative training algorithms (dissertation §5.3.3–5.3.4): adversarial REINFORCE
with a learned baseline, and two-stage training."""
import dataclasses
import os
import tempfile

import gin
import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.methods import electra
from official_rtd.methods import electra_adversarial
from official_rtd.methods import mlm
from official_rtd.training import trainer as trainer_lib
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import forcing_noise
from tests.methods.test_electra import toy_batch
from tests.training.test_trainer import make_records
from tests.training.test_trainer import text_trainer
from tests.training.test_trainer import TINY


def softplus(x):
  return np.logaddexp(0.0, x)


class AdversarialTest(tf.test.TestCase):

  def test_reinforce_losses_by_hand(self):
    model = electra_adversarial.build_adversarial_electra_pretrainer(
        CONFIG, generator_size=0.5, mle_weight=0.25)
    batch = toy_batch()
    sampled = tf.constant([[11, 30, 0], [40, 0, 0]])  # row 0 pos 2 keeps the original
    batch["gumbel_noise"] = forcing_noise(sampled)
    with tf.GradientTape() as tape:
      out = model(batch, training=False)
      tape.watch(out["mlm_logits"])
      losses = model.compute_losses(batch, out)
    positions, weights = batch["masked_lm_positions"].numpy(), batch["masked_lm_weights"].numpy()
    rtd = np.take_along_axis(out["rtd_logits"].numpy(), positions, 1)
    kept = np.array([[True, False, True], [False, True, True]])
    reward = np.where(kept, softplus(rtd), softplus(-rtd))       # −log D or −log(1 − D)
    z = out["baseline_logits"].numpy()
    baseline = softplus(-z)
    log_q = np.take_along_axis(tf.nn.log_softmax(out["mlm_logits"]).numpy(),
                               sampled.numpy()[..., None], 2)[..., 0]
    n = weights.sum()
    policy = (-log_q * (reward - baseline) * weights).sum() / n
    target = np.exp(-reward)
    baseline_loss = ((softplus(z) - target * z) * weights).sum() / n  # sigmoid cross-entropy
    self.assertAllClose(losses["policy_loss"].value, policy, rtol=1e-5)
    self.assertAllClose(losses["baseline_loss"].value, baseline_loss, rtol=1e-5)
    self.assertAllClose(losses["mean_reward"].value, (reward * weights).sum() / n, rtol=1e-5)
    self.assertAllClose(losses["total_loss"].value, policy + 0.25 * losses["mlm_loss"].value + baseline_loss
                        + 50 * losses["rtd_loss"].value, rtol=1e-5)

  def test_policy_and_baseline_losses_send_no_gradient_into_the_discriminator(self):
    for tie in (False, True):
      model = electra_adversarial.build_adversarial_electra_pretrainer(
          CONFIG, generator_size=0.5, embedding_sharing="shared" if tie else "none")
      batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
      with tf.GradientTape(persistent=True) as tape:
        losses = model.compute_losses(batch, model(batch, training=False))
      shared = {id(v) for v in model.generator.trainable_variables}  # tied embeddings
      discriminator = [v for v in model.discriminator.trainable_variables
                       + model.rtd_head.trainable_variables if id(v) not in shared]
      self.assertNotEmpty(discriminator)
      for name, trained in (("policy_loss", model.generator.transformer_layers[0]),
                            ("baseline_loss", model.baseline_head)):
        grads = tape.gradient(losses[name].value, discriminator)
        self.assertTrue(all(g is None or not np.any(tf.convert_to_tensor(g).numpy())
                            for g in grads), f"{name} reaches the discriminator (tie={tie})")
        own = tape.gradient(losses[name].value, trained.trainable_variables)
        self.assertTrue(any(g is not None and np.any(tf.convert_to_tensor(g).numpy())
                            for g in own), f"{name} trains nothing (tie={tie})")
      # The discriminator does learn from its own loss.
      self.assertTrue(any(g is not None for g in tape.gradient(losses["rtd_loss"].value,
                                                               discriminator)))

  def test_policy_gradient_direction(self):
    """The generator's logits move toward samples with reward above the baseline: the policy
    loss's gradient on the logits is −(onehot(x̂) − q)·(R − b)/n."""
    model = electra_adversarial.build_adversarial_electra_pretrainer(CONFIG, generator_size=0.5)
    batch = toy_batch()
    sampled = tf.constant([[11, 30, 0], [40, 0, 0]])
    batch["gumbel_noise"] = forcing_noise(sampled)
    out = model(batch, training=False)
    logits = tf.Variable(out["mlm_logits"])
    with tf.GradientTape() as tape:
      losses = model.compute_losses(batch, dict(out, mlm_logits=logits))
    grad = tape.gradient(losses["policy_loss"].value, logits).numpy()
    rtd = np.take_along_axis(out["rtd_logits"].numpy(), batch["masked_lm_positions"].numpy(), 1)
    kept = np.array([[True, False, True], [False, True, True]])
    reward = np.where(kept, softplus(rtd), softplus(-rtd))
    adv = reward - softplus(-out["baseline_logits"].numpy())
    q = tf.nn.softmax(out["mlm_logits"]).numpy()
    onehot = np.eye(q.shape[-1])[sampled.numpy()]
    weights = batch["masked_lm_weights"].numpy()
    expected = -(onehot - q) * (adv * weights / weights.sum())[..., None]
    self.assertAllClose(grad, expected, atol=1e-6)

  def test_trains_on_real_text(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=200)
    trainer, logged = text_trainer(
        os.path.join(tmp, "adv"), records,
        electra_adversarial.build_adversarial_electra_pretrainer, steps=60)
    trainer.train()
    # The baseline learns to predict the reward; the discriminator still learns.
    self.assertLess(logged[-1]["baseline_loss"], logged[0]["baseline_loss"], logged)
    self.assertLess(logged[-1]["rtd_loss"], logged[0]["rtd_loss"], logged)


class TwoStageTest(tf.test.TestCase):

  def test_stage_two_starts_from_stage_one_and_freezes_the_generator(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=100)
    config = trainer_lib.TrainConfig(train_batch_size=8, num_train_steps=4, max_seq_length=64,
                                     max_predictions_per_seq=10, log_every_steps=4,
                                     save_checkpoints_steps=4)
    stage1 = runs.build_trainer(os.path.join(tmp, "stage1"), records,
                                tf.distribute.get_strategy(), train_config=config,
                                encoder_config=TINY, model_fn=mlm.build_mlm_pretrainer,
                                log=lambda _: None)
    stage1.train()
    runs.parse_gin(["gin/models/tiny.gin", "gin/tasks/electra_two_stage.gin"],
                              [f"STAGE1_MODEL_DIR = '{os.path.join(tmp, 'stage1')}'"])
    stage2 = runs.build_trainer(os.path.join(tmp, "stage2"), records,
                                tf.distribute.get_strategy(), train_config=config,
                                encoder_config=TINY, log=lambda _: None)
    model = stage2.model
    source = stage1.model.encoder.variables
    for encoder in (model.generator, model.discriminator):
      self.assertLen(encoder.variables, len(source))
      for v, expected in zip(encoder.variables, source):
        self.assertAllEqual(v.numpy(), expected.numpy(), v.name)
    for v, expected in zip(model.masked_lm.variables, stage1.model.masked_lm.variables):
      self.assertAllEqual(v.numpy(), expected.numpy(), v.name)
    frozen_variables = model.generator.variables + model.masked_lm.variables
    frozen = {v.ref(): v.numpy() for v in frozen_variables}
    trainable = {v.ref() for v in model.trainable_variables}
    self.assertFalse(trainable & set(frozen))
    disc_before = model.discriminator.variables[3].numpy()
    stage2.train()
    for v in frozen_variables:
      self.assertAllEqual(v.numpy(), frozen[v.ref()], v.name)
    self.assertNotAllClose(model.discriminator.variables[3].numpy(), disc_before)
    # Pointed at an ELECTRA run instead of an MLM one: one line, without TensorFlow's
    # per-value restore warnings (hundreds of lines) before it.
    with self.assertNoLogs("tensorflow", level="WARNING"):
      with self.assertRaisesRegex(ValueError, r"generator_init_checkpoint .*stage2.* does not fit "
                                  r"this model's generator \(it must be a masked-LM run"):
        electra.build_electra_pretrainer(dataclasses.replace(TINY, vocab_size=stage2.vocab.size),
                                         generator_size=1.0, embedding_sharing="none",
                                         generator_init_checkpoint=os.path.join(tmp, "stage2"))
    gin.clear_config()
    with self.assertRaisesRegex(ValueError, r"gin/tasks/electra_two_stage.gin uses "
                                r"%STAGE1_MODEL_DIR, which nothing binds: pass "
                                r"--gin_param=\"STAGE1_MODEL_DIR = '<value>'\""):
      runs.parse_gin(["gin/models/tiny.gin", "gin/tasks/electra_two_stage.gin"])
    gin.clear_config()

  def test_errors(self):
    with self.assertRaisesRegex(ValueError, "freeze_generator needs embedding_sharing"):
      electra.build_electra_pretrainer(CONFIG, freeze_generator=True)
    with self.assertRaisesRegex(ValueError, "needs a generator of the discriminator's size"):
      electra.build_electra_pretrainer(CONFIG, generator_init_checkpoint="/x")
    with self.assertRaisesRegex(ValueError, "generator_init_checkpoint='/nonexistent': no "):
      electra.build_electra_pretrainer(CONFIG, generator_size=1.0,
                                       generator_init_checkpoint="/nonexistent")


if __name__ == "__main__":
  tf.test.main()
