"""Our Transformer block (fused GELU and LayerNorm, bias_add dense layers, matmul attention, our
dropout) against Model Garden's stock `TransformerEncoderBlock` on the same weights: outputs and
every gradient."""
from official.nlp.modeling import layers as mg_layers
import tensorflow as tf
import tf_keras

from official_rtd.interop import model_garden
from official_rtd.modeling.layers.einsum_dense import EinsumDense
from official_rtd.modeling.layers.layer_norm import LayerNorm
from official_rtd.modeling.layers.transformer_block import TransformerBlock
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.training import precision


def outputs_and_gradients(block, x, mask):
  """The block's output and the gradients of a random projection of it, to its input and to each
  weight by name."""
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = block([x, mask], training=False)
    weights = tf.random.stateless_normal(y.shape, [3, 4])
    loss = tf.reduce_sum(tf.sin(tf.cast(y, tf.float32)) * weights)
  variables = block.trainable_variables
  grads = tape.gradient(loss, [x] + variables)
  by_name = {v.name.split(f"{block.name}/", 1)[-1]: g for v, g in zip(variables, grads[1:])}
  return y, grads[0], by_name


def tensors(result, other):
  """(name, float32 tensor of `result`, the same of `other`) for y, dx and every weight's
  gradient of two `outputs_and_gradients` results."""
  (y, dx, grads), (y2, dx2, grads2) = result, other
  assert grads.keys() == grads2.keys() and len(grads) == 16  # attention 4×2, 2 norms, 2 dense
  return [(name, tf.cast(a, tf.float32), tf.cast(b, tf.float32)) for name, a, b in
          [("y", y, y2), ("dx", dx, dx2)] + [(k, grads[k], grads2[k]) for k in sorted(grads)]]


KERAS_GELU = lambda x: tf_keras.activations.gelu(x, approximate=True)  # Model Garden's


class TransformerBlockTest(tf.test.TestCase):

  def _pair(self, precision_name, ours_activation, theirs_activation):
    kwargs = dict(num_attention_heads=2, inner_dim=32, output_dropout=0.1,
                  attention_dropout=0.1, name="block")
    x = tf.random.stateless_normal([2, 6, 16], [1, 2])
    mask = tf.constant([[1] * 6, [1] * 4 + [0] * 2], tf.float32)[:, None, :] * tf.ones([2, 6, 1])
    with precision.policy(precision_name):
      ours = TransformerBlock(inner_activation=ours_activation, **kwargs)
      theirs = mg_layers.TransformerEncoderBlock(inner_activation=theirs_activation, **kwargs)
      ours([x, mask]), theirs([x, mask])  # built under the policy, as encoders are
    model_garden.copy_weights_by_name(theirs, ours)
    return ours, theirs, x, mask

  def test_same_outputs_and_gradients_as_model_gardens_block(self):
    tf_keras.utils.set_random_seed(0)
    ours, theirs, x, mask = self._pair("float32", transformer_encoder.gelu, KERAS_GELU)
    self.assertIsInstance(ours._output_layer_norm, LayerNorm)
    for role in ("query", "key", "value", "attention_output", "intermediate", "output"):
      self.assertIsInstance(ours.parts()[role], EinsumDense, msg=role)
    for name, a, b in tensors(outputs_and_gradients(ours, x, mask),
                              outputs_and_gradients(theirs, x, mask)):
      self.assertAllClose(a, b, atol=2e-5, rtol=2e-5, msg=name)

  def test_bfloat16_as_accurate_as_model_gardens_block(self):
    """Under mixed_bfloat16 each output and gradient is as close to the float32 result on the
    same weights as Model Garden's bfloat16 block is (whole tensors: with 8 significant bits,
    a summed gradient element moves far more than its share when one rounding falls the other
    way)."""
    tf_keras.utils.set_random_seed(0)
    ours, theirs, x, mask = self._pair("bfloat16", transformer_encoder.gelu, KERAS_GELU)
    reference, _, _, _ = self._pair("float32", transformer_encoder.gelu, KERAS_GELU)
    model_garden.copy_weights_by_name(theirs, reference)
    exact = outputs_and_gradients(reference, x, mask)
    ours_out, theirs_out = outputs_and_gradients(ours, x, mask), outputs_and_gradients(
        theirs, x, mask)
    self.assertEqual(ours_out[0].dtype, theirs_out[0].dtype)
    for (name, a, c), (_, b, _) in zip(tensors(ours_out, exact), tensors(theirs_out, exact)):
      if name == "self_attention/key/bias:0":
        continue  # its exact gradient is 0 (softmax ignores a key bias): rounding noise only
      ours_error = float(tf.norm(a - c) / tf.norm(c))
      theirs_error = float(tf.norm(b - c) / tf.norm(c))
      self.assertLess(ours_error, 2 * theirs_error + 5e-3, name)

  def test_any_other_activation_is_model_gardens_own(self):
    ours, theirs, x, mask = self._pair("float32", "gelu", "gelu")  # the exact (erf) GELU
    self.assertAllClose(ours([x, mask], training=False), theirs([x, mask], training=False),
                        atol=2e-5, rtol=2e-5)

  def test_layer_norm_keeps_kerass_weights_and_config(self):
    keras_norm = tf_keras.layers.LayerNormalization(axis=-1, epsilon=1e-12, name="norm")
    ours = LayerNorm(**keras_norm.get_config())
    x = tf.random.stateless_normal([3, 8], [5, 6])
    keras_norm(x), ours(x)
    self.assertEqual([v.name for v in ours.weights], [v.name for v in keras_norm.weights])
    self.assertEqual(ours.get_config(), keras_norm.get_config())
    keras_norm.set_weights([tf.random.stateless_normal([8], [7, i]) for i in (1, 2)])
    ours.set_weights(keras_norm.get_weights())
    self.assertAllClose(ours(x), keras_norm(x), atol=1e-5)
    # Normalising over another axis falls back to Keras's layer.
    by_column = LayerNorm(axis=0, epsilon=1e-3)
    self.assertAllClose(by_column(x), tf_keras.layers.LayerNormalization(axis=0, epsilon=1e-3)(x),
                        atol=1e-5)


if __name__ == "__main__":
  tf.test.main()
