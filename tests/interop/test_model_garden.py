"""Model Garden ELECTRA checkpoints import into ours and give Model Garden's outputs."""
import dataclasses
import gc
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.interop import electra_tf1
from official_rtd.interop import model_garden
from tests.training.test_trainer import TINY

CONFIG = dataclasses.replace(TINY, vocab_size=80, embedding_size=32, dropout_rate=0.0,
                             attention_dropout_rate=0.0, num_layers=2)  # layer order is checked


class ModelGardenImportTest(tf.test.TestCase):

  def test_copy_by_name_refuses_layers_whose_weights_differ(self):
    with_bias = tf_keras.layers.Dense(3, name="a")
    without_bias = tf_keras.layers.Dense(3, use_bias=False, name="a")
    with_bias.build([None, 2]), without_bias.build([None, 2])
    with self.assertRaisesRegex(electra_tf1.CheckpointImportError, r"\['kernel:0'\] do not match"):
      model_garden.copy_weights_by_name(with_bias, without_bias)

  def test_round_trip(self):
    mg = model_garden.model_garden_electra(CONFIG, generator_size=0.5)
    mg(model_garden._dummy_batch())  # pylint: disable=protected-access
    disc, gen = mg.discriminator_network, mg.generator_network
    # Model Garden ties only the token embeddings; give its generator the discriminator's others,
    # as ours shares them.
    for name in ("_position_embedding_layer", "_type_embedding_layer", "_embedding_norm_layer"):
      getattr(gen, name).set_weights(getattr(disc, name).get_weights())
    path = tf.train.Checkpoint(model=mg).write(os.path.join(tempfile.mkdtemp(), "ckpt"))
    ours = model_garden.import_model_garden_electra(path, CONFIG, generator_size=0.5)

    ids = np.random.default_rng(0).integers(5, 80, size=[2, 10]).astype(np.int32)
    batch = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
             "input_type_ids": np.zeros_like(ids)}
    mg_sequence = disc(batch)["sequence_output"]
    sequence = ours.discriminator(batch)["sequence_output"]
    self.assertAllClose(sequence, mg_sequence, atol=1e-5)
    self.assertAllClose(
        ours.rtd_head(sequence),
        tf.squeeze(mg.discriminator_head(mg.discriminator_projection(mg_sequence)), -1),
        atol=1e-5)
    positions = tf.constant([[1, 2], [3, 4]])
    self.assertAllClose(ours.masked_lm(ours.generator(batch)["sequence_output"], positions),
                        mg.masked_lm(gen(batch)["sequence_output"], positions), atol=1e-5)

  def test_mismatched_sizes(self):
    mg = model_garden.model_garden_electra(CONFIG, generator_size=0.5)
    mg(model_garden._dummy_batch())  # pylint: disable=protected-access
    path = tf.train.Checkpoint(model=mg).write(os.path.join(tempfile.mkdtemp(), "ckpt"))
    with self.assertRaisesRegex(electra_tf1.CheckpointImportError, "does not fit a Model Garden"):
      model_garden.import_model_garden_electra(
          path, dataclasses.replace(CONFIG, hidden_size=32), generator_size=0.5)
    with self.assertRaisesRegex(electra_tf1.CheckpointImportError, "no checkpoint at"):
      model_garden.import_model_garden_electra("/nonexistent", CONFIG)
    # Another vocabulary: one line saying so, and no TensorFlow restore warnings after it.
    with self.assertNoLogs("tensorflow", level="WARNING"):
      with self.assertRaisesRegex(
          electra_tf1.CheckpointImportError,
          rf"does not fit a Model Garden ELECTRA of these sizes \(vocabulary 77, .*\); its word "
          rf"embeddings are {CONFIG.vocab_size} × "):
        model_garden.import_model_garden_electra(
            path, dataclasses.replace(CONFIG, vocab_size=77), generator_size=0.5)
      gc.collect()

  def test_a_checkpoint_of_another_kind_is_named_by_variables_not_values(self):
    """Our own run's checkpoint given as Model Garden's: TensorFlow's error lists each unbound
    `tf.Variable` with its numpy values (the line ended in a cut-off dump); ours names three."""
    run = os.path.join(os.path.dirname(__file__), "..", "testdata", "pretraining_run_db8a9be")
    ours = dataclasses.replace(TINY, vocab_size=150, hidden_size=16, num_layers=1,
                               num_attention_heads=2, intermediate_size=32, embedding_size=16,
                               max_position_embeddings=32)
    with self.assertRaises(electra_tf1.CheckpointImportError) as raised:
      model_garden.import_model_garden_electra(run, ours, generator_size=0.25)
    message = str(raised.exception)
    self.assertRegex(message, r": \d+ of the model's variables have no value in the checkpoint "
                              r"\(e\.g\. [\w/]+, [\w/]+, [\w/]+\): it is not a Model Garden "
                              r"ElectraPretrainer checkpoint, or not of these sizes$")
    self.assertNotIn("tf.Variable", message)
    self.assertNotIn("numpy", message)


if __name__ == "__main__":
  tf.test.main()
