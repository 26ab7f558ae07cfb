"""Pre-training optimizers from Model Garden (AdamW or LAMB) with ELECTRA's learning-rate
schedule: linear warmup, then linear decay to `end_learning_rate` at the last step."""
import dataclasses
import math

import gin
from official.modeling import optimization
import tensorflow as tf
import tf_keras

from official_rtd.utils import ranges

# Variables whose name contains one of these get no weight decay (ELECTRA/BERT).
NO_DECAY = ["LayerNorm", "layer_norm", "bias"]


@gin.configurable
@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
  """ELECTRA's defaults (dissertation Table 5.1): AdamW, ε 1e-6, β 0.9/0.999, decay 0.01,
  10k warmup steps, linear decay to 0, global-norm clipping at 1.0 (done by the trainer after the
  cross-replica sum). Model Garden's AdamW applies Adam's bias correction; the original ELECTRA
  code skips it."""
  optimizer: str = "adamw"  # or "lamb"
  learning_rate: float = 5e-4
  warmup_steps: int = 10000
  end_learning_rate: float = 0.0
  weight_decay_rate: float = 0.01
  beta_1: float = 0.9
  beta_2: float = 0.999
  epsilon: float = 1e-6
  clip_norm: float = 1.0
  # After the warmup: "linear" (BERT/ELECTRA), "polynomial" ((1 − progress)^decay_power; NVIDIA's
  # BERT/ELECTRA recipes use 0.5) or "cosine" (half a cosine from learning_rate to the end).
  decay: str = "linear"
  decay_power: float = 1.0

  def __post_init__(self):
    ranges.check_ranges(self, OPTIMIZER_CONFIG_RANGES, "OptimizerConfig.{name} = {value}")
    if self.decay not in DECAYS:
      raise ValueError(f"OptimizerConfig.decay = {self.decay!r} must be one of {DECAYS}")
    if self.decay_power != 1.0 and self.decay != "polynomial":
      raise ValueError(f"OptimizerConfig.decay_power = {self.decay_power} needs "
                       f"OptimizerConfig.decay = 'polynomial' (it is {self.decay!r})")

  def clipping(self) -> str:
    """Where the gradients are clipped, as the trainer's first line says it."""
    return (f"gradients clipped to global norm {self.clip_norm:g} by the trainer after the "
            "cross-replica sum (the optimizer's own gradient_clip_norm is 0, unused)"
            if self.clip_norm > 0 else "no gradient clipping (OptimizerConfig.clip_norm = 0)")


DECAYS = ("linear", "polynomial", "cosine")


# Valid values of OptimizerConfig's numbers (`ranges.Range`); clip_norm 0 turns clipping off.
OPTIMIZER_CONFIG_RANGES = {
    "learning_rate": (0, None, False), "warmup_steps": (0, None, True),
    "end_learning_rate": (0, None, True), "weight_decay_rate": (0, None, True),
    "beta_1": (0, 1, True), "beta_2": (0, 1, True), "epsilon": (0, None, False),
    "clip_norm": (0, None, True), "decay_power": (0, None, False)}


class WarmupDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
  """BERT/ELECTRA's schedule and its variants: `peak · step / warmup` while `step < warmup`,
  else, with p = step / total (the decay runs over the *whole* run, as in the original code; Model
  Garden's `LinearWarmup` instead warms up to the already-decayed value):
    linear      (peak − end) · (1 − p) + end
    polynomial  (peak − end) · (1 − p)^power + end
    cosine      end + (peak − end) · (1 + cos(π p)) / 2
  """

  def __init__(self, peak: float, warmup_steps: int, total_steps: int, end: float = 0.0,
               decay: str = "linear", power: float = 1.0):
    super().__init__()
    if decay not in DECAYS:
      raise ValueError(f"decay must be one of {DECAYS}, got {decay!r}")
    self.peak, self.warmup_steps, self.total_steps, self.end = peak, warmup_steps, total_steps, end
    self.decay, self.power = decay, power

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    progress = tf.minimum(step, float(self.total_steps)) / float(max(self.total_steps, 1))
    if self.decay == "cosine":
      fraction = 0.5 * (1.0 + tf.cos(math.pi * progress))
    elif self.decay == "polynomial":
      fraction = tf.pow(1.0 - progress, self.power)
    else:
      fraction = 1.0 - progress
    decayed = (self.peak - self.end) * fraction + self.end
    if self.warmup_steps <= 0:
      return decayed
    warmup = self.peak * step / float(self.warmup_steps)
    return tf.where(step < self.warmup_steps, warmup, decayed)

  def get_config(self):
    return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps,
            "end": self.end, "decay": self.decay, "power": self.power}


def schedule_warning(config: OptimizerConfig, num_train_steps: int):
  """A warning when the warmup does not end before the run does (the learning rate would never
  reach `learning_rate`), else None. Model Garden's warmup in that case keeps the rate at 0."""
  if config.warmup_steps >= num_train_steps:
    bound = config.learning_rate * num_train_steps / max(config.warmup_steps, 1)
    return (f"WARNING: OptimizerConfig.warmup_steps = {config.warmup_steps} is not below the run's "
            f"{num_train_steps} steps: the learning rate stays below {bound:.3g} "
            f"(OptimizerConfig.learning_rate = {config.learning_rate:.3g})")
  return None


def build_optimizer(config: OptimizerConfig, num_train_steps: int):
  """Returns a Model Garden (legacy Keras 2) optimizer with its learning-rate schedule."""
  if config.optimizer not in ("adamw", "lamb"):
    raise ValueError(
        f"OptimizerConfig.optimizer must be 'adamw' or 'lamb', got {config.optimizer!r}")
  params = {"beta_1": config.beta_1, "beta_2": config.beta_2, "epsilon": config.epsilon,
            "weight_decay_rate": config.weight_decay_rate,
            "exclude_from_weight_decay": NO_DECAY}
  if config.optimizer == "adamw":
    params["gradient_clip_norm"] = 0.0  # clipped by the trainer, after the all-reduce
  else:
    params["exclude_from_layer_adaptation"] = NO_DECAY
  opt_config = optimization.OptimizationConfig({
      "optimizer": {"type": config.optimizer, config.optimizer: params},
      # Required by the factory; the schedule passed to build_optimizer is what is used.
      "learning_rate": {"type": "constant", "constant": {"learning_rate": config.learning_rate}}})
  schedule = WarmupDecay(config.learning_rate, config.warmup_steps, num_train_steps,
                         config.end_learning_rate, config.decay, config.decay_power)
  return optimization.OptimizerFactory(opt_config).build_optimizer(schedule)
