"""T5 relative position buckets as an encoder option (AMOS's positional encoding)."""
import dataclasses
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import layerwise_decay
from official_rtd.interop import huggingface
from official_rtd.methods import amos
from official_rtd.methods import teams
from official_rtd.modeling.layers.transformer_block import TransformerBlock
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from tests import testutil
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import toy_batch

RELATIVE = dataclasses.replace(CONFIG, position_embedding="t5_relative",
                               relative_attention_num_buckets=8,
                               relative_attention_max_distance=16)


def run(encoder, ids, mask):
  return encoder({"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
                  "input_type_ids": tf.zeros_like(ids)}, training=False)["sequence_output"].numpy()


class RelativePositionTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    tf_keras.utils.set_random_seed(0)

  def test_one_shared_bias_and_no_absolute_positions(self):
    encoder = TransformerEncoder(RELATIVE)
    run(encoder, np.array([[2, 10, 11, 3]]), np.ones([1, 4], np.int32))
    names = [v.name for v in encoder.trainable_variables]
    self.assertFalse(any("position_embedding" in n for n in names), names)
    biases = [v for v in encoder.trainable_variables if "rel_embedding" in v.name]
    self.assertLen(biases, 1)
    self.assertEqual(biases[0].shape, (8, RELATIVE.num_attention_heads))
    # Every layer's attention uses it: zeroing it changes the output.
    before = run(encoder, np.array([[2, 10, 11, 3]]), np.ones([1, 4], np.int32))
    biases[0].assign(tf.zeros_like(biases[0]))
    self.assertNotAllClose(run(encoder, np.array([[2, 10, 11, 3]]), np.ones([1, 4], np.int32)),
                           before)
    # Layer-wise LR decay: like any weight shared by all layers, it counts at its top use.
    multipliers = layerwise_decay.learning_rate_multipliers(encoder, encoder, 0.5)
    self.assertAllClose(multipliers[biases[0].name], 0.5 ** 2)

  def test_only_relative_positions_are_seen(self):
    """Shifting a sequence right behind a masked-out token leaves every output unchanged with
    relative positions, and changes them with absolute ones."""
    ids = np.array([[2, 10, 11, 12, 13, 3]], np.int32)
    shifted = np.array([[7, 2, 10, 11, 12, 13, 3]], np.int32)
    mask, shifted_mask = np.ones([1, 6], np.int32), np.array([[0, 1, 1, 1, 1, 1, 1]], np.int32)
    relative = TransformerEncoder(RELATIVE)
    self.assertAllClose(run(relative, shifted, shifted_mask)[:, 1:], run(relative, ids, mask),
                        atol=1e-5)
    absolute = TransformerEncoder(CONFIG)
    self.assertNotAllClose(run(absolute, shifted, shifted_mask)[:, 1:], run(absolute, ids, mask),
                           atol=1e-3)

  def test_amos_with_relative_positions(self):
    model = amos.build_amos_pretrainer(RELATIVE, mlm_layers=(1, 2))
    batch = toy_batch()
    losses = model.compute_losses(batch, model(batch, training=True))
    self.assertTrue(np.isfinite(float(losses["total_loss"].value)))
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    with self.assertRaisesRegex(huggingface.ExportFormatError, "t5_relative positions"):
      huggingface.export_huggingface(model, vocab, os.path.join(tempfile.mkdtemp(), "hf"))

  def test_teams_shares_one_bias_across_generator_discriminator_and_task_layer(self):
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    config = dataclasses.replace(RELATIVE, vocab_size=vocab.size, num_layers=4)
    model = teams.build_teams_pretrainer(config, vocab=vocab, num_shared_generator_layers=1)
    batch = toy_batch()
    outputs = model(batch, training=False)
    blocks = (model.generator.transformer_layers + model.discriminator.transformer_layers
              + [model.mws_layer])
    self.assertTrue(all(isinstance(b, TransformerBlock) and b._position_bias is not None
                        for b in blocks))
    biases = [v for v in model.trainable_variables if "rel_embedding" in v.name]
    self.assertLen(biases, 1)
    self.assertFalse(any("position_embedding" in v.name for v in model.trainable_variables))
    # The generator's own (unshared) layers and the MWS task layer read the shared bias.
    biases[0].assign(tf.zeros_like(biases[0]))
    changed = model(batch, training=False)
    for name in ("mlm_logits", "mws_logits"):
      self.assertNotAllClose(changed[name], outputs[name], msg=name)

  def test_bad_option(self):
    with self.assertRaisesRegex(ValueError, "position_embedding must be one of"):
      TransformerEncoder(dataclasses.replace(CONFIG, position_embedding="rotary"))


if __name__ == "__main__":
  tf.test.main()
