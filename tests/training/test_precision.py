"""Mixed precision (bfloat16, float16 with loss scaling) and XLA in the pre-training trainer."""
import os

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.modeling.models import electra
from tests.training.test_trainer import RecordsTestCase, text_trainer


class PrecisionTest(RecordsTestCase):
  PARAGRAPHS = 150

  def _trainer(self, name, steps=40, **config):
    return text_trainer(os.path.join(self.tmp, name), self.records,
                        electra.build_electra_pretrainer, steps=steps, log_every_steps=10,
                        warmup_steps=5, save_checkpoints_steps=10, **config)

  def test_bfloat16_computes_in_half_precision_and_learns(self):
    trainer, logged = self._trainer("bf16", mixed_precision="bfloat16")
    # The policy applies to this model only; the global one is restored.
    self.assertEqual(tf_keras.mixed_precision.global_policy().name, "float32")
    model = trainer.model
    self.assertEqual(model.discriminator.transformer_layers[0].compute_dtype, "bfloat16")
    self.assertTrue(all(v.dtype == tf.float32 for v in model.trainable_variables))
    trainer.train()
    self.assertTrue(all(np.isfinite(row["total_loss"]) for row in logged), logged)
    self.assertLess(logged[-1]["mlm_loss"], logged[0]["mlm_loss"] - 0.3, logged)

  def test_float16_scales_the_loss_and_resumes(self):
    trainer, logged = self._trainer("fp16", steps=10, mixed_precision="float16")
    self.assertIsInstance(trainer.optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    trainer.train()
    self.assertTrue(np.isfinite(logged[-1]["total_loss"]), logged)
    resumed, _ = self._trainer("fp16", steps=20, mixed_precision="float16")
    self.assertEqual(resumed.restore(), 10)
    self.assertEqual(float(resumed.optimizer.loss_scale), float(trainer.optimizer.loss_scale))
    resumed.train()
    self.assertEqual(resumed.step, 20)

  def test_jit_compile(self):
    trainer, logged = self._trainer("xla", steps=10, jit_compile=True)
    trainer.train()
    self.assertTrue(np.isfinite(logged[-1]["total_loss"]), logged)
    self.assertEqual(trainer.step, 10)


if __name__ == "__main__":
  tf.test.main()
