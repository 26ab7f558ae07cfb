"""An exponential moving average of the weights (Polyak averaging; the LTG-BERT/GPT-BERT recipes
keep one with decay 0.999): after every applied step, average ← decay·average + (1 − decay)·w.
It is saved in the checkpoint, swapped in for held-out evaluation, and exported on request
(`export_model --ema`)."""
import contextlib
from typing import List

import tensorflow as tf


class WeightAverage:
  """The average of `variables` (create it under the strategy's scope).

  Args:
    variables: the weights to average (the model's trainable variables).
    decay: in (0, 1).
  """

  def __init__(self, variables: List[tf.Variable], decay: float):
    if not 0.0 < decay < 1.0:
      raise ValueError(f"the weight average's decay must be in (0, 1), got {decay}")
    self.decay = decay
    self.variables = list(variables)
    self.averages = [tf.Variable(v, trainable=False, name="average/" + v.name.split(":")[0])
                     for v in self.variables]

  def checkpoint(self) -> tf.train.Checkpoint:
    """The averages, keyed by their variables' positions, for a `tf.train.Checkpoint`."""
    return tf.train.Checkpoint(**{f"v{i}": a for i, a in enumerate(self.averages)})

  def update(self):
    """average ← average − (1 − decay)·(average − w), for every variable."""
    for average, variable in zip(self.averages, self.variables):
      average.assign_sub((1.0 - self.decay) * (average - tf.cast(variable, average.dtype)))

  def reset(self):
    """Starts the average at the current weights (after a warm start)."""
    for average, variable in zip(self.averages, self.variables):
      average.assign(variable)

  @contextlib.contextmanager
  def swapped_in(self):
    """Inside, the variables hold the averages; afterwards their own values again."""
    saved = [tf.identity(v) for v in self.variables]
    for average, variable in zip(self.averages, self.variables):
      variable.assign(average)
    try:
      yield
    finally:
      for value, variable in zip(saved, self.variables):
        variable.assign(value)
