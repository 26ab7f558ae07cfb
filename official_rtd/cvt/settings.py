"""A CVT run's settings (`CvtRunConfig`: `run_cvt`'s flags) and their ranges, shared by `run_cvt`
and `cvt_translate` without TensorFlow (their `--help` imports no more)."""
import dataclasses
from typing import ClassVar, Tuple

from official_rtd.utils import ranges

# Valid values of every number of `CvtRunConfig` (`ranges.Range`), checked where the config is
# built, for `run_cvt` and `cvt_translate` alike, and stated in their `--help`.
RUN_CONFIG_RANGES = {
    "word_dim": (1, None, True), "char_dim": (1, None, True), "lstm1_size": (1, None, True),
    "lstm2_size": (1, None, True), "projection_size": (1, None, True),
    "hidden_size": (1, None, True), "train_steps": (1, None, True),
    "train_batch_size": (1, None, True), "max_sentence_length": (2, None, True),
    "max_train_sentences": (0, None, True), "train_fraction": (0, 1, False),
    "vocab_unlabeled_sentences": (0, None, True), "vocab_min_count": (1, None, True),
    "target_min_count": (1, None, True), "beam_size": (1, None, True),
    "max_decode_length": (1, None, True), "attention_dropout": (0, 1, True, False),
    "learning_rate": (0, None, True), "warmup_steps": (0, None, True),
    "unlabeled_start_step": (0, None, True), "unlabeled_loss_weight": (0, None, False),
    "ema_decay": (0, 1, True),
    "eval_every_steps": (0, None, True), "patience": (0, None, True),
    "save_checkpoints_steps": (0, None, True), "log_every_steps": (1, None, True),
    "num_trials": (1, None, True),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CvtRunConfig:
  # The settings that name data inputs, whose content the run's fingerprint digests.
  INPUTS: ClassVar[Tuple[str, ...]] = ("data_dir", "unlabeled_data", "word_embeddings",
                                       "init_from_encoder")
  tasks: str
  data_dir: str
  model_dir: str
  unlabeled_data: str = ""
  unlabeled_remainder: bool = False
  mode: str = "cvt"
  word_embeddings: str = ""
  init_from_encoder: str = ""
  word_dim: int = 300
  char_dim: int = 50
  lstm1_size: int = 1024
  lstm2_size: int = 512
  projection_size: int = 512
  hidden_size: int = 512
  train_steps: int = 20000
  train_batch_size: int = 64
  max_sentence_length: int = 100
  on_decode_error: str = "fail"
  on_bad_pair: str = "fail"
  max_train_sentences: int = 0
  train_fraction: float = 1.0
  vocab_unlabeled_sentences: int = 200000
  vocab_min_count: int = 3
  target_min_count: int = 6
  beam_size: int = 10
  max_decode_length: int = 50
  attention_dropout: float = 0.5
  learning_rate: float = 0.5
  warmup_steps: int = 0
  unlabeled_start_step: int = 0
  unlabeled_loss_weight: float = 1.0
  ema_decay: float = 0.998
  eval_every_steps: int = 1000
  patience: int = 0
  save_checkpoints_steps: int = 1000
  log_every_steps: int = 100
  num_trials: int = 1
  seed: int = 0

  def __post_init__(self):
    ranges.check_ranges(self, RUN_CONFIG_RANGES)
    if self.on_bad_pair not in ("fail", "skip"):
      raise ValueError(f"--on_bad_pair must be fail or skip, got {self.on_bad_pair!r}")
