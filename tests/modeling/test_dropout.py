"""Our dropout (16-bit uniforms of a counter-based hash) vs Keras's, its draw's statistics, and in
every dropout place of an encoder."""
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.ops import fused

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

  def test_the_draw_is_uniform_and_independent_of_neighbours_and_keys(self):
    """The counter-based draw (`fused.dropout_uniform16`) of 2²⁰ elements: its 16-bit values
    uniform over 256 bins (χ²), neighbouring elements' draws and two keys' draws uncorrelated,
    and the keep decisions of neighbours independent (their joint rate p² within 5σ)."""
    from scipy import stats  # pylint: disable=g-import-not-at-top
    shape = [1024, 1024]
    draws = [fused.dropout_uniform16(shape, tf.constant(key, tf.uint32)).numpy().ravel()
             for key in ([1, 2], [1, 3], [2, 2])]
    n = draws[0].size
    for draw in draws:
      self.assertGreater(stats.chisquare(np.bincount(draw >> 8, minlength=256)).pvalue, 1e-4)
      for lag in (1, 2, 1024):  # the next element, the one after, the next row
        self.assertLess(abs(np.corrcoef(draw[:-lag], draw[lag:])[0, 1]), 5 / np.sqrt(n))
      dropped = draw < 6554
      both = np.mean(dropped[:-1] & dropped[1:])
      self.assertLess(abs(both - DROPPED ** 2), 5 * np.sqrt(DROPPED ** 2 / n))
    for other in draws[1:]:  # a key differing in either word gives an unrelated draw
      self.assertLess(abs(np.corrcoef(draws[0], other)[0, 1]), 5 / np.sqrt(n))

  def test_inference_and_rate_zero_are_the_identity(self):
    x = tf.random.normal([3, 5, 7])
    self.assertAllEqual(Dropout(0.1)(x, training=False), x)
    self.assertAllEqual(Dropout(0.0)(x, training=True), x)

  def test_gradient_is_the_same_scaled_mask(self):
    x = tf.random.normal([4, 9, 33])  # odd sizes: one 16-bit draw per element, whatever the count
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
