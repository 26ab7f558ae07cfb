"""The training step: k accumulated micro-batches equal one batch of k·b; a non-finite step changes
nothing; the weight average follows its recurrence."""
import functools

import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.data import pretrain_dataloader
from official_rtd.methods import electra
from official_rtd.methods import mlm
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.ops.losses import Loss
from official_rtd.training import optimization
from official_rtd.training import trainer as trainer_lib
from tests.training.test_trainer import RecordsTestCase

NO_DROPOUT = EncoderConfig(hidden_size=32, num_layers=1, num_attention_heads=2,
                           intermediate_size=64, embedding_size=32, max_position_embeddings=64,
                           dropout_rate=0.0, attention_dropout_rate=0.0)
BATCH = 8


def slots(trainer):
  return [trainer.optimizer.get_slot(v, s).numpy() for v in trainer.model.trainable_variables
          for s in ("m", "v")]


class TrainStepTest(RecordsTestCase):
  PARAGRAPHS = 60

  def setUp(self):
    super().setUp()
    self.batch = next(iter(pretrain_dataloader.load_pretraining_dataset(
        pretrain_dataloader.PretrainInputConfig(self.records, BATCH, 64, 10, is_training=False))))

  def _trainer(self, model_fn, k=1, **train):
    return runs.build_trainer(
        self.get_temp_dir(), self.records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(
            train_batch_size=BATCH // k, num_train_steps=10, max_seq_length=64,
            max_predictions_per_seq=10, gradient_accumulation_steps=k, **train),
        optimizer_config=optimization.OptimizerConfig(learning_rate=1e-3, warmup_steps=0),
        encoder_config=NO_DROPOUT, model_fn=model_fn, log=lambda _: None)

  def _one_update(self, trainer, batch):
    losses = tf.function(lambda b: trainer.step_fn(b))(batch)
    return ({name: float(loss.value) for name, loss in losses.items()},
            {name: float(metric.result()) for name, metric in trainer.metrics.items()})

  def test_k_micro_batches_equal_one_batch_of_k_times_b(self):
    methods = {"electra": functools.partial(electra.build_electra_pretrainer, generator_size=0.5),
               "mlm": mlm.build_mlm_pretrainer}
    for name, model_fn in methods.items():
      whole, accumulated = self._trainer(model_fn), self._trainer(model_fn, k=4)
      accumulated.model.set_weights(whole.model.get_weights())
      # The same generator samples for both: fixed Gumbel noise per example.
      noise = np.random.default_rng(0).gumbel(
          size=[BATCH, 10, whole.encoder_config.vocab_size]).astype(np.float32)
      # Micro-batches with unequal masked counts (as rows of short documents have), so a mean
      # per micro-batch would differ from the batch's mean.
      weights = self.batch["masked_lm_weights"].numpy()
      weights[:2, 4:] = 0.0
      batch = dict(self.batch, gumbel_noise=noise, masked_lm_weights=weights)
      losses, metrics = self._one_update(whole, batch)
      k_losses, k_metrics = self._one_update(accumulated, batch)
      for loss in ("total_loss", "mlm_loss"):
        self.assertAllClose(losses[loss], k_losses[loss], rtol=1e-5, msg=name)
        self.assertAllClose(metrics[loss], k_metrics[loss], rtol=1e-5, msg=name)
      self.assertAllClose(metrics["mlm_accuracy"], k_metrics["mlm_accuracy"], msg=name)
      self.assertEqual(int(accumulated.optimizer.iterations), 1)
      for a, b in zip(whole.model.get_weights(), accumulated.model.get_weights()):
        self.assertAllClose(a, b, atol=1e-6, rtol=1e-5, msg=name)
      for a, b in zip(slots(whole), slots(accumulated)):
        self.assertAllClose(a, b, atol=1e-9, rtol=1e-4, msg=name)

  def test_a_step_with_a_non_finite_loss_changes_no_weight_and_is_counted(self):
    trainer = self._trainer(functools.partial(electra.build_electra_pretrainer,
                                              generator_size=0.5))
    compute_losses = trainer.model.compute_losses

    def poisoned(inputs, outputs):
      losses = compute_losses(inputs, outputs)
      rtd = losses["rtd_loss"]
      losses["rtd_loss"] = Loss(rtd.value * np.nan, rtd.weight)
      losses["total_loss"] = Loss(losses["total_loss"].value * np.nan, rtd.weight)
      return losses

    self._one_update(trainer, self.batch)  # one real step, so the slots are not all zero
    weights, before = trainer.model.get_weights(), slots(trainer)
    trainer.model.compute_losses = poisoned
    trainer.metrics["rtd_loss"].reset_state()
    self._one_update(trainer, self.batch)
    for a, b in zip(weights, trainer.model.get_weights()):
      self.assertAllEqual(a, b)
    for a, b in zip(before, slots(trainer)):
      self.assertAllEqual(a, b)
    step_fn = trainer.step_fn
    self.assertEqual(int(trainer.optimizer.iterations), 2)  # the schedule moves on
    self.assertEqual(int(step_fn.skipped_steps), 1)
    self.assertEqual(int(step_fn.nonfinite_step), 2)
    flagged = [n for n, bad in zip(step_fn.loss_names, step_fn.nonfinite_losses.numpy()) if bad]
    self.assertCountEqual(flagged, ["rtd_loss", "total_loss"])
    self.assertEqual(float(trainer.metrics["rtd_loss"].count), 0.0)  # kept out of the metrics

  def test_weight_average_follows_its_recurrence(self):
    trainer = self._trainer(mlm.build_mlm_pretrainer, ema_decay=0.9)
    variables = trainer.model.trainable_variables
    expected = [v.numpy() for v in variables]
    step = tf.function(lambda b: trainer.step_fn(b))
    for _ in range(3):
      step(self.batch)
      expected = [0.9 * a + 0.1 * v.numpy() for a, v in zip(expected, variables)]
    averages = trainer.weight_average.averages
    for a, b in zip(expected, averages):
      self.assertAllClose(a, b, atol=1e-6)
    current = [v.numpy() for v in variables]
    with trainer.weight_average.swapped_in():
      self.assertAllClose(variables[0], averages[0])
    for a, v in zip(current, variables):
      self.assertAllEqual(a, v)


if __name__ == "__main__":
  tf.test.main()
