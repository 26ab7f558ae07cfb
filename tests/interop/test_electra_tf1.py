"""google-research/electra TF1 checkpoints: a checkpoint written with the original variable names
(tf.compat.v1 variables) imports and reproduces a float64 NumPy BERT/ELECTRA forward pass computed
straight from the checkpoint's tensors."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.interop import electra_tf1

V, E, H, F, L, P = 60, 16, 32, 48, 2, 32   # discriminator
HG, FG = 24, 40                             # generator (tied embeddings, 2 layers)
HEADS, GEN_HEADS = 2, 1


def tf1_tensors(seed=0):
  rng = np.random.default_rng(seed)
  w = lambda *shape: rng.normal(scale=0.3, size=shape).astype(np.float32)  # pylint: disable=unnecessary-lambda-assignment
  t = {"electra/embeddings/word_embeddings": w(V, E),
       "electra/embeddings/position_embeddings": w(P, E),
       "electra/embeddings/token_type_embeddings": w(2, E),
       "electra/embeddings/LayerNorm/gamma": 1 + w(E), "electra/embeddings/LayerNorm/beta": w(E)}

  def encoder(prefix, hidden, inner):
    t[f"{prefix}/embeddings_project/kernel"] = w(E, hidden)
    t[f"{prefix}/embeddings_project/bias"] = w(hidden)
    for i in range(L):
      layer = f"{prefix}/encoder/layer_{i}"
      for part in ("self/query", "self/key", "self/value", "output/dense"):
        t[f"{layer}/attention/{part}/kernel"] = w(hidden, hidden)
        t[f"{layer}/attention/{part}/bias"] = w(hidden)
      t[f"{layer}/intermediate/dense/kernel"] = w(hidden, inner)
      t[f"{layer}/intermediate/dense/bias"] = w(inner)
      t[f"{layer}/output/dense/kernel"] = w(inner, hidden)
      t[f"{layer}/output/dense/bias"] = w(hidden)
      for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
        t[f"{layer}/{norm}/gamma"] = 1 + w(hidden)
        t[f"{layer}/{norm}/beta"] = w(hidden)

  encoder("electra", H, F)
  encoder("generator", HG, FG)
  t.update({"discriminator_predictions/dense/kernel": w(H, H),
            "discriminator_predictions/dense/bias": w(H),
            "discriminator_predictions/dense_1/kernel": w(H, 1),
            "discriminator_predictions/dense_1/bias": w(1),
            "generator_predictions/dense/kernel": w(HG, E),
            "generator_predictions/dense/bias": w(E),
            "generator_predictions/LayerNorm/gamma": 1 + w(E),
            "generator_predictions/LayerNorm/beta": w(E),
            "generator_predictions/output_bias": w(V)})
  return t


def write_tf1_checkpoint(tensors, path):
  with tf.Graph().as_default():
    for name, value in tensors.items():
      tf.compat.v1.get_variable(name, initializer=value)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      return tf.compat.v1.train.Saver().save(session, path)


# --- the reference: BERT/ELECTRA in float64 NumPy, from the checkpoint's names --------------------
def gelu(x):
  return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, t, name):
  mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * t[f"{name}/gamma"] + t[f"{name}/beta"]


def reference_encoder(t, prefix, ids, mask, heads):
  t = {k: v.astype(np.float64) for k, v in t.items()}
  n = ids.shape[1]
  e = "electra/embeddings"
  x = (t[f"{e}/word_embeddings"][ids] + t[f"{e}/position_embeddings"][:n]
       + t[f"{e}/token_type_embeddings"][0])
  x = layer_norm(x, t, f"{e}/LayerNorm")
  x = x @ t[f"{prefix}/embeddings_project/kernel"] + t[f"{prefix}/embeddings_project/bias"]
  hidden = x.shape[-1]
  size = hidden // heads
  bias = (1.0 - mask[:, None, None, :]) * -1e9
  for i in range(L):
    a = f"{prefix}/encoder/layer_{i}/attention"
    q, k, v = (
        (x @ t[f"{a}/self/{p}/kernel"] + t[f"{a}/self/{p}/bias"]).reshape(*x.shape[:2], heads, size)
        for p in ("query", "key", "value"))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(size) + bias
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum("bhqk,bkhd->bqhd", probs, v).reshape(x.shape)
    x = layer_norm(x + context @ t[f"{a}/output/dense/kernel"] + t[f"{a}/output/dense/bias"], t,
                   f"{a}/output/LayerNorm")
    o = f"{prefix}/encoder/layer_{i}"
    inner = gelu(x @ t[f"{o}/intermediate/dense/kernel"] + t[f"{o}/intermediate/dense/bias"])
    x = layer_norm(x + inner @ t[f"{o}/output/dense/kernel"] + t[f"{o}/output/dense/bias"], t,
                   f"{o}/output/LayerNorm")
  return x, t


class ElectraTf1ImportTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tensors = tf1_tensors()
    self.path = write_tf1_checkpoint(self.tensors, os.path.join(tempfile.mkdtemp(), "model.ckpt"))
    rng = np.random.default_rng(1)
    self.ids = rng.integers(5, V, size=[2, 12]).astype(np.int32)
    self.mask = np.ones_like(self.ids)
    self.mask[1, 9:] = 0

  def test_reproduces_the_reference_discriminator_and_generator(self):
    model = electra_tf1.import_electra_tf1(self.path, num_attention_heads=HEADS,
                                           generator_num_attention_heads=GEN_HEADS)
    self.assertEqual((model.discriminator.config.hidden_size, model.discriminator.config.num_layers,
                      model.generator.config.hidden_size), (H, L, HG))
    self.assertIs(model.generator.embeddings, model.discriminator.embeddings)  # tied
    batch = {"input_word_ids": self.ids, "input_mask": self.mask,
             "input_type_ids": np.zeros_like(self.ids)}
    real = self.mask > 0
    x, t = reference_encoder(self.tensors, "electra", self.ids, self.mask.astype(np.float64),
                             HEADS)
    d = "discriminator_predictions"
    expected = (gelu(x @ t[f"{d}/dense/kernel"] + t[f"{d}/dense/bias"])
                @ t[f"{d}/dense_1/kernel"] + t[f"{d}/dense_1/bias"])[..., 0]
    sequence = model.discriminator(batch)["sequence_output"]
    self.assertAllClose(sequence.numpy()[real], x[real], atol=1e-4)
    self.assertAllClose(model.rtd_head(sequence).numpy()[real], expected[real], atol=1e-4)

    g, t = reference_encoder(self.tensors, "generator", self.ids, self.mask.astype(np.float64),
                             GEN_HEADS)
    positions = np.array([[1, 2], [3, 4]])
    p = "generator_predictions"
    h = gelu(np.take_along_axis(g, positions[..., None], 1) @ t[f"{p}/dense/kernel"]
             + t[f"{p}/dense/bias"])
    h = layer_norm(h, t, f"{p}/LayerNorm")
    expected = h @ t["electra/embeddings/word_embeddings"].T + t[f"{p}/output_bias"]
    got = model.masked_lm(model.generator(batch)["sequence_output"], tf.constant(positions))
    self.assertAllClose(got, expected, atol=1e-3)

  def test_missing_and_misshaped_variables_are_named(self):
    broken = dict(self.tensors)
    del broken["electra/encoder/layer_1/intermediate/dense/bias"]
    broken["discriminator_predictions/dense/kernel"] = np.zeros([H, 3], np.float32)
    path = write_tf1_checkpoint(broken, os.path.join(tempfile.mkdtemp(), "model.ckpt"))
    with self.assertRaises(electra_tf1.CheckpointImportError) as e:
      electra_tf1.import_electra_tf1(path, num_attention_heads=HEADS,
                                     generator_num_attention_heads=GEN_HEADS)
    message = str(e.exception)
    self.assertIn("missing electra/encoder/layer_1/intermediate/dense/bias", message)
    self.assertIn("discriminator_predictions/dense/kernel has shape [32, 3], expected [32, 32]",
                  message)
    with self.assertRaisesRegex(electra_tf1.CheckpointImportError, "cannot read checkpoint"):
      electra_tf1.import_electra_tf1("/nonexistent/model.ckpt")


if __name__ == "__main__":
  tf.test.main()
