"""`EinsumDense` equals Keras's layer on the same weights (values and gradients) and its bias
gradient is a `BiasAddGrad`."""
import tensorflow as tf
import tf_keras

from official_rtd.modeling.layers.einsum_dense import EinsumDense
from official_rtd.training import precision


def outputs_and_gradients(layer, x):
  """layer(x) and the gradients of Σ sin(layer(x))·w (w random) to x, the kernel and the bias."""
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = layer(x)
    weights = tf.random.stateless_normal(y.shape, [7, 8])
    loss = tf.reduce_sum(tf.sin(tf.cast(y, tf.float32)) * weights)
  return [y] + tape.gradient(loss, [x] + layer.trainable_variables)


class EinsumDenseTest(tf.test.TestCase):

  def _pair(self, equation, output_shape, bias_axes, input_shape, **kwargs):
    keras = tf_keras.layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes,
                                        bias_initializer="random_normal", **kwargs)
    x = tf.random.stateless_normal(input_shape, [1, 2])
    keras(x)
    ours = EinsumDense.from_config(keras.get_config())
    ours(x)
    ours.set_weights(keras.get_weights())
    self.assertEqual([v.name for v in ours.weights], [v.name for v in keras.weights])
    return ours, keras, tf.cast(x, keras.compute_dtype)

  def _assert_same(self, equation, output_shape, bias_axes, input_shape, **kwargs):
    ours, keras, x = self._pair(equation, output_shape, bias_axes, input_shape, **kwargs)
    for a, b in zip(outputs_and_gradients(ours, x), outputs_and_gradients(keras, x)):
      self.assertAllClose(a, b, atol=1e-5, rtol=1e-5)
    return ours

  def test_bias_over_the_last_axis(self):
    self._assert_same("abc,cd->abd", (None, 24), "d", [3, 5, 8])

  def test_bias_over_trailing_heads_and_head_size(self):
    self._assert_same("abc,cde->abde", (None, 2, 6), "de", [3, 5, 8])

  def test_activation_after_the_bias(self):
    self._assert_same("abc,cd->abd", (None, 24), "d", [3, 5, 8], activation="tanh")

  def test_a_bias_not_over_trailing_axes_and_no_bias_fall_back(self):
    # bias over the sequence axis: `[5, 1]`, broadcast over the output's last axis
    ours = self._assert_same("abc,cd->abd", (5, 24), "b", [3, 5, 8])
    self.assertEqual(ours.bias.shape, [5, 1])
    self._assert_same("abc,cd->abd", (None, 24), None, [3, 5, 8])

  def test_bias_gradient_is_one_bias_add_grad(self):
    ours, _, x = self._pair("abc,cde->abde", (None, 2, 6), "de", [3, 5, 8])

    @tf.function
    def bias_gradient(x):
      with tf.GradientTape() as tape:
        y = ours(x)
      return tape.gradient(y, ours.bias)
    graph = bias_gradient.get_concrete_function(x).graph
    op_types = [op.type for op in graph.get_operations()]
    self.assertIn("BiasAddGrad", op_types)
    self.assertNotIn("Sum", op_types)
    self.assertAllClose(bias_gradient(x), tf.fill([2, 6], 15.0))  # 3 × 5 positions of 1s

  def test_mixed_bfloat16_computes_in_bfloat16(self):
    with precision.policy("bfloat16"):
      ours, keras, x = self._pair("abc,cde->abde", (None, 2, 6), "de", [3, 5, 8])
    y, y_keras = ours(x), keras(x)
    self.assertEqual(y.dtype, tf.bfloat16)
    self.assertAllClose(tf.cast(y, tf.float32), tf.cast(y_keras, tf.float32), atol=2e-2,
                        rtol=2e-2)


if __name__ == "__main__":
  tf.test.main()
