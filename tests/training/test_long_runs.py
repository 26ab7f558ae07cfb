"""Long runs: an interrupted run resumes to exactly the uninterrupted one (dropout and generator
samples included), each non-finite policy does what it says, phases switch input and resume in
the right phase, the weight average is kept, evaluated and exported, accumulation counts updates."""
import functools
import os
import random

import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.interop import export
from official_rtd.methods import electra
from official_rtd.ops.losses import Loss
from official_rtd.training import optimization
from official_rtd.training import trainer as trainer_lib
from tests.training.test_trainer import make_records
from tests.training.test_trainer import RecordsTestCase
from tests.training.test_trainer import TINY

ELECTRA = functools.partial(electra.build_electra_pretrainer, generator_size=0.5)


def poisoned(step: int, once: bool, onwards: bool = False):
  """An ELECTRA whose RTD loss (and so its total) is NaN at `step` (only the first time, if
  `once`; and at every later step, if `onwards`)."""
  fired = tf.Variable(False)

  def model_fn(encoder_config):
    model = ELECTRA(encoder_config)
    compute_losses = model.compute_losses

    def compute(inputs, outputs):
      losses = compute_losses(inputs, outputs)
      current = model.training_step() + 1
      bad = current >= step if onwards else tf.equal(current, step)
      if once:
        bad = tf.logical_and(bad, tf.logical_not(fired))
        fired.assign(tf.logical_or(fired, bad))
      poison = tf.where(bad, np.nan, 1.0)
      losses["rtd_loss"] = Loss(losses["rtd_loss"].value * poison, losses["rtd_loss"].weight)
      losses["total_loss"] = Loss(losses["total_loss"].value * poison,
                                  losses["total_loss"].weight)
      return losses

    model.compute_losses = compute
    return model
  return model_fn


def interrupt_at(step: int, lines: list):
  """A log function that records lines and raises KeyboardInterrupt (what SIGTERM becomes in the
  CLIs) when step `step` is logged."""
  def log(line):
    lines.append(line)
    if line.startswith(f"step {step}/"):
      raise KeyboardInterrupt
  return log


def state(trainer):
  """Every variable of a run: weights, optimizer step and slots, skip counters."""
  return [v.numpy() for v in trainer.model.weights + trainer.optimizer.variables()]


