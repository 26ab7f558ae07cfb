"""Embedding sharing (shared / tokens / GDES / none): the modes' layers and errors; DeBERTa-v3's
gradient-disentangled embedding sharing against the shared model on the same weights, gradients by
role, exports of E_G + E_Δ."""
import os
import tempfile

import numpy as np
from safetensors import numpy as safetensors_numpy
import tensorflow as tf
import tf_keras

from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import export
from official_rtd.interop import huggingface
from official_rtd.interop import saved_model
from official_rtd.methods import amos
from official_rtd.methods import electra
from official_rtd.methods import objectives
from official_rtd.methods import replace_mlm
from official_rtd.methods import teams
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.disentangled_embeddings import DisentangledEmbeddings
from official_rtd.modeling.layers.embeddings import Embeddings
from tests import testutil
from tests.methods.test_electra import toy_batch

VOCAB = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
CONFIG = EncoderConfig(vocab_size=VOCAB.size, hidden_size=16, num_layers=2, num_attention_heads=2,
                       intermediate_size=32, embedding_size=8, max_position_embeddings=16,
                       dropout_rate=0.0, attention_dropout_rate=0.0)
ROLES = ("word", "position", "type", "gamma", "beta")


def batch():
  """The toy batch with both segment ids and fixed Gumbel noise (reproducible samples)."""
  return dict(toy_batch(), input_type_ids=tf.constant([[0] * 4 + [1] * 4] * 2),
              gumbel_noise=tf.constant(np.random.default_rng(0).gumbel(size=[2, 3, VOCAB.size]),
                                       tf.float32))


def randomize(variables, seed):
  rng = np.random.default_rng(seed)
  for variable in variables:
    variable.assign(rng.normal(scale=0.5, size=variable.shape).astype(np.float32))


def shared_and_gdes(**kwargs):
  """An ELECTRA with shared embeddings and one with GDES restored from its checkpoint (E_G = the
  shared tables, E_Δ = 0, every other weight equal)."""
  tf_keras.utils.set_random_seed(0)
  shared = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, **kwargs)
  shared(batch(), training=False)
  randomize(shared.discriminator.embeddings.tables().values(), 1)  # not the initial values
  path = tf.train.Checkpoint(model=shared).write(os.path.join(tempfile.mkdtemp(), "ckpt"))
  gdes = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, embedding_sharing="gdes",
                                          **kwargs)
  gdes(batch(), training=False)
  tf.train.Checkpoint(model=gdes).read(path).expect_partial()
  return shared, gdes


class EmbeddingsTest(tf.test.TestCase):

  def test_tables_path_equals_the_keras_sublayers(self):
    tf_keras.utils.set_random_seed(0)
    layer = Embeddings(50, 8, 16, dropout_rate=0.0)
    randomize(layer.tables().values(), 0)
    ids = tf.constant([[3, 7, 9, 1], [4, 4, 0, 2]])
    types = tf.constant([[0, 0, 1, 1], [0, 1, 1, 1]])
    word = layer.word_embeddings(ids)
    reference = layer.layer_norm(word + layer.type_embeddings(types)
                                 + layer.position_embeddings(word))
    self.assertAllClose(layer(ids, types), reference, atol=1e-6)

  def test_modes_and_their_errors(self):
    discriminator, generator = objectives.build_embedding_pair(CONFIG, "shared")
    self.assertIs(discriminator, generator)
    self.assertEqual(objectives.build_embedding_pair(CONFIG, "none"), (None, None))
    discriminator, generator = objectives.build_embedding_pair(CONFIG, "tokens")
    for role, table in discriminator.tables().items():
      (self.assertIs if role == "word" else self.assertIsNot)(generator.tables()[role], table, role)
    with self.assertRaisesRegex(ValueError, r"shared_word_embeddings is \(50, 8\), this layer's "
                                r"token table is \(50, 4\)"):
      Embeddings(50, 4, shared_word_embeddings=Embeddings(50, 8).word_embeddings)
    for options in (dict(generator_size=1.0, tie_all=True), dict(freeze_generator=True)):
      with self.assertRaisesRegex(ValueError, "tie_all|freeze_generator"):
        electra.build_electra_pretrainer(CONFIG, embedding_sharing="tokens", **options)
    discriminator, generator = objectives.build_embedding_pair(CONFIG, "gdes")
    self.assertIsInstance(discriminator, DisentangledEmbeddings)
    self.assertIs(discriminator.source, generator)
    with self.assertRaisesRegex(ValueError, "embedding_sharing must be one of"):
      objectives.build_embedding_pair(CONFIG, "tied")
    self.assertEqual(objectives.embedding_sharing_mode(None, False), "none")
    self.assertEqual(objectives.embedding_sharing_mode(None, None), "shared")
    with self.assertRaisesRegex(ValueError, "contradicts"):
      objectives.embedding_sharing_mode("gdes", True)
    with self.assertRaisesRegex(ValueError, "tie_all"):
      electra.build_electra_pretrainer(CONFIG, generator_size=1.0, tie_all=True,
                                       embedding_sharing="gdes")
    frozen = electra.build_electra_pretrainer(CONFIG, embedding_sharing="gdes",
                                              freeze_generator=True)
    frozen(batch(), training=False)
    trainable = {id(v) for v in frozen.trainable_variables}
    delta = frozen.discriminator.embeddings.delta
    self.assertTrue(all(id(v) in trainable for v in delta.trainable_variables))
    self.assertFalse(any(id(v) in trainable for v in frozen.generator.embeddings.weights))


