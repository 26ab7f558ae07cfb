"""Our 16-bit-uniform dropout vs Keras's, and in every dropout place of an encoder."""
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder

DROPPED = 6554 / 65536  # round(0.1 · 2¹⁶) of the 2¹⁶ 16-bit values are dropped
SCALE = 65536 / (65536 - 6554)


class DropoutTest(tf.test.TestCase):

  def test_drops_the_stated_fraction_and_keeps_the_mean(self):
    for dtype in (tf.float32, tf.bfloat16):
      layer = Dropout(0.1, dtype=dtype)
      y = layer(tf.ones([512, 2048], dtype), training=True)
      self.assertEqual(y.dtype, dtype)
      y = y.numpy().astype(np.float64)
      dropped = np.mean(y == 0)
      sigma = np.sqrt(DROPPED * (1 - DROPPED) / y.size)
      self.assertLess(abs(dropped - DROPPED), 5 * sigma, dtype)
      tolerance = 1e-2 if dtype == tf.bfloat16 else 1e-6  # SCALE rounded to bfloat16
      self.assertAllClose(np.unique(y[y != 0]), [SCALE], rtol=tolerance)
      if dtype == tf.float32:
        self.assertAllClose(y.mean(), 1.0, atol=5 * sigma * SCALE)

  def test_inference_and_rate_zero_are_the_identity(self):
    x = tf.random.normal([3, 5, 7])
    self.assertAllEqual(Dropout(0.1)(x, training=False), x)
    self.assertAllEqual(Dropout(0.0)(x, training=True), x)

  def test_gradient_is_the_same_scaled_mask(self):
    x = tf.random.normal([4, 9, 33])  # odd sizes: the 16-bit draws are cut to the element count
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = Dropout(0.3)(x, training=True)
    mask = tape.gradient(y, x)
    self.assertAllClose(y, x * mask)
    self.assertAllClose(np.unique(mask.numpy()), [0.0, 65536 / (65536 - round(0.3 * 65536))])

  def test_fresh_masks_each_call_repeatable_with_the_global_seed(self):
    layer, x = Dropout(0.5), tf.ones([64, 64])
    tf.random.set_seed(1)
    first, second = layer(x, training=True), layer(x, training=True)
    self.assertNotAllEqual(first, second)
    tf.random.set_seed(1)
    self.assertAllEqual(layer(x, training=True), first)

  def test_bad_settings(self):
    with self.assertRaisesRegex(ValueError, r"rate must be in \[0, 1\), got 1"):
      Dropout(1.0)
    with self.assertRaisesRegex(ValueError, "noise_shape is not supported"):
      Dropout(0.1, noise_shape=[1, 2])


class EncoderDropoutTest(tf.test.TestCase):

  def test_every_dropout_in_an_encoder_is_ours(self):
    config = EncoderConfig(vocab_size=50, hidden_size=16, num_layers=2, num_attention_heads=2,
                           intermediate_size=32, embedding_size=8, max_position_embeddings=8)
    encoder = TransformerEncoder(config)
    ids = tf.ones([2, 8], tf.int32)
    encoder({"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}, training=True)
    dropouts = [l for l in encoder._flatten_layers() if isinstance(l, tf_keras.layers.Dropout)
                and l.rate > 0]
    self.assertLen(dropouts, 1 + 3 * config.num_layers)  # embeddings; attention map, outputs
    self.assertTrue(all(isinstance(l, Dropout) for l in dropouts))


if __name__ == "__main__":
  tf.test.main()
