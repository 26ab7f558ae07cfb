"""Mixed precision and XLA options shared by pre-training and fine-tuning.

`bfloat16` and `float16` compute in half precision with float32 variables (Keras mixed policies);
the models keep logits, softmax, sampling and losses in float32. `float16` also scales the loss
(dynamic loss scaling) so small gradients do not underflow; `bfloat16` has float32's range and
needs none.

Half precision only pays where the hardware computes it: TPUs and recent GPUs do, and so do x86
CPUs with AVX512_BF16 / AMX-BF16 (bfloat16) or AVX512_FP16 / AMX-FP16 (float16). Elsewhere oneDNN
emulates it, and ELECTRA-Small's bfloat16 step ran 16x slower than float32 on an AVX2-only CPU
(64 vs 1,036 tokens/s); `warn_if_emulated` says so in one line.
"""
import contextlib
import functools
from typing import Callable, Optional

import tensorflow as tf
import tf_keras

from official_rtd.utils import cpu

PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def check(precision: str):
  if precision not in PRECISIONS:
    raise ValueError(f"--mixed_precision must be one of {sorted(PRECISIONS)}, got {precision!r}")


# The minimum CUDA compute capability with fast tensor-core math in that precision.
GPU_CAPABILITY = {"bfloat16": (8, 0), "float16": (7, 0)}

def emulation_warning(name: str, cpuinfo: Optional[str] = None,
                      accelerators: Optional[dict] = None) -> Optional[str]:
  """A one-line warning when `name` would be emulated on this machine's compute device, else None.

  Args:
    name: float32 / bfloat16 / float16.
    cpuinfo: /proc/cpuinfo text (for tests); default: this machine's.
    accelerators: {"TPU": n, "GPU": [(major, minor) compute capability, ...]} (for tests);
      default: the devices TensorFlow sees.
  """
  check(name)
  if name == "float32":
    return None
  if accelerators is None:
    accelerators = _accelerators()
  if accelerators.get("TPU"):
    return None if name == "bfloat16" else (
        "--mixed_precision=float16 on a TPU: TPUs compute bfloat16, not float16; use bfloat16")
  gpus = accelerators.get("GPU")
  if gpus:
    slow = [c for c in gpus if c is not None and tuple(c) < GPU_CAPABILITY[name]]
    if not slow:
      return None
    need = ".".join(map(str, GPU_CAPABILITY[name]))
    return (f"--mixed_precision={name}: GPU compute capability {slow[0][0]}.{slow[0][1]} has no "
            f"fast {name} (needs {need}); it may run slower than float32, which is advised")
  if cpu.cpu_computes_natively(name, cpuinfo):
    return None
  model, _ = cpu.cpu_description(cpuinfo)
  flags = " / ".join(cpu.NATIVE_CPU_FLAGS[name][:2]).upper()
  return (f"--mixed_precision={name}: this CPU ({model}) has no native {name} ({flags}), so it "
          f"is emulated and can be many times slower than float32 (16x measured for ELECTRA-Small "
          f"bfloat16 on an AVX2-only CPU); use --mixed_precision=float32 here")


@functools.lru_cache(maxsize=None)
def _accelerators_cached():
  gpus = []
  for device in tf.config.list_physical_devices("GPU"):
    try:
      gpus.append(tf.config.experimental.get_device_details(device).get("compute_capability"))
    except (ValueError, RuntimeError):
      gpus.append(None)
  return (("TPU", len(tf.config.list_logical_devices("TPU"))), ("GPU", tuple(gpus)))


def _accelerators():
  return dict(_accelerators_cached())


def warn_if_emulated(name: str, log: Callable[[str], None]) -> Optional[str]:
  """Logs `emulation_warning(name)` when there is one (and returns it)."""
  message = emulation_warning(name)
  if message:
    log("WARNING: " + message)
  return message


@contextlib.contextmanager
def policy(precision: str):
  """Builds the layers created inside under `precision`'s Keras policy, then restores the old one
  (layers keep the policy they were created with)."""
  check(precision)
  previous = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[precision])
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(previous)


def wrap_optimizer(optimizer, precision: str):
  """float16: a dynamic loss-scale optimizer around `optimizer`; otherwise `optimizer`."""
  if precision == "float16":
    return tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer


def scaled(optimizer, loss):
  """The loss to differentiate (scaled under float16)."""
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    return optimizer.get_scaled_loss(loss)
  return loss


def unscaled(optimizer, grads):
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    return optimizer.get_unscaled_gradients(grads)
  return grads
