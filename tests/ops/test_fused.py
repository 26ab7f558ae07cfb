"""The fused GELU, LayerNorm, dropout application and softmax cross-entropy equal the ops they
replace (or a NumPy reference), values and gradients."""
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.ops import fused


def keras_gelu(x):
  return tf_keras.activations.gelu(x, approximate=True)


def value_and_gradients(fn, inputs):
  """fn(*inputs) and the gradients of Σ sin(fn(*inputs))·w (w random) to every input."""
  with tf.GradientTape() as tape:
    tape.watch(inputs)
    y = fn(*inputs)
    weights = tf.random.stateless_normal(y.shape, [1, 2], dtype=tf.float64)
    loss = tf.reduce_sum(tf.sin(tf.cast(y, tf.float64)) * weights)
  return [y] + tape.gradient(loss, inputs)


class GeluTest(tf.test.TestCase):

  def test_equals_kerass_tanh_gelu_and_the_float64_formula(self):
    x = tf.concat([tf.linspace(-8.0, 8.0, 801),
                   tf.random.stateless_normal([4000], [3, 4], stddev=3.0)], 0)
    ours = value_and_gradients(fused.gelu, [x])
    theirs = value_and_gradients(keras_gelu, [x])
    for a, b in zip(ours, theirs):
      self.assertAllClose(a, b, atol=1e-5, rtol=1e-5)
    # The formula and its derivative in float64; near x = −5, 1 + tanh(u) cancels in float32,
    # so both float32 computations are ~4e-6 off there.
    v = x.numpy().astype(np.float64)
    c, a = np.sqrt(2 / np.pi), 0.044715
    t = np.tanh(c * (v + a * v ** 3))
    slope = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * a * v * v)
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = fused.gelu(x)
    self.assertAllClose(y, 0.5 * v * (1 + t), atol=1e-6, rtol=1e-6)
    self.assertAllClose(tape.gradient(y, x), slope, atol=5e-6, rtol=1e-6)

  def test_bfloat16_is_the_float32_result_rounded(self):
    x = tf.cast(tf.random.stateless_normal([3, 5, 64], [5, 6], stddev=2.0), tf.bfloat16)
    y, dx = value_and_gradients(fused.gelu, [x])
    self.assertEqual(y.dtype, tf.bfloat16)
    self.assertEqual(dx.dtype, tf.bfloat16)
    # Model Garden's block computes its activation in float32 under mixed_bfloat16.
    y32, dx32 = value_and_gradients(lambda v: keras_gelu(tf.cast(v, tf.float32)), [x])
    # Within one bfloat16 step (≤ 2⁻⁷ relative): both round a float32 value that can differ in
    # its last bits (XLA's tanh is not TensorFlow's kernel).
    self.assertAllClose(tf.cast(y, tf.float32), tf.cast(tf.cast(y32, tf.bfloat16), tf.float32),
                        atol=1e-6, rtol=2 ** -7)
    self.assertAllClose(tf.cast(dx, tf.float32), tf.cast(dx32, tf.float32), rtol=1e-2, atol=1e-2)

  def test_bias_gelu_equals_kerass_gelu_after_bias_add(self):
    x = tf.random.stateless_normal([4, 9, 48], [11, 12], stddev=2.0)
    bias = tf.random.stateless_normal([48], [13, 14])
    ours = value_and_gradients(fused.bias_gelu, [x, bias])
    theirs = value_and_gradients(lambda x, b: keras_gelu(tf.nn.bias_add(x, b)), [x, bias])
    for a, b in zip(ours, theirs):
      self.assertAllClose(a, b, atol=2e-5, rtol=1e-5)
    # bfloat16 activations, a float32 bias (a mixed_bfloat16 layer's variable read as is).
    x16 = tf.cast(x, tf.bfloat16)
    y, dx, d_bias = value_and_gradients(fused.bias_gelu, [x16, bias])
    self.assertEqual((y.dtype, dx.dtype, d_bias.dtype), (tf.bfloat16, tf.bfloat16, tf.float32))
    y32 = keras_gelu(tf.cast(x16 + tf.cast(bias, tf.bfloat16), tf.float32))
    self.assertAllClose(tf.cast(y, tf.float32), y32, atol=1e-2, rtol=2 ** -7)
    self.assertAllClose(d_bias, tf.reduce_sum(tf.cast(dx, tf.float32), [0, 1]), rtol=1e-5,
                        atol=1e-4)


