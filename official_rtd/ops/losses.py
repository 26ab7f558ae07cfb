"""Loss reductions that stay exact under data-parallel distribution strategies and gradient
accumulation, and the `Loss` every pre-training method returns (a value with the count it averages
over).

Every loss is Σ(values·weights) / Σweights over the *global* batch. Across replicas the
denominator is an all-reduce. Across the micro-batches of an accumulated step it cannot be (they
run one after another), so the trainer first totals each reduction's count over the micro-batches
(`counting_denominators`), then runs each micro-batch with those totals (`fixed_denominators`):
the gradients summed over micro-batches are then those of one batch of k·b.
"""
import contextlib
import threading
from typing import List, NamedTuple, Optional

import tensorflow as tf


class Loss(NamedTuple):
  """One loss term of a batch: `value`, this replica's share of the global-batch mean (as
  `global_weighted_mean` returns it), and `weight`, the global count it averages over (masked
  positions, non-pad tokens or rows, summed over replicas). Logging and held-out evaluation
  average a loss over batches as Σ value·weight / Σ weight."""
  value: tf.Tensor
  weight: tf.Tensor


class _Denominators(threading.local):
  """Trace-time state: None, or the counts recorded (in call order) and the totals to use."""
  counts: Optional[List[tf.Tensor]] = None
  totals: Optional[List[tf.Tensor]] = None
  micro_batches: int = 1


_STATE = _Denominators()


@contextlib.contextmanager
def counting_denominators():
  """Inside, each loss reduction appends its *local* count (Σweights of this replica's batch) to
  the yielded list, in call order; the losses computed are not meant to be used."""
  _STATE.counts, _STATE.totals = [], None
  try:
    yield _STATE.counts
  finally:
    _STATE.counts = None


@contextlib.contextmanager
def fixed_denominators(totals: List[tf.Tensor]):
  """Inside, the j-th loss reduction divides by `totals[j]` (its count summed over replicas and
  micro-batches) and appends its own local count to the yielded list (to check it against the
  count that went into the total)."""
  _STATE.counts, _STATE.totals = [], list(totals)
  try:
    yield _STATE.counts
  finally:
    _STATE.counts, _STATE.totals = None, None


@contextlib.contextmanager
def micro_batches(k: int):
  """Inside, each loss value is one of `shares()` shares of the accumulated global value."""
  _STATE.micro_batches = k
  try:
    yield
  finally:
    _STATE.micro_batches = 1


def shares() -> int:
  """Into how many parts (replicas × micro-batches) one step's global loss value is split."""
  context = tf.distribute.get_replica_context()
  replicas = context.num_replicas_in_sync if context is not None else 1
  return replicas * _STATE.micro_batches


def _denominator(local_count: tf.Tensor) -> tf.Tensor:
  if _STATE.counts is None:
    return _global_sum(local_count)
  _STATE.counts.append(local_count)
  if _STATE.totals is None:
    return local_count
  index = len(_STATE.counts) - 1
  if index >= len(_STATE.totals):
    raise ValueError(f"loss reduction {index + 1} has no counted total: the method computes "
                     "more losses than when its denominators were counted")
  return _STATE.totals[index]


def _global_sum(x: tf.Tensor) -> tf.Tensor:
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    return context.all_reduce(tf.distribute.ReduceOp.SUM, x)
  return x


def weighted_mean_loss(values: tf.Tensor, weights: tf.Tensor) -> Loss:
  """Σ(values·weights) / Σweights over the global batch, with its denominator."""
  weights = tf.cast(weights, tf.float32)
  numerator = tf.reduce_sum(tf.cast(values, tf.float32) * weights)
  denominator = _denominator(tf.reduce_sum(weights))
  return Loss(tf.math.divide_no_nan(numerator, denominator), denominator)


def global_weighted_mean(values: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
  """Σ(values·weights) / Σweights, where the denominator sums over *all* replicas.

  In a replica context with N > 1 replicas each replica returns its share of the global mean, so
  the sum of the replicas' gradients (what the optimizer applies) equals the gradient of the
  single-device loss on the whole global batch.
  """
  return weighted_mean_loss(values, weights).value


def combined_loss(value: tf.Tensor, inputs) -> Loss:
  """A weighted sum of loss terms (e.g. `total_loss`), weighted by the global batch's rows."""
  return Loss(value, _denominator(tf.cast(tf.shape(inputs["input_word_ids"])[0], tf.float32)))
