"""Gradient reversal (Ganin et al., 2016): identity forward, gradient × (−scale) backward."""
import tensorflow as tf


def reverse_gradient(x: tf.Tensor, scale: float = 1.0) -> tf.Tensor:
  """Returns `x`; the gradient flowing back through it is multiplied by `-scale` (`scale=0`:
  stop-gradient)."""
  if scale == 0:
    return tf.stop_gradient(x)

  @tf.custom_gradient
  def reverse(value):
    return tf.identity(value), lambda upstream: -scale * upstream

  return reverse(x)
