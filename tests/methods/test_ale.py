"""ALE (ELECTRA on ALBERT): shared blocks, tied embeddings, parameter counts, training, fine-tuning."""
import functools
import os
import tempfile

import gin
import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.methods import electra
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import optimization
from official_rtd.training import trainer as trainer_lib
from tests import testutil
from tests.training.test_trainer import make_records
from tests.training.test_trainer import text_trainer

SMALL = EncoderConfig(vocab_size=30522, hidden_size=256, num_layers=12, num_attention_heads=4,
                      intermediate_size=1024, embedding_size=128)


def count(variables):
  return int(sum(np.prod(v.shape) for v in variables))


def encoder_params(c: EncoderConfig) -> int:
  """Embeddings (token, position, type, LayerNorm) + E→H projection + blocks (attention Q,K,V,O;
  2 LayerNorms; FFN), one block when layers are shared."""
  h, f, e = c.hidden_size, c.intermediate_size, c.embedding_size
  embeddings = e * (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) + 2 * e
  projection = e * h + h if e != h else 0
  block = 4 * (h * h + h) + 2 * 2 * h + (h * f + f) + (f * h + h)
  return embeddings + projection + block * (1 if c.share_layers else c.num_layers)


def _built(config, **kwargs):
  model = electra.build_electra_pretrainer(config, **kwargs)
  ids = tf.constant([[2, 7, 8, 9, 3]])
  model({"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids),
         "masked_lm_positions": tf.constant([[1]]), "masked_lm_ids": tf.constant([[7]]),
         "masked_lm_weights": tf.constant([[1.0]])})
  return model


class AleModelTest(tf.test.TestCase):

  def test_shared_block_tied_embeddings_and_parameter_counts(self):
    ale = _built(EncoderConfig(**{**SMALL.to_json(), "share_layers": True}))
    disc, gen = ale.discriminator, ale.generator
    self.assertLen({id(layer) for layer in disc.transformer_layers}, 1)
    self.assertLen(disc.transformer_layers, 12)
    self.assertIs(gen.embeddings, disc.embeddings)
    self.assertEqual({id(v) for v in gen.embeddings.trainable_variables},
                     {id(v) for v in disc.embeddings.trainable_variables})
    self.assertTrue(gen.config.share_layers)
    self.assertLen({id(layer) for layer in gen.transformer_layers}, 1)
    # Counts match the formula; the thesis reports 4.8M (ALE-Small) and 13.5M (ELECTRA-Small).
    ale_count = count(disc.trainable_variables)
    self.assertEqual(ale_count, encoder_params(disc.config))
    self.assertAllClose(ale_count / 1e6, 4.8, atol=0.05)
    electra_small = _built(SMALL)
    electra_count = count(electra_small.discriminator.trainable_variables)
    self.assertEqual(electra_count, encoder_params(SMALL))
    self.assertAllClose(electra_count / 1e6, 13.5, atol=0.05)

  def test_gin_files(self):
    gin.clear_config()
    try:
      runs.parse_gin(["gin/models/ale_small.gin", "gin/tasks/ale.gin"], [])
      self.assertTrue(EncoderConfig().share_layers)
      self.assertEqual(EncoderConfig().embedding_size, 128)
      optimizer = optimization.OptimizerConfig()
      self.assertEqual((optimizer.optimizer, optimizer.epsilon, optimizer.weight_decay_rate),
                       ("lamb", 1e-6, 0.01))
      self.assertEqual(trainer_lib.TrainConfig().train_batch_size, 1024)
    finally:
      gin.clear_config()


class AleTrainingTest(tf.test.TestCase):

  def test_losses_fall_and_export_fine_tunes(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=300)
    config = EncoderConfig(hidden_size=64, num_layers=3, num_attention_heads=2,
                           intermediate_size=128, embedding_size=32, max_position_embeddings=64,
                           share_layers=True)
    trainer, logged = text_trainer(
        os.path.join(tmp, "ale"), records,
        functools.partial(electra.build_electra_pretrainer, generator_size=0.5),
        encoder_config=config, optimizer="lamb", learning_rate=1e-2)
    trainer.train()
    self.assertLess(logged[-1]["mlm_loss"], logged[0]["mlm_loss"] - 0.3, logged)
    self.assertLess(logged[-1]["rtd_loss"], logged[0]["rtd_loss"], logged)
    testutil.fine_tune_rte(self, os.path.join(tmp, "ale", "export"), os.path.join(tmp, "rte"))


if __name__ == "__main__":
  tf.test.main()
