"""Loss reductions that stay exact under data-parallel distribution strategies."""
import tensorflow as tf


def global_weighted_mean(values: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
  """Σ(values·weights) / Σweights, where the denominator sums over *all* replicas.

  In a replica context with N > 1 replicas each replica returns its share of the global mean, so
  the sum of the replicas' gradients (what the optimizer applies) equals the gradient of the
  single-device loss on the whole global batch.
  """
  weights = tf.cast(weights, tf.float32)
  numerator = tf.reduce_sum(tf.cast(values, tf.float32) * weights)
  denominator = tf.reduce_sum(weights)
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    denominator = context.all_reduce(tf.distribute.ReduceOp.SUM, denominator)
  return tf.math.divide_no_nan(numerator, denominator)