class GdesTest(tf.test.TestCase):

  def test_step_zero_outputs_equal_the_shared_model(self):
    shared, gdes = shared_and_gdes()
    for role, delta in gdes.discriminator.embeddings.delta.tables().items():
      self.assertAllEqual(delta, tf.zeros_like(delta), msg=role)
    for role, table in shared.discriminator.embeddings.tables().items():
      self.assertAllEqual(gdes.generator.embeddings.tables()[role], table, msg=role)
    a, b = shared(batch(), training=False), gdes(batch(), training=False)
    for name in ("mlm_logits", "sampled_ids", "rtd_logits"):
      self.assertAllClose(a[name], b[name], atol=1e-6, msg=name)

  def test_rtd_gradient_goes_to_delta_not_to_the_generator_table(self):
    shared, gdes = shared_and_gdes()
    grads = {}
    for name, model in (("shared", shared), ("gdes", gdes)):
      with tf.GradientTape(persistent=True) as tape:
        losses = model.compute_losses(batch(), model(batch(), training=False))
      grads[name] = {
          "rtd": tape.gradient(losses["rtd_loss"].value,
                               model.generator.embeddings.tables()),
          "mlm": tape.gradient(losses["mlm_loss"].value, model.generator.embeddings.tables())}
      if name == "gdes":
        delta = model.discriminator.embeddings.delta.tables()
        grads[name]["delta_rtd"] = tape.gradient(losses["rtd_loss"].value, delta)
        grads[name]["delta_mlm"] = tape.gradient(losses["mlm_loss"].value, delta)
    for role in ROLES:
      self.assertIsNone(grads["gdes"]["rtd"][role], role)       # sg(E_G): no RTD gradient
      self.assertIsNone(grads["gdes"]["delta_mlm"][role], role)  # E_Δ: the discriminator's only
      shared_rtd = tf.convert_to_tensor(grads["shared"]["rtd"][role])
      self.assertGreater(float(tf.reduce_max(tf.abs(shared_rtd))), 0.0, role)
      self.assertAllClose(tf.convert_to_tensor(grads["gdes"]["delta_rtd"][role]), shared_rtd,
                          atol=1e-6, msg=role)
      self.assertAllClose(tf.convert_to_tensor(grads["gdes"]["mlm"][role]),
                          tf.convert_to_tensor(grads["shared"]["mlm"][role]), atol=1e-6, msg=role)

  def test_exports_hold_e_g_plus_delta(self):
    _, gdes = shared_and_gdes()
    randomize(gdes.discriminator.embeddings.delta.tables().values(), 2)
    effective = {role: (gdes.generator.embeddings.tables()[role]
                        + gdes.discriminator.embeddings.delta.tables()[role]).numpy()
                 for role in ROLES}
    inputs = {k: batch()[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    expected = gdes.discriminator(inputs)["sequence_output"]
    view = gdes.exported_encoder.for_export()
    self.assertIsInstance(view.embeddings, Embeddings)
    for role in ROLES:
      self.assertAllClose(view.embeddings.tables()[role], effective[role], msg=role)
    self.assertAllClose(view(inputs)["sequence_output"], expected, atol=1e-5)

    loaded = export.load_encoder(export.export_encoder(gdes, VOCAB, tempfile.mkdtemp(), 16))
    self.assertAllClose(loaded.get_embedding_table(), effective["word"])
    self.assertAllClose(loaded(inputs)["sequence_output"], expected, atol=1e-5)

    out = os.path.join(tempfile.mkdtemp(), "hf")
    huggingface.export_huggingface(gdes, VOCAB, out)
    tensors = safetensors_numpy.load_file(os.path.join(out, "discriminator", "model.safetensors"))
    self.assertAllClose(tensors["electra.embeddings.word_embeddings.weight"], effective["word"])
    self.assertAllClose(tensors["electra.embeddings.position_embeddings.weight"],
                        effective["position"])
    self.assertAllClose(tensors["electra.embeddings.LayerNorm.weight"], effective["gamma"])
    generator = safetensors_numpy.load_file(os.path.join(out, "generator", "model.safetensors"))
    self.assertAllClose(generator["electra.embeddings.word_embeddings.weight"],
                        gdes.generator.get_embedding_table())

    saved = os.path.join(tempfile.mkdtemp(), "saved")
    saved_model.export_saved_model(gdes, VOCAB, saved, max_seq_length=16)
    got = tf.saved_model.load(saved).signatures["serving_default"](
        tf.constant(["the rabbit hole", "down"]))
    ids = got["input_word_ids"]
    want = gdes.discriminator({"input_word_ids": ids, "input_mask": got["input_mask"],
                               "input_type_ids": tf.zeros_like(ids)})["sequence_output"]
    self.assertAllClose(got["sequence_output"], want, atol=1e-5)

  def test_every_pair_method_builds_with_gdes(self):
    """TEAMS (MWS head on the effective table), AMOS (soft inputs through it), Replace MLM (its
    MLM head tied to it): E_D = sg(E_G) + E_Δ, so the generator's loss never reaches E_Δ and the
    discriminator's losses reach E_G only where the method routes them through the generator
    itself (AMOS's gradient-reversed mixture), never through the table."""
    builders = {  # name: (builder, generator-side loss, discriminator-side losses, E_G closed)
        "teams": (lambda: teams.build_teams_pretrainer(CONFIG, vocab=VOCAB,
                                                       embedding_sharing="gdes"),
                  "mlm_loss", ("rtd_loss", "mws_loss"), True),
        "amos": (lambda: amos.build_amos_pretrainer(CONFIG, mlm_layers=(1, 2),
                                                    embedding_sharing="gdes"),
                 "generator_loss", ("rtd_loss",), False),
        "replace_mlm": (lambda: replace_mlm.build_replace_mlm_pretrainer(
            CONFIG, embedding_sharing="gdes"), "mlm_loss", ("model_loss",), True),
    }

    def size(gradient):
      return 0.0 if gradient is None else float(tf.reduce_max(tf.abs(
          tf.convert_to_tensor(gradient))))

    for name, (build, generator_loss, discriminator_losses, closed) in builders.items():
      tf_keras.utils.set_random_seed(0)
      model = build()
      self.assertIs(model.discriminator.embeddings.source, model.generator.embeddings, name)
      delta = model.discriminator.embeddings.delta.embedding_table
      e_g = model.generator.embeddings.embedding_table
      with tf.GradientTape(persistent=True) as tape:
        losses = model.compute_losses(batch(), model(batch(), training=False))
      self.assertEqual(size(tape.gradient(losses[generator_loss].value, delta)), 0.0, name)
      self.assertGreater(size(tape.gradient(losses[generator_loss].value, e_g)), 0.0, name)
      for loss in discriminator_losses:
        self.assertGreater(size(tape.gradient(losses[loss].value, delta)), 0.0, (name, loss))
        if closed:
          self.assertEqual(size(tape.gradient(losses[loss].value, e_g)), 0.0, (name, loss))

if __name__ == "__main__":
  tf.test.main()
