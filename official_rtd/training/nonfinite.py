"""What a pre-training run does about a non-finite loss, gradient norm or weight
(`TrainConfig.on_nonfinite`, docs/long_runs.md).

A step whose loss or gradient norm is not finite never changes a weight (`train_step.TrainStep`
skips it). Then "skip" goes on with the next batch (and stops after `nonfinite_patience` such
steps in a row), "rollback" restores the last checkpoint and goes on with the next batches (and
stops after `nonfinite_patience` rollbacks), "stop" stops at once. Before every save the weights
are checked, so a checkpoint or export never holds a non-finite value. Each message names the
step, the loss and the learning rate, the last checkpoint and what to change.
"""
from typing import Callable, Optional

import tensorflow as tf

from official_rtd.training.errors import NonFiniteError


class NonFinitePolicy:
  """`TrainConfig.on_nonfinite` for a run's `train_step.TrainStep` (`step_fn`).

  Args:
    checkpointer: the run's `checkpointing.Checkpointer` (the last checkpoint, the rollback).
    base_learning_rate: `OptimizerConfig.learning_rate`, quoted in the advice.
  """

  def __init__(self, train_config, step_fn, optimizer, checkpointer, base_learning_rate: float,
               log: Callable[[str], None] = print):
    self.config = train_config
    self.step_fn = step_fn
    self.optimizer = optimizer
    self.checkpointer = checkpointer
    self.base_learning_rate = base_learning_rate
    self.log = log
    self.rollbacks = 0

  def weights_finite(self) -> bool:
    return all(bool(tf.reduce_all(tf.math.is_finite(v)))
               for v in self.step_fn.model.trainable_variables)

  def learning_rate(self, step: Optional[int] = None) -> float:
    """The learning rate of step `step` (1-based; default: the last step taken)."""
    rate = self.optimizer.learning_rate
    step = int(self.optimizer.iterations.numpy()) if step is None else step
    return float(rate(step - 1)) if callable(rate) else float(rate)

  def advice(self) -> str:
    return (f"the last checkpoint is {self.checkpointer.latest() or 'none'}. Lower the learning "
            f"rate (OptimizerConfig.learning_rate = {self.base_learning_rate:g}) or lengthen the "
            "warmup, and re-run")

  def check_weights(self, step: int) -> None:
    """Stops the run, before any checkpoint or export is written, when a weight is not finite."""
    if not self.weights_finite():
      raise NonFiniteError(f"a weight is not finite by step {step} (learning rate "
                           f"{self.learning_rate():.3g}): the run stopped before writing a "
                           f"checkpoint of it; {self.advice()}")

  def after_skip(self) -> bool:
    """After a call in which an update was skipped, applies the policy; returns True when it
    rolled the run back to the last checkpoint (the caller repositions its input).

    Raises:
      NonFiniteError: "stop", or the patience is spent.
    """
    cfg, fn = self.config, self.step_fn
    at = int(fn.nonfinite_step.numpy())
    names = [name for name, bad in zip(fn.loss_names, fn.nonfinite_losses.numpy()) if bad]
    what = (f"{' and '.join(names) or 'the gradient norm'} {'are' if len(names) > 1 else 'is'} "
            f"not finite at step {at} (learning rate {self.learning_rate(at):.3g})")
    if cfg.on_nonfinite == "stop":
      raise NonFiniteError(f"{what}: the update was not applied and the run stopped "
                           f"(TrainConfig.on_nonfinite = 'stop'); {self.advice()}")
    if cfg.on_nonfinite == "skip":
      in_a_row = int(fn.consecutive_skips.numpy())
      if in_a_row >= cfg.nonfinite_patience:
        raise NonFiniteError(f"{what}: {in_a_row} updates in a row skipped "
                             f"(TrainConfig.nonfinite_patience = {cfg.nonfinite_patience}); "
                             f"{self.advice()}")
      self.log(f"skipped the update of step {at}: {what} ({int(fn.skipped_steps.numpy())} "
               "skipped in all)")
      return False
    latest = self.checkpointer.latest()
    self.rollbacks += 1
    if not latest or self.rollbacks > cfg.nonfinite_patience:
      raise NonFiniteError(f"{what}: " + (
          f"{self.rollbacks - 1} rollbacks already (TrainConfig.nonfinite_patience = "
          f"{cfg.nonfinite_patience})" if latest else "no checkpoint to roll back to yet") +
          f"; {self.advice()}")
    self.checkpointer.rollback()
    self.log(f"{what}: rolled back to {latest} (rollback {self.rollbacks} of at most "
             f"{cfg.nonfinite_patience}), going on with the next batches")
    return True
