"""What this machine's CPU is and which half precisions it computes natively (TensorFlow-free:
benchmark scripts and `--help` read it without loading TensorFlow). Figures from different CPUs
are not comparable, so every benchmark prints `cpu_summary()`."""
import platform
from typing import Optional

# CPU feature flags (/proc/cpuinfo "flags" on x86, "Features" on Arm) that compute each half
# precision natively.
NATIVE_CPU_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
                    "float16": ("avx512_fp16", "amx_fp16", "fphp")}


def cpu_description(cpuinfo: Optional[str] = None):
  """(model name, set of feature flags) of the first CPU in `cpuinfo` (default: /proc/cpuinfo;
  empty where it cannot be read, e.g. not Linux)."""
  if cpuinfo is None:
    try:
      with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        cpuinfo = f.read()
    except OSError:
      cpuinfo = ""
  model, features = platform.processor() or platform.machine(), set()
  for line in cpuinfo.splitlines():
    key, _, value = line.partition(":")
    key = key.strip().lower()
    if key == "model name" and value.strip():
      model = value.strip()
    elif key in ("flags", "features") and not features:
      features = set(value.split())
  return model, features


def cpu_computes_natively(name: str, cpuinfo: Optional[str] = None) -> bool:
  """Whether the CPU has an instruction set for `name` (float32 always)."""
  if name == "float32":
    return True
  return any(flag in cpu_description(cpuinfo)[1] for flag in NATIVE_CPU_FLAGS[name])


def cpu_summary(cpuinfo: Optional[str] = None) -> str:
  """One line for benchmark outputs: the CPU model and its native half precisions."""
  model, _ = cpu_description(cpuinfo)
  native = [name for name in ("bfloat16", "float16") if cpu_computes_natively(name, cpuinfo)]
  return f"CPU: {model}; native half precision: {', '.join(native) or 'none (emulated)'}"