class LayerNormTest(tf.test.TestCase):

  def _keras(self, shape, epsilon=1e-12):
    hidden = shape[-1]
    layer = tf_keras.layers.LayerNormalization(axis=-1, epsilon=epsilon, dtype=tf.float32)
    layer.build(shape)
    layer.gamma.assign(tf.random.stateless_normal([hidden], [7, 8]))
    layer.beta.assign(tf.random.stateless_normal([hidden], [9, 10]))
    return layer

  def test_values_and_gradients_as_accurate_as_kerass(self):
    """Against the definition differentiated in float64: our values and gradients are as close
    to it as Keras's LayerNormalization (the op replaced), and close to Keras's."""
    for shape, epsilon, offset, spread in (([2, 7, 48], 1e-12, 0.5, 2.0),
                                           ([5, 32], 1e-3, 0.0, 1.0),
                                           ([3, 4, 40], 1e-12, 3.0, 0.1)):  # x̂ ill-conditioned
      layer = self._keras(shape, epsilon)
      x = offset + spread * tf.random.stateless_normal(shape, [11, 12])
      gamma, beta = tf.identity(layer.gamma), tf.identity(layer.beta)
      ours = value_and_gradients(
          lambda x, g, b: fused.layer_norm(x, g, b, epsilon), [x, gamma, beta])
      with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        weights = tf.random.stateless_normal(y.shape, [1, 2], dtype=tf.float64)
        loss = tf.reduce_sum(tf.sin(tf.cast(y, tf.float64)) * weights)
      theirs = [y] + tape.gradient(loss, [x, layer.gamma, layer.beta])

      def definition(x, g, b):
        mean = tf.reduce_mean(x, -1, keepdims=True)
        variance = tf.reduce_mean(tf.square(x - mean), -1, keepdims=True)
        return (x - mean) / tf.sqrt(variance + epsilon) * g + b

      exact = value_and_gradients(definition, [tf.cast(v, tf.float64) for v in (x, gamma, beta)])
      for name, a, b, c in zip(("y", "dx", "dgamma", "dbeta"), ours, theirs, exact):
        ours_error = np.max(np.abs(a.numpy() - c.numpy()))
        keras_error = np.max(np.abs(b.numpy() - c.numpy()))
        self.assertLessEqual(ours_error, 2 * keras_error + 2e-6, f"{name} {shape}")
        self.assertAllClose(a, b, atol=2e-3 if spread < 1 else 2e-5, rtol=2e-5,
                            msg=f"{name} {shape}")

  def test_bfloat16_input_is_normalised_in_float32(self):
    layer = self._keras([4, 9, 64])
    x = tf.cast(tf.random.stateless_normal([4, 9, 64], [13, 14], stddev=4.0), tf.bfloat16)
    ours = value_and_gradients(
        lambda x: fused.layer_norm(x, layer.gamma, layer.beta, 1e-12), [x])
    # Model Garden's float32 LayerNorm under mixed_bfloat16: the input cast to float32 first.
    theirs = value_and_gradients(lambda x: layer(tf.cast(x, tf.float32)), [x])
    self.assertEqual(ours[0].dtype, tf.float32)
    self.assertEqual(ours[1].dtype, tf.bfloat16)
    self.assertAllClose(ours[0], theirs[0], atol=2e-5, rtol=2e-5)
    self.assertAllClose(tf.cast(ours[1], tf.float32), tf.cast(theirs[1], tf.float32),
                        atol=1e-2, rtol=1e-2)

  def test_hand_computed_rows(self):
    # Row [1, 2, 3, 6]: mean 3, variance (4 + 1 + 0 + 9)/4 = 3.5.
    y = fused.layer_norm(tf.constant([[1.0, 2.0, 3.0, 6.0]]), tf.fill([4], 2.0),
                         tf.fill([4], 1.0), 0.0)
    expected = 2.0 * (np.array([1.0, 2.0, 3.0, 6.0]) - 3.0) / np.sqrt(3.5) + 1.0
    self.assertAllClose(y, [expected], atol=1e-6)


def lowbias32(h):
  """Wellons' lowbias32 on numpy uint64 holding uint32 values (the reference, outside TF)."""
  mask = np.uint64(0xFFFFFFFF)
  h = h ^ (h >> np.uint64(16))
  h = (h * np.uint64(0x7FEB352D)) & mask
  h = h ^ (h >> np.uint64(15))
  h = (h * np.uint64(0x846CA68B)) & mask
  return h ^ (h >> np.uint64(16))


