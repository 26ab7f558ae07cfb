"""Attention maps checked against a hand computation from the layer's weights; the summaries on
hand-made maps; order sensitivity 0 for uniform attention and clearly above 0 for sharp attention."""
import numpy as np
import tensorflow as tf

from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import attention_maps
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder

CONFIG = EncoderConfig(vocab_size=50, hidden_size=16, num_layers=2, num_attention_heads=2,
                       intermediate_size=32, embedding_size=16, max_position_embeddings=16)


def inputs(ids, mask=None):
  ids = np.asarray(ids, np.int32)
  return {"input_word_ids": ids, "input_mask": np.ones_like(ids) if mask is None else mask,
          "input_type_ids": np.zeros_like(ids)}


class AttentionMapsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    tf.keras.utils.set_random_seed(0)
    self.encoder = TransformerEncoder(CONFIG)
    self.encoder(inputs([[1, 2, 3]]))

  def test_first_layer_equals_softmax_of_scaled_query_key_products(self):
    ids = np.array([[1, 5, 7, 9, 2, 0]], np.int32)
    mask = np.array([[1, 1, 1, 1, 1, 0]], np.int32)
    for v in self.encoder.trainable_variables:  # sharper attention than the 0.02 init gives
      v.assign(v * 4.0)
    maps = attention_maps.attention_maps(self.encoder, inputs(ids, mask))
    self.assertLen(maps, 2)
    x = self.encoder.embeddings(ids, np.zeros_like(ids), training=False).numpy()[0]
    attention = self.encoder.transformer_layers[0]._attention_layer
    wq, bq = [w.numpy() for w in attention._query_dense.weights]
    wk, bk = [w.numpy() for w in attention._key_dense.weights]
    q = np.einsum("sh,hnd->nsd", x, wq) + bq[:, None, :]
    k = np.einsum("sh,hnd->nsd", x, wk) + bk[:, None, :]
    scores = np.einsum("nqd,nkd->nqk", q, k) / np.sqrt(q.shape[-1])
    scores[:, :, mask[0] == 0] = -1e9
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    self.assertAllClose(maps[0].numpy()[0], expected, atol=1e-5)
    self.assertGreater(np.abs(expected - expected.mean(-1, keepdims=True)).max(), 0.05)

  def test_entropy_ratio_on_hand_made_maps(self):
    uniform = np.full([1, 2, 4, 4], 0.25, np.float32)
    one_hot = np.tile(np.eye(4, dtype=np.float32)[None, None], [1, 2, 1, 1])
    mask = np.ones([1, 4])
    self.assertAllClose(attention_maps.entropy_ratio(tf.constant(uniform), mask), [1.0, 1.0])
    self.assertAllClose(attention_maps.entropy_ratio(tf.constant(one_hot), mask), [0.0, 0.0])
    # Two real keys of three: uniform over them is 1; the padded query row is not counted.
    half = np.array([[[[0.5, 0.5, 0.0]] * 3]], np.float32)
    self.assertAllClose(attention_maps.entropy_ratio(tf.constant(half), np.array([[1, 1, 0]])),
                        [1.0])

  def test_order_sensitivity(self):
    rows = np.random.default_rng(0).integers(5, 50, size=[4, 12]).astype(np.int32)
    rows[:, 0], rows[:, -1] = 1, 2
    # At initialisation attention is nearly uniform: the output is nearly a bag of words.
    blind = attention_maps.order_sensitivity(self.encoder, rows)
    self.assertLess(blind, 1e-3)
    for v in self.encoder.trainable_variables:
      v.assign(v * 8.0)
    self.assertGreater(attention_maps.order_sensitivity(self.encoder, rows), 100 * blind)


if __name__ == "__main__":
  tf.test.main()
