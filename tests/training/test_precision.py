"""Mixed precision (bfloat16, float16 with loss scaling) and XLA in the pre-training trainer."""
import os
from unittest import mock

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd import runs
from official_rtd.methods import electra
from official_rtd.training import precision
from official_rtd.training import trainer as trainer_lib
from official_rtd.utils import cpu
from tests.training.test_trainer import RecordsTestCase
from tests.training.test_trainer import text_trainer
from tests.training.test_trainer import TINY

AVX2_ONLY = """processor\t: 0
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 fma
"""
SAPPHIRE_RAPIDS = """model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile avx512_fp16
"""
GRAVITON3 = """processor\t: 0
Features\t: fp asimd sve bf16 fphp asimdhp
"""


class EmulationWarningTest(tf.test.TestCase):

  def test_cpu_without_native_half_precision(self):
    for name in ("bfloat16", "float16"):
      message = precision.emulation_warning(name, AVX2_ONLY, accelerators={})
      self.assertRegex(message, f"^--mixed_precision={name}: this CPU \\(AMD EPYC 7B13\\) has "
                       "no native")
      self.assertIn("use --mixed_precision=float32", message)
    self.assertIn("AVX512_BF16 / AMX_BF16",
                  precision.emulation_warning("bfloat16", AVX2_ONLY, accelerators={}))
    self.assertIsNone(precision.emulation_warning("float32", AVX2_ONLY, accelerators={}))
    self.assertEqual(cpu.cpu_summary(AVX2_ONLY),
                     "CPU: AMD EPYC 7B13; native half precision: none (emulated)")

  def test_cpus_with_native_half_precision(self):
    for cpuinfo in (SAPPHIRE_RAPIDS, GRAVITON3):
      for name in ("bfloat16", "float16"):
        self.assertIsNone(precision.emulation_warning(name, cpuinfo, accelerators={}), cpuinfo)
    self.assertEqual(cpu.cpu_summary(SAPPHIRE_RAPIDS), "CPU: Intel(R) Xeon(R) Platinum "
                     "8481C; native half precision: bfloat16, float16")

  def test_accelerators(self):
    tpu, old_gpu, ampere = {"TPU": 8}, {"GPU": [(7, 5)]}, {"GPU": [(8, 0), (8, 6)]}
    self.assertIsNone(precision.emulation_warning("bfloat16", AVX2_ONLY, tpu))
    self.assertIn("TPUs compute bfloat16", precision.emulation_warning("float16", AVX2_ONLY, tpu))
    self.assertIn("GPU compute capability 7.5 has no fast bfloat16 (needs 8.0)",
                  precision.emulation_warning("bfloat16", AVX2_ONLY, old_gpu))
    self.assertIsNone(precision.emulation_warning("float16", AVX2_ONLY, old_gpu))
    self.assertIsNone(precision.emulation_warning("bfloat16", AVX2_ONLY, ampere))

  def test_bad_precision(self):
    with self.assertRaisesRegex(ValueError, "--mixed_precision must be one of"):
      precision.emulation_warning("int8", AVX2_ONLY, {})


class PrecisionTest(RecordsTestCase):
  PARAGRAPHS = 150

  def _trainer(self, name, steps=40, every=10, **config):
    return text_trainer(os.path.join(self.tmp, name), self.records,
                        electra.build_electra_pretrainer, steps=steps, log_every_steps=every,
                        warmup_steps=5, save_checkpoints_steps=every, **config)

  def test_trainer_warns_once_when_bfloat16_is_emulated(self):
    messages = []
    with mock.patch.object(precision, "_accelerators", return_value={}), \
         mock.patch.object(cpu, "cpu_description", return_value=("Test CPU", {"avx2"})):
      runs.build_trainer(os.path.join(self.tmp, "warn"), self.records,
                         tf.distribute.get_strategy(),
                         train_config=trainer_lib.TrainConfig(
                             train_batch_size=4, num_train_steps=1, max_seq_length=64,
                             max_predictions_per_seq=10, mixed_precision="bfloat16"),
                         encoder_config=TINY, model_fn=electra.build_electra_pretrainer,
                         log=messages.append)
    warnings = [m for m in messages if m.startswith("WARNING: ") and "bfloat16" in m]
    self.assertLen(warnings, 1)
    self.assertIn("this CPU (Test CPU) has no native bfloat16", warnings[0])

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
    trainer, logged = self._trainer("fp16", steps=4, every=4, mixed_precision="float16")
    self.assertIsInstance(trainer.optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    trainer.train()
    self.assertTrue(np.isfinite(logged[-1]["total_loss"]), logged)
    resumed, _ = self._trainer("fp16", steps=8, every=4, mixed_precision="float16")
    self.assertEqual(resumed.restore(), 4)
    self.assertEqual(float(resumed.optimizer.loss_scale), float(trainer.optimizer.loss_scale))
    resumed.train()
    self.assertEqual(resumed.step, 8)

  def test_jit_compile(self):
    trainer, logged = self._trainer("xla", steps=10, jit_compile=True)
    trainer.train()
    self.assertTrue(np.isfinite(logged[-1]["total_loss"]), logged)
    self.assertEqual(trainer.step, 10)


if __name__ == "__main__":
  tf.test.main()