class DropoutTest(tf.test.TestCase):

  def test_the_draw_is_the_hash_of_each_index(self):
    key = np.array([0x9E3779B9, 12345], np.uint32)
    index = np.arange(3 * 7 * 11, dtype=np.uint64)
    hashed = lowbias32((lowbias32(index ^ np.uint64(key[0])) + np.uint64(key[1]))
                       & np.uint64(0xFFFFFFFF))
    expected = (hashed >> np.uint64(16)).astype(np.int64).reshape([3, 7, 11])
    self.assertAllEqual(fused.dropout_uniform16([3, 7, 11], tf.constant(key)), expected)

  def test_keeps_the_elements_drawn_at_or_above_the_count_scaled(self):
    rng = np.random.default_rng(0)
    key = tf.constant([7, 8], tf.uint32)
    draw = fused.dropout_uniform16([3, 7, 11], key).numpy()
    count = int(np.sort(draw.ravel())[30])  # a count some draws sit at, either side
    for dtype in (tf.float32, tf.bfloat16):
      x = tf.cast(rng.normal(size=[3, 7, 11]), dtype)
      dy = tf.cast(rng.normal(size=[3, 7, 11]), dtype)
      with tf.GradientTape() as tape:
        tape.watch(x)
        y = fused.dropout(x, key, count, 1.25)
      dx = tape.gradient(y, x, output_gradients=dy)
      scale = tf.cast(1.25, dtype).numpy()  # 1.25 is exact in bfloat16
      keep = draw >= count
      self.assertEqual(y.dtype, dtype)
      self.assertTrue(keep.any() and not keep.all())
      self.assertAllEqual(y, np.where(keep, x.numpy() * scale, 0).astype(y.dtype.as_numpy_dtype))
      self.assertAllEqual(dx, np.where(keep, dy.numpy() * scale, 0).astype(y.dtype.as_numpy_dtype))


class SparseSoftmaxCrossEntropyTest(tf.test.TestCase):

  def test_equals_tensorflows_op_values_and_gradients(self):
    logits = tf.random.stateless_normal([3, 5, 97], [3, 4], stddev=5.0)
    labels = tf.random.stateless_uniform([3, 5], [5, 6], maxval=97, dtype=tf.int32)
    ours = value_and_gradients(lambda z: fused.sparse_softmax_cross_entropy(labels, z), [logits])
    theirs = value_and_gradients(
        lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, z), [logits])
    self.assertEqual(ours[0].shape, [3, 5])
    self.assertAllClose(ours[0], theirs[0], atol=1e-5, rtol=1e-5)
    self.assertAllClose(ours[1], theirs[1], atol=1e-6, rtol=1e-5)

  def test_bfloat16_logits_are_read_in_float32(self):
    logits = tf.cast(tf.random.stateless_normal([6, 50], [7, 8], stddev=3.0), tf.bfloat16)
    labels = tf.range(6)
    ours = value_and_gradients(lambda z: fused.sparse_softmax_cross_entropy(labels, z), [logits])
    theirs = value_and_gradients(lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels, tf.cast(z, tf.float32)), [logits])
    self.assertEqual(ours[0].dtype, tf.float32)
    self.assertEqual(ours[1].dtype, tf.bfloat16)
    self.assertAllClose(ours[0], theirs[0], atol=1e-5, rtol=1e-5)
    self.assertAllClose(tf.cast(ours[1], tf.float32), tf.cast(theirs[1], tf.float32),
                        atol=1e-2, rtol=1e-2)

  def test_hand_computed_row(self):
    # softmax([0, ln 3]) = [1/4, 3/4]: −log(3/4) for label 1; gradient [1/4, 3/4 − 1].
    logits = tf.constant([[0.0, np.log(3.0)]])
    with tf.GradientTape() as tape:
      tape.watch(logits)
      loss = fused.sparse_softmax_cross_entropy(tf.constant([1]), logits)
    self.assertAllClose(loss, [np.log(4.0 / 3.0)], atol=1e-6)
    self.assertAllClose(tape.gradient(loss, logits), [[0.25, -0.25]], atol=1e-6)


if __name__ == "__main__":
  tf.test.main()
