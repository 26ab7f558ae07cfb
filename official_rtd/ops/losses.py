"""Loss reductions that stay exact under data-parallel distribution strategies, and the `Loss`
every pre-training method returns (a value with the count it averages over)."""
from typing import NamedTuple

import tensorflow as tf


class Loss(NamedTuple):
  """One loss term of a batch: `value`, this replica's share of the global-batch mean (as
  `global_weighted_mean` returns it), and `weight`, the global count it averages over (masked
  positions, non-pad tokens or rows, summed over replicas). Logging and held-out evaluation
  average a loss over batches as Σ value·weight / Σ weight."""
  value: tf.Tensor
  weight: tf.Tensor


def _global_sum(x: tf.Tensor) -> tf.Tensor:
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    return context.all_reduce(tf.distribute.ReduceOp.SUM, x)
  return x


def weighted_mean_loss(values: tf.Tensor, weights: tf.Tensor) -> Loss:
  """Σ(values·weights) / Σweights over the global batch, with its denominator."""
  weights = tf.cast(weights, tf.float32)
  numerator = tf.reduce_sum(tf.cast(values, tf.float32) * weights)
  denominator = _global_sum(tf.reduce_sum(weights))
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
  return Loss(value, _global_sum(tf.cast(tf.shape(inputs["input_word_ids"])[0], tf.float32)))
