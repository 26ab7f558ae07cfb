"""The pre-training run's settings (`TrainConfig`, gin-configurable), checked when built."""
import dataclasses
import logging
from typing import Tuple

import gin

from official_rtd.utils import ranges


@gin.configurable
@dataclasses.dataclass(frozen=True)
class TrainConfig:
  # Examples per micro-batch over all replicas; an optimizer update takes
  # gradient_accumulation_steps of them (the effective batch is their product).
  train_batch_size: int = 128
  num_train_steps: int = 1_000_000
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  # > 0: also keep the checkpoint of every multiple of this step for good, in <model_dir>/milestones
  # (hard links, no copy), for evaluating a long run's curve later.
  keep_checkpoint_every_steps: int = 0
  log_every_steps: int = 100
  shuffle_buffer_size: int = 10000
  seed: int = 0
  # > 0: train for as many steps as fit in this many section 5.2.2 FLOPs (overrides
  # num_train_steps, so the learning rate decays to its end at the budget).
  train_flops_budget: float = 0.0
  mixed_precision: str = "float32"  # or bfloat16, float16 (with dynamic loss scaling)
  jit_compile: bool = False  # XLA-compile each replica's forward and backward pass
  # Warm start (`training/warm_start.py`, `run_pretraining --warm_start_from`): the weights of
  # another run's or an imported checkpoint when this run has none of its own; the components left
  # fresh if the source lacks them.
  warm_start_from: str = ""
  warm_start_allow_missing: Tuple[str, ...] = ()
  # k > 1: each update sums the gradients of k micro-batches of train_batch_size run one after
  # another, every loss normalised over all k (equal to one batch of k·train_batch_size).
  gradient_accumulation_steps: int = 1
  # A step whose loss or gradient norm is not finite never changes a weight. Then: "skip" goes on
  # with the next batch (and stops after nonfinite_patience such steps in a row), "rollback"
  # restores the last checkpoint and goes on with the next batches (stops after
  # nonfinite_patience rollbacks), "stop" stops at once. Each names the step and the loss.
  on_nonfinite: str = "skip"
  nonfinite_patience: int = 10
  # > 0: keep an exponential moving average of the weights (e.g. 0.999), in the checkpoints, used
  # for held-out evaluation and exported to <model_dir>/export_ema.
  ema_decay: float = 0.0
  # Later phases of one run: dicts with "start_step" and any of "input_records",
  # "max_seq_length", "train_batch_size", "max_predictions_per_seq" (unset: the previous
  # phase's), e.g. BERT's 90% of the steps at 128 tokens, then 512. The step, optimizer state and
  # schedule carry on; the first phase is the run's own input and the fields above.
  phases: Tuple[dict, ...] = ()
  # The names warm_start_from and warm_start_allow_missing had before: still accepted, with a
  # deprecation line.
  init_checkpoint: dataclasses.InitVar[str] = ""
  init_checkpoint_allow_missing: dataclasses.InitVar[Tuple[str, ...]] = ()

  def __post_init__(self, init_checkpoint, init_checkpoint_allow_missing):
    for old, new, value in (("init_checkpoint", "warm_start_from", init_checkpoint),
                            ("init_checkpoint_allow_missing", "warm_start_allow_missing",
                             init_checkpoint_allow_missing)):
      if not value:
        continue
      if getattr(self, new) and getattr(self, new) != value:
        raise ValueError(f"TrainConfig.{old} (deprecated) = {value!r} and TrainConfig.{new} = "
                         f"{getattr(self, new)!r} disagree: give TrainConfig.{new} only")
      logging.warning("TrainConfig.%s is deprecated: it is now TrainConfig.%s", old, new)
      object.__setattr__(self, new, tuple(value) if isinstance(value, list) else value)
    ranges.check_ranges(self, TRAIN_CONFIG_RANGES, "TrainConfig.{name} = {value}")
    if self.on_nonfinite not in NONFINITE_POLICIES:
      raise ValueError(f"TrainConfig.on_nonfinite = {self.on_nonfinite!r} must be one of "
                       f"{NONFINITE_POLICIES}")
    previous = 0
    for index, phase in enumerate(self.phases):
      where = f"TrainConfig.phases[{index}]"
      if not isinstance(phase, dict) or "start_step" not in phase:
        raise ValueError(f"{where} = {phase!r} must be a dict with a 'start_step'")
      unknown = sorted(set(phase) - set(PHASE_FIELDS))
      if unknown:
        raise ValueError(f"{where} has unknown keys {unknown}; known: {list(PHASE_FIELDS)}")
      start = phase["start_step"]
      if not isinstance(start, int) or not previous < start < self.num_train_steps:
        raise ValueError(f"{where}['start_step'] = {start!r} must be an int after the previous "
                         f"phase's start ({previous}) and before num_train_steps "
                         f"({self.num_train_steps})")
      previous = start
      for name in ("max_seq_length", "train_batch_size", "max_predictions_per_seq"):
        if name in phase:
          low = TRAIN_CONFIG_RANGES[name][0]
          if not isinstance(phase[name], int) or phase[name] < low:
            raise ValueError(f"{where}['{name}'] = {phase[name]!r} must be an int >= {low}")
    if self.phases and self.train_flops_budget:
      raise ValueError("TrainConfig.train_flops_budget and TrainConfig.phases cannot be combined: "
                       "set num_train_steps")


NONFINITE_POLICIES = ("skip", "rollback", "stop")
PHASE_FIELDS = ("start_step", "input_records", "max_seq_length", "train_batch_size",
                "max_predictions_per_seq")


# Valid values of TrainConfig's numbers (`ranges.Range`), checked when the config is built.
TRAIN_CONFIG_RANGES = {
    "train_batch_size": (1, None, True), "num_train_steps": (1, None, True),
    "max_seq_length": (3, None, True), "max_predictions_per_seq": (1, None, True),
    "save_checkpoints_steps": (1, None, True), "keep_checkpoint_max": (1, None, True),
    "keep_checkpoint_every_steps": (0, None, True),
    "log_every_steps": (1, None, True), "shuffle_buffer_size": (1, None, True),
    "train_flops_budget": (0, None, True), "gradient_accumulation_steps": (1, None, True),
    "nonfinite_patience": (1, None, True), "ema_decay": (0, 1, True)}
