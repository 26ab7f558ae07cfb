"""Every gin task file composes with a model file and builds a working model."""
import glob
import os

import gin
import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.tools import run_pretraining
from official_rtd.training import precision
from official_rtd.training import trainer as trainer_lib
from tests import testutil

TASKS = sorted(glob.glob(os.path.join(testutil.REPO, "gin", "tasks", "*.gin")))
MODELS = sorted(glob.glob(os.path.join(testutil.REPO, "gin", "models", "*.gin")))


class GinFilesTest(tf.test.TestCase):

  def test_every_task_builds_and_runs(self):
    self.assertGreaterEqual(len(TASKS), 9)
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    for task in TASKS:
      if task.endswith("electra_two_stage.gin"):
        continue  # needs a stage-1 run: tests/modeling/test_training_algorithms.py
      gin.clear_config()
      run_pretraining.parse_gin(["gin/models/tiny.gin", task],
                                ["EncoderConfig.num_layers = 2", "EncoderConfig.hidden_size = 32",
                                 "EncoderConfig.intermediate_size = 64"])
      for mixed_precision in ("float32", "bfloat16"):
        with precision.policy(mixed_precision):
          model = trainer_lib.pretraining_model(EncoderConfig(vocab_size=vocab.size),
                                                vocab=vocab,
                                                token_counts=lambda: np.arange(vocab.size))
          ids = tf.constant([[vocab.cls_id, 10, 11, 12, 13, 14, vocab.sep_id, vocab.pad_id]])
          batch = {"input_word_ids": ids, "input_mask": tf.cast(ids != vocab.pad_id, tf.int32),
                   "input_type_ids": tf.zeros_like(ids),
                   "masked_lm_positions": tf.constant([[2, 4]]),
                   "masked_lm_ids": tf.constant([[11, 13]]),
                   "masked_lm_weights": tf.constant([[1.0, 1.0]])}
          with tf.GradientTape() as tape:
            losses = model.compute_losses(batch, model(batch, training=True))
          grads = tape.gradient(losses["total_loss"], model.trainable_variables)
        where = f"{task} ({mixed_precision})"
        self.assertTrue(bool(tf.math.is_finite(losses["total_loss"])), where)
        self.assertEqual(losses["total_loss"].dtype, tf.float32, where)
        self.assertTrue(all(bool(tf.reduce_all(tf.math.is_finite(g)))
                            for g in grads if g is not None and not isinstance(g, tf.IndexedSlices)),
                        where)
      self.assertGreater(model.train_flops_per_example(8, 2), 0, task)
      self.assertIsNotNone(model.exported_encoder, task)

  def test_every_model_file_parses(self):
    for model_file in MODELS:
      gin.clear_config()
      run_pretraining.parse_gin([model_file, "gin/tasks/electra.gin"], [])
      self.assertGreater(trainer_lib.TrainConfig().train_batch_size, 0, model_file)


if __name__ == "__main__":
  tf.test.main()