class LongRunTest(RecordsTestCase):
  PARAGRAPHS = 150

  def _trainer(self, name, steps=8, model_fn=ELECTRA, log=None, **train):
    values = dict(train_batch_size=8, num_train_steps=steps, max_seq_length=64,
                  max_predictions_per_seq=10, save_checkpoints_steps=4, log_every_steps=1,
                  shuffle_buffer_size=50, seed=5)
    values.update(train)
    return runs.build_trainer(
        os.path.join(self.tmp, name), self.records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(**values),
        optimizer_config=optimization.OptimizerConfig(learning_rate=2e-3, warmup_steps=2),
        encoder_config=TINY, model_fn=model_fn, log=log or (lambda _: None))

  def _assert_stops_before_saving(self, trainer, message: str, last_checkpoint: str):
    """`trainer.train()` raises NonFiniteError matching `message`, and its latest checkpoint is
    still `last_checkpoint` (nothing of the failing steps was saved)."""
    with self.assertRaisesRegex(trainer_lib.NonFiniteError, message):
      trainer.train()
    self.assertEqual(tf.train.latest_checkpoint(trainer.model_dir),
                     os.path.join(trainer.model_dir, last_checkpoint))

  def _interrupted_then_resumed(self, name, at, **train):
    lines = []
    with self.assertRaises(KeyboardInterrupt):
      self._trainer(name, log=interrupt_at(at, lines), **train).train()
    self.assertIn(f"interrupted at step {at}: saved that step; re-run the same command to resume",
                  lines)
    resumed = self._trainer(name, log=lines.append, **train)
    self.assertEqual(resumed.restore(), at)
    resumed.train()
    return resumed, lines

  def test_an_interrupted_run_resumes_to_exactly_the_uninterrupted_one(self):
    at = random.Random().randint(1, 7)  # any step, with dropout and generator sampling on
    self.assertGreater(TINY.dropout_rate, 0)
    straight = self._trainer("straight")
    straight.train()
    resumed, _ = self._interrupted_then_resumed(f"interrupted_{at}", at)
    for a, b in zip(state(straight), state(resumed)):
      self.assertAllEqual(a, b, msg=f"interrupted at step {at}")

  def test_nonfinite_stop_names_step_loss_and_last_checkpoint(self):
    trainer = self._trainer("stop", steps=6, save_checkpoints_steps=2, on_nonfinite="stop",
                            model_fn=poisoned(3, once=False))
    self._assert_stops_before_saving(
        trainer, r"total_loss and rtd_loss are not finite at step 3 \(learning rate .*\): the "
        r"update was not applied and the run stopped \(TrainConfig.on_nonfinite = 'stop'\); the "
        r"last checkpoint is .*ckpt-2\. Lower the learning rate", "ckpt-2")

  def test_nonfinite_skip_goes_on_and_counts(self):
    lines = []
    trainer = self._trainer("skip", steps=6, save_checkpoints_steps=2,
                            model_fn=poisoned(3, once=False), log=lines.append)
    self.assertEqual(trainer.train_config.on_nonfinite, "skip")  # the default
    last = trainer.train()
    self.assertEqual(last["step"], 6)
    self.assertEqual(int(trainer.step_fn.skipped_steps), 1)
    self.assertTrue([l for l in lines if l.startswith(
        "skipped the update of step 3: total_loss and rtd_loss are not finite at step 3")], lines)
    self.assertTrue([l for l in lines if l.startswith("step 6/6") and "skipped_steps=1" in l])
    # The interval of the skipped step has no figures to show (rather than zeros).
    self.assertTrue([l for l in lines if l.startswith("step 3/6 (every step since the last line "
                                                      "skipped) lr=")], lines)
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(trainer.model_dir))
    self.assertEqual(int(reader.get_tensor("train_state/skipped_steps/.ATTRIBUTES/"
                                           "VARIABLE_VALUE")), 1)
    for name in reader.get_variable_to_shape_map():  # no non-finite value was saved
      value = reader.get_tensor(name)
      if getattr(value, "dtype", None) is not None and value.dtype.kind == "f":
        self.assertTrue(np.all(np.isfinite(value)), name)

  def test_nonfinite_skip_stops_after_patience_in_a_row(self):
    trainer = self._trainer("skip_patience", steps=8, save_checkpoints_steps=2,
                            nonfinite_patience=2, model_fn=poisoned(3, once=False, onwards=True))
    self._assert_stops_before_saving(
        trainer, r"not finite at step 4 .*: 2 updates in a row skipped \(TrainConfig."
        r"nonfinite_patience = 2\); the last checkpoint is .*ckpt-2\.", "ckpt-2")

  def test_nonfinite_rollback_restores_the_last_checkpoint_and_goes_on(self):
    lines = []
    trainer = self._trainer("rollback", steps=6, save_checkpoints_steps=2,
                            on_nonfinite="rollback", model_fn=poisoned(3, once=True),
                            log=lines.append)
    trainer.train()
    self.assertEqual(trainer.step, 6)
    self.assertEqual(trainer.nonfinite.rollbacks, 1)
    self.assertTrue([l for l in lines if "not finite at step 3" in l
                     and "rolled back to " + os.path.join(trainer.model_dir, "ckpt-2") in l])
    # A fault at every visit of step 3 exhausts the patience.
    stuck = self._trainer("rollback_stuck", steps=6, save_checkpoints_steps=2,
                          on_nonfinite="rollback", nonfinite_patience=2,
                          model_fn=poisoned(3, once=False))
    with self.assertRaisesRegex(trainer_lib.NonFiniteError, r"2 rollbacks already"):
      stuck.train()

  def test_phase_switch_kill_in_the_second_phase_and_resume(self):
    short = make_records(os.path.join(self.tmp, "records32"), paragraphs=100, max_seq_length=32)
    phases = ({"start_step": 4, "input_records": short, "max_seq_length": 32,
               "train_batch_size": 4},)
    lines = []
    straight = self._trainer("phases", phases=phases, log=lines.append)
    straight.train()
    self.assertIn(f"phase 2 of 2 from step 4: {short}, batch 4 × 32 tokens", lines)
    flops = straight.model.train_flops_per_example
    self.assertAllClose(straight.train_flops(8), 4 * 8 * flops(64, 10) + 4 * 4 * flops(32, 10))
    resumed, _ = self._interrupted_then_resumed("phases_killed", 6, phases=phases)
    self.assertEqual(resumed.inputs.phase_at(6).max_seq_length, 32)
    for a, b in zip(state(straight), state(resumed)):
      self.assertAllEqual(a, b)

  def test_bad_policies_are_refused(self):
    with self.assertRaisesRegex(ValueError, r"TrainConfig.on_nonfinite = 'retry' must be one of "
                                r"\('skip', 'rollback', 'stop'\)"):
      trainer_lib.TrainConfig(on_nonfinite="retry")
    with self.assertRaisesRegex(ValueError, r"TrainConfig.nonfinite_patience = 0 must be >= 1"):
      trainer_lib.TrainConfig(nonfinite_patience=0)
    with self.assertRaisesRegex(ValueError, r"TrainConfig.gradient_accumulation_steps = 0 must "
                                r"be >= 1"):
      trainer_lib.TrainConfig(gradient_accumulation_steps=0)

  def test_bad_phases_are_refused(self):
    with self.assertRaisesRegex(ValueError, r"TrainConfig.phases\[0\] has unknown keys \['lr'\]"):
      trainer_lib.TrainConfig(num_train_steps=10, phases=({"start_step": 5, "lr": 1},))
    with self.assertRaisesRegex(ValueError, r"start_step'\] = 10 must be an int after"):
      trainer_lib.TrainConfig(num_train_steps=10, phases=({"start_step": 10},))
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError,
                                r"max_seq_length 128 exceeds max_position_embeddings 64"):
      self._trainer("long_phase", phases=({"start_step": 4, "max_seq_length": 128},))

  def test_weight_average_is_checkpointed_evaluated_and_exported(self):
    trainer = self._trainer("ema", steps=4, ema_decay=0.5)
    trainer.train()
    averaged = export.load_encoder(os.path.join(trainer.model_dir, trainer_lib.EMA_EXPORT_DIR))
    raw = export.load_encoder(os.path.join(trainer.model_dir, export.EXPORT_DIR))
    with trainer.weight_average.swapped_in():
      for a, b in zip(averaged.weights, trainer.model.discriminator.weights):
        self.assertAllEqual(a, b)
    for a, b in zip(raw.weights, trainer.model.discriminator.weights):
      self.assertAllEqual(a, b)
    self.assertNotAllClose(averaged.weights[0], raw.weights[0])
    restored = self._trainer("ema", steps=4, ema_decay=0.5)
    restored.restore()
    for a, b in zip(trainer.weight_average.averages, restored.weight_average.averages):
      self.assertAllEqual(a, b)

  def test_accumulation_counts_updates(self):
    trainer = self._trainer("accumulated", steps=3, train_batch_size=4,
                            gradient_accumulation_steps=2)
    last = trainer.train()
    self.assertEqual(last["step"], 3)
    self.assertEqual(int(trainer.optimizer.iterations), 3)
    self.assertAllClose(trainer.train_flops(3),
                        3 * 2 * 4 * trainer.model.train_flops_per_example(64, 10))
    batch = next(trainer.iterator)  # the input yields whole updates: 2 micro-batches of 4
    self.assertEqual(batch["input_word_ids"].shape[0], 8)


if __name__ == "__main__":
  tf.test.main()
