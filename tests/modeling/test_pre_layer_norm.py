"""Pre-LayerNorm blocks (`EncoderConfig.norm_first`) against a hand-written numpy block on the same
weights; the encoder's final LayerNorm, the attention maps it reads, the export round trip and the
Hugging Face export's refusal."""
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import export
from official_rtd.interop import huggingface
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import attention_maps
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from tests import testutil

CONFIG = EncoderConfig(vocab_size=60, hidden_size=16, num_layers=2, num_attention_heads=2,
                       intermediate_size=32, embedding_size=16, max_position_embeddings=16,
                       norm_first=True)


def layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu_tanh(x):
  return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def weights(layer):
  return [w.numpy().astype(np.float64) for w in layer.weights]


def hand_block(block, x):
  """x + Attn(LN1(x)), then + FFN(LN2(·)): the pre-LN block written out (no mask, no dropout).
  Also returns the attention probabilities `[heads, seq, seq]`."""
  parts = block.parts()
  h = layer_norm(x, *weights(parts["attention_norm"]))
  (wq, bq), (wk, bk), (wv, bv) = (weights(parts[r]) for r in ("query", "key", "value"))
  q = np.einsum("sh,hnd->nsd", h, wq) + bq[:, None, :]
  k = np.einsum("sh,hnd->nsd", h, wk) + bk[:, None, :]
  v = np.einsum("sh,hnd->nsd", h, wv) + bv[:, None, :]
  scores = np.einsum("nqd,nkd->nqk", q, k) / np.sqrt(q.shape[-1])
  p = np.exp(scores - scores.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  context = np.einsum("nqk,nkd->qnd", p, v)
  wo, bo = weights(parts["attention_output"])
  x1 = x + np.einsum("qnd,ndh->qh", context, wo) + bo
  h2 = layer_norm(x1, *weights(parts["output_norm"]))
  w1, b1 = weights(parts["intermediate"])
  w2, b2 = weights(parts["output"])
  return x1 + gelu_tanh(h2 @ w1 + b1) @ w2 + b2, p


class PreLayerNormTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    tf_keras.utils.set_random_seed(0)
    self.encoder = TransformerEncoder(CONFIG)
    self.ids = np.array([[2, 7, 9, 11, 13, 3]], np.int32)
    self.inputs = {"input_word_ids": self.ids, "input_mask": np.ones_like(self.ids),
                   "input_type_ids": np.zeros_like(self.ids)}
    self.encoder(self.inputs)
    for v in self.encoder.trainable_variables:  # sharper attention and non-trivial norms
      v.assign(v * 4.0 + (0.3 if "gamma" in v.name else 0.0))

  def test_encoder_equals_hand_written_pre_ln_blocks_and_final_norm(self):
    out = self.encoder(self.inputs, training=False)
    x = self.encoder.embeddings(self.ids, np.zeros_like(self.ids), training=False).numpy()[0]
    x = x.astype(np.float64)
    maps = attention_maps.attention_maps(self.encoder, self.inputs)
    for index, block in enumerate(self.encoder.transformer_layers):
      x, probabilities = hand_block(block, x)
      self.assertAllClose(maps[index].numpy()[0], probabilities, atol=2e-5)
      if index < CONFIG.num_layers - 1:  # intermediate outputs: the unnormalised stream
        self.assertAllClose(out["encoder_outputs"][index].numpy()[0], x, atol=2e-4)
    expected = layer_norm(x, *weights(self.encoder.final_layer_norm))
    self.assertAllClose(out["sequence_output"].numpy()[0], expected, atol=2e-4)
    self.assertAllClose(out["encoder_outputs"][-1], out["sequence_output"])
    # Not the post-LN block's output on the same weights.
    self.assertGreater(np.abs(x - layer_norm(x, 1.0, 0.0)).max(), 0.1)

  def test_post_ln_encoder_has_no_final_norm(self):
    post = TransformerEncoder(EncoderConfig(**dict(CONFIG.to_json(), norm_first=False)))
    post(self.inputs)
    self.assertIsNone(post.final_layer_norm)
    self.assertLen(post.trainable_variables, len(self.encoder.trainable_variables) - 2)

  def test_export_round_trip_and_hugging_face_refusal(self):
    class Model:
      name = "mlm"
      exported_encoder = self.encoder
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    with tempfile.TemporaryDirectory() as tmp:
      encoder = TransformerEncoder(dataclasses_replace(CONFIG, vocab=vocab.size))
      encoder(self.inputs)
      Model.exported_encoder = encoder
      export_dir = export.export_encoder(Model, vocab, tmp, max_seq_length=16)
      loaded = export.load_encoder(export_dir)
      self.assertTrue(loaded.config.norm_first)
      self.assertAllClose(loaded(self.inputs)["sequence_output"],
                          encoder(self.inputs)["sequence_output"])
      with self.assertRaisesRegex(huggingface.ExportFormatError, "pre-LayerNorm"):
        huggingface.embedding_slots(encoder)
      self.assertTrue(os.path.isdir(export_dir))


def dataclasses_replace(config, vocab):
  return EncoderConfig(**dict(config.to_json(), vocab_size=vocab))


if __name__ == "__main__":
  tf.test.main()
