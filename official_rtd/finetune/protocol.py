"""Fine-tuning's protocol, shared by every fine-tuning tool: the papers' per-size defaults, the
protocols `--protocol` names, and ELECTRA's fine-tuning optimizer (layer-wise learning-rate decay).
The trials themselves (loop, steps, restore, predict) are `official_rtd.trials`."""
from typing import Dict

from official_rtd.finetune import layerwise_decay
from official_rtd.training import optimization
from official_rtd.training import precision

# (learning rate, layer-wise decay) by model size, dissertation Table 5.2 (GLUE and SQuAD).
SIZE_DEFAULTS = {"small": (3e-4, 0.8), "base": (1e-4, 0.8), "large": (5e-5, 0.9)}
# `--protocol` names a paper's fine-tuning settings besides "electra" (the defaults above):
# "shao": Shao's BERT fine-tuning of RACE and PTB POS (thesis §IV.B: learning rate 5e-5, no
# layer-wise decay, 3 epochs, RACE at 384 tokens as [CLS] article [SEP] question [SEP] option
# [SEP], the mean of 10 runs reported; the batch size is not stated, ours stays).
# "bam": BAM's single-task models and teachers (dissertation §3.3: BERT's settings — learning
# rate 5e-5 from BERT's {5, 4, 3, 2}e-5, batch 32, 3 epochs — with α = 0.9 (or 1.0, picked on
# dev) in lr·α^d, layer 0 the closest to the output; §3.2.2: the same prediction function as the
# multi-task student, sigmoid(wᵀc) on STS-B labels / 5).
PROTOCOL_DEFAULTS = {
    "electra": {},
    "shao": {"learning_rate": 5e-5, "layerwise_lr_decay": 1.0},
    "bam": {"learning_rate": 5e-5, "layerwise_lr_decay": 0.9, "lr_decay_convention": "corrected"},
}


def protocol_defaults(protocol: str, allowed) -> Dict:
  """The optimizer settings `--protocol` sets (flags given still win); `allowed`: the
  protocols of the task."""
  if protocol not in allowed:
    raise ValueError(f"--protocol must be one of {list(allowed)}, got {protocol!r}")
  return dict(PROTOCOL_DEFAULTS[protocol])


def model_size(encoder_config: dict, requested: str) -> str:
  """`requested`, or (for "auto") small/base/large by hidden size (<=256, <=768, more)."""
  if requested != "auto":
    if requested not in SIZE_DEFAULTS:
      raise ValueError(f"--model_size must be auto or one of {sorted(SIZE_DEFAULTS)}")
    return requested
  hidden = encoder_config["hidden_size"]
  return "small" if hidden <= 256 else "base" if hidden <= 768 else "large"


def check_convention(convention: str):
  if convention not in layerwise_decay.CONVENTIONS:
    raise ValueError(f"--lr_decay_convention must be one of {list(layerwise_decay.CONVENTIONS)}")


def build_optimizer(model, encoder, learning_rate: float, layerwise_lr_decay: float,
                    convention: str, num_steps: int, warmup_proportion: float,
                    weight_decay_rate: float, mixed_precision: str = "float32"):
  """AdamW (ε 1e-6) with layer-wise LR decay, linear warmup then linear decay, clipping 1.0
  (with dynamic loss scaling under float16).

  `model` must be built (its variables exist)."""
  multipliers = layerwise_decay.learning_rate_multipliers(model, encoder, layerwise_lr_decay,
                                                          convention)
  schedule = optimization.WarmupDecay(
      learning_rate, int(warmup_proportion * num_steps), num_steps)
  return precision.wrap_optimizer(layerwise_decay.LayerwiseAdamWeightDecay(
      multipliers, learning_rate=schedule, weight_decay_rate=weight_decay_rate,
      beta_1=0.9, beta_2=0.999, epsilon=1e-6,
      exclude_from_weight_decay=optimization.NO_DECAY, gradient_clip_norm=1.0), mixed_precision)
