"""ELECTRA with unigram / uniform generators: the noise distribution, the loss, the counting pass."""
import os
import tempfile

import gin
import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import noise_generator
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import trainer as trainer_lib
from tests import testutil
from tests.data.test_pretraining_data import read_records
from tests.data.test_pretraining_data import unmask
from tests.methods.test_electra import toy_batch
from tests.training.test_trainer import make_records

VOCAB = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
CONFIG = EncoderConfig(vocab_size=VOCAB.size, hidden_size=16, num_layers=1, num_attention_heads=2,
                       intermediate_size=32, embedding_size=16, max_position_embeddings=16)


class NoiseGeneratorTest(tf.test.TestCase):

  def test_samples_follow_the_distribution(self):
    counts = np.zeros(VOCAB.size)
    counts[[10, 11, 12]] = [6, 3, 1]
    counts[VOCAB.cls_id] = 100  # special: never sampled
    model = noise_generator.build_noise_generator_electra(CONFIG, vocab=VOCAB, token_counts=counts)
    batch = toy_batch()
    samples = np.concatenate([model(batch, training=False)["sampled_ids"].numpy()[
        batch["masked_lm_weights"].numpy() > 0] for _ in range(700)])
    frequencies = np.bincount(samples, minlength=VOCAB.size)[[10, 11, 12]] / len(samples)
    self.assertEqual(np.bincount(samples, minlength=VOCAB.size)[[10, 11, 12]].sum(), len(samples))
    self.assertAllClose(frequencies, [0.6, 0.3, 0.1], atol=0.03)
    uniform = noise_generator.build_noise_generator_electra(CONFIG, vocab=VOCAB,
                                                            distribution="uniform")
    drawn = np.concatenate([uniform(batch, training=False)["sampled_ids"].numpy().ravel()
                            for _ in range(50)])
    self.assertFalse(VOCAB.is_special()[drawn].any())
    self.assertGreater(len(set(drawn)), 250)
    with self.assertRaisesRegex(ValueError, "distribution must be one of"):
      noise_generator.build_noise_generator_electra(CONFIG, vocab=VOCAB, distribution="zipf")

  def test_loss_is_the_discriminator_loss_only(self):
    model = noise_generator.build_noise_generator_electra(CONFIG, vocab=VOCAB,
                                                          distribution="uniform", rtd_weight=50.0)
    batch = toy_batch()
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    self.assertAllClose(losses["total_loss"].value, 50.0 * losses["rtd_loss"].value)
    self.assertNotIn("mlm_loss", losses)
    self.assertEqual(model.trainable_variables, model.discriminator.trainable_variables
                     + model.rtd_head.trainable_variables)

  def test_trainer_counts_the_records_tokens(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=40)
    gin.bind_parameter("pretraining_model.method", "electra_noise_generator")
    trainer = runs.build_trainer(
        os.path.join(tmp, "run"), records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(train_batch_size=8, num_train_steps=2,
                                             max_seq_length=64, max_predictions_per_seq=10),
        encoder_config=EncoderConfig(hidden_size=16, num_layers=1, num_attention_heads=2,
                                     intermediate_size=32, embedding_size=16,
                                     max_position_embeddings=64), log=lambda _: None)
    _, rows = read_records(records)
    expected = np.zeros(VOCAB.size, np.int64)
    for row in rows:
      ids = unmask(row)
      expected += np.bincount(ids[row["input_mask"] > 0], minlength=VOCAB.size)
    self.assertAllEqual(np.load(os.path.join(tmp, "run", "token_counts.npy")), expected)
    probabilities = np.exp(trainer.model.noise_log_probs.numpy())
    special = VOCAB.is_special()
    self.assertAllClose(probabilities[~special], expected[~special] / expected[~special].sum(),
                        atol=1e-6)
    trainer.train()
    self.assertEqual(trainer.step, 2)


if __name__ == "__main__":
  tf.test.main()
