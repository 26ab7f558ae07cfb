"""Keras's EinsumDense with its bias added by `tf.nn.bias_add`, whose gradient is one
`BiasAddGrad`, or inside the fused GELU's pass."""
import tensorflow as tf
import tf_keras

from official_rtd.ops import fused


class EinsumDense(tf_keras.layers.EinsumDense):
  """`tf_keras.layers.EinsumDense` (same weights, names, config and math) whose bias, when it
  spans the output's trailing axes (e.g. `[heads, head_size]` of a `[batch, seq_len, heads,
  head_size]` projection), is added by `tf.nn.bias_add` over those axes flattened.

  Autodiff of Keras's `+ bias` sums the upstream gradient with a `Sum` over the leading axes;
  `BiasAddGrad` does it 2.0–2.6× faster for a `[32, 128, 1024]` FFN activation
  (`benchmarks/step_alternatives.py`, two runs). With `activation=fused.gelu` and a bias over
  the last axis, the bias is added inside the fused GELU's pass (`fused.bias_gelu`), which also
  sums its gradient: no `BiasAdd` or `BiasAddGrad` pass at all. Any other bias falls back to
  Keras's layer.
  """

  def call(self, inputs):
    bias_rank = None if self.bias is None else self.bias.shape.rank
    if (bias_rank is None or len(self.full_output_shape) <= bias_rank
        or tuple(self.full_output_shape[-bias_rank:]) != tuple(self.bias.shape)):
      return super().call(inputs)
    outputs = tf.einsum(self.equation, inputs, self.kernel)
    if bias_rank == 1 and self.activation is fused.gelu:
      return fused.bias_gelu(outputs, self.bias)
    if bias_rank == 1:
      outputs = tf.nn.bias_add(outputs, self.bias)
    else:  # [..., heads, head_size] as [..., heads · head_size] (a reshape copies nothing)
      width = self.bias.shape.num_elements()
      flat = tf.reshape(outputs, tf.concat([tf.shape(outputs)[:-bias_rank], [width]], 0))
      biased = tf.reshape(tf.nn.bias_add(flat, tf.reshape(self.bias, [width])), tf.shape(outputs))
      biased.set_shape(outputs.shape)
      outputs = biased
    if self.activation is not None:
      outputs = self.activation(outputs)
    return outputs
