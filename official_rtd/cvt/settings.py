"""CVT's settings and their ranges, without TensorFlow (so `run_cvt --help` imports no more): the
encoder's sizes (`CvtConfig`), training (`CvtTrainConfig`), what every run shares
(`CvtSharedConfig`, whose model and training fields take their defaults and ranges from the first
two), each task's own (`TASK_SETTINGS`: translation's) and a run's, all of them (`CvtRunConfig`:
`run_cvt`'s flags)."""
import dataclasses
from typing import ClassVar, Sequence, Tuple

from official_rtd.utils import ranges

MODEL_CONFIG_RANGES = {
    "word_dim": (1, None, True), "char_dim": (1, None, True), "lstm1_size": (1, None, True),
    "lstm2_size": (1, None, True), "projection_size": (1, None, True),
    "hidden_size": (1, None, True)}


@dataclasses.dataclass(frozen=True)
class CvtConfig:
  """Table 4.1's sizes by default. v_t is the sum of the word embedding and the char CNN's
  output, so the CNN has `word_dim` filters in all, split evenly over the widths (300: 100 each)."""
  word_dim: int = 300
  char_dim: int = 50
  char_filter_widths: Sequence[int] = (2, 3, 4)
  lstm1_size: int = 1024
  lstm2_size: int = 512
  projection_size: int = 512
  hidden_size: int = 512

  def __post_init__(self):
    ranges.check_ranges(self, MODEL_CONFIG_RANGES)

  def filters(self):
    """Filters per width, summing to `word_dim`."""
    n = len(self.char_filter_widths)
    return [self.word_dim // n + (i < self.word_dim % n) for i in range(n)]


MODES = ("cvt", "supervised", "word_dropout")


@dataclasses.dataclass(frozen=True)
class CvtTrainConfig:
  mode: str = "cvt"
  learning_rate: float = 0.5
  lr_decay: float = 0.005
  warmup_steps: int = 0
  momentum: float = 0.9
  clip_norm: float = 1.0
  label_smoothing: float = 0.1
  labeled_dropout: float = 0.5
  unlabeled_dropout: float = 0.2
  word_dropout: float = 0.1
  ema_decay: float = 0.998
  unlabeled_loss_weight: float = 1.0

  def __post_init__(self):
    ranges.check_ranges(self, TRAIN_CONFIG_RANGES)
    if self.mode not in MODES:
      raise ValueError(f"--mode must be one of {MODES}, got {self.mode!r}")


# Valid values of CvtTrainConfig's numbers (`ranges.Range`).
TRAIN_CONFIG_RANGES = {
    "learning_rate": (0, None, True), "lr_decay": (0, None, True), "warmup_steps": (0, None, True),
    "momentum": (0, 1, True), "clip_norm": (0, None, True), "label_smoothing": (0, 1, True),
    "labeled_dropout": (0, 1, True), "unlabeled_dropout": (0, 1, True),
    "word_dropout": (0, 1, True), "ema_decay": (0, 1, True),
    "unlabeled_loss_weight": (0, None, False)}


# The run's fields that are the encoder's and training's (one default and one range each: theirs).
MODEL_FIELDS = ("word_dim", "char_dim", "lstm1_size", "lstm2_size", "projection_size",
                "hidden_size")
TRAIN_FIELDS = ("mode", "learning_rate", "warmup_steps", "unlabeled_loss_weight", "ema_decay")

# Valid values of every number of `CvtSharedConfig` (`ranges.Range`).
SHARED_RANGES = {
    **MODEL_CONFIG_RANGES,
    **{name: TRAIN_CONFIG_RANGES[name] for name in TRAIN_FIELDS if name in TRAIN_CONFIG_RANGES},
    "train_steps": (1, None, True),
    "train_batch_size": (1, None, True), "max_sentence_length": (2, None, True),
    "max_train_sentences": (0, None, True), "train_fraction": (0, 1, False),
    "vocab_unlabeled_sentences": (0, None, True), "vocab_min_count": (1, None, True),
    "unlabeled_start_step": (0, None, True),
    "eval_every_steps": (0, None, True), "patience": (0, None, True),
    "save_checkpoints_steps": (0, None, True), "log_every_steps": (1, None, True),
    "num_trials": (1, None, True),
}
_MODEL, _TRAIN = CvtConfig(), CvtTrainConfig()


# translate's auxiliary decoders (§4.2.4): attention dropout, and the word after next.
AUXILIARY_DECODERS = ("attention_dropout", "future")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranslationSettings:
  """`translate`'s own settings (§4.2.3: target words seen 5 times or fewer are UNK, beam 10)."""
  RANGES: ClassVar[dict] = {
      "target_min_count": (1, None, True), "beam_size": (1, None, True),
      "max_decode_length": (1, None, True), "attention_dropout": (0, 1, True, False)}
  on_bad_pair: str = "fail"
  target_min_count: int = 6
  beam_size: int = 10
  max_decode_length: int = 50
  attention_dropout: float = 0.5
  auxiliary_decoders: str = ",".join(AUXILIARY_DECODERS)

  def check(self):
    ranges.check_ranges(self, TranslationSettings.RANGES)
    if self.on_bad_pair not in ("fail", "skip"):
      raise ValueError(f"--on_bad_pair must be fail or skip, got {self.on_bad_pair!r}")
    names = self.auxiliary_decoders.split(",")
    if not names or len(set(names)) != len(names) or set(names) - set(AUXILIARY_DECODERS):
      raise ValueError(f"--auxiliary_decoders must be a comma list of "
                       f"{', '.join(AUXILIARY_DECODERS)} (each once), got "
                       f"{self.auxiliary_decoders!r}")


# Each task's own settings (a class with its `RANGES` and a `check`): a run's config is the shared
# one and all of these (`CvtRunConfig`, `run_cvt`'s flags), so a task that adds settings adds its
# class here and nothing to the shared config.
TASK_SETTINGS = (TranslationSettings,)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CvtSharedConfig:
  """The settings every CVT run has, whatever its tasks."""
  # The settings that name data inputs, whose content the run's fingerprint digests.
  INPUTS: ClassVar[Tuple[str, ...]] = ("data_dir", "unlabeled_data", "word_embeddings",
                                       "init_from_encoder")
  tasks: str
  data_dir: str
  model_dir: str
  unlabeled_data: str = ""
  unlabeled_remainder: bool = False
  mode: str = _TRAIN.mode
  word_embeddings: str = ""
  init_from_encoder: str = ""
  word_dim: int = _MODEL.word_dim
  char_dim: int = _MODEL.char_dim
  lstm1_size: int = _MODEL.lstm1_size
  lstm2_size: int = _MODEL.lstm2_size
  projection_size: int = _MODEL.projection_size
  hidden_size: int = _MODEL.hidden_size
  train_steps: int = 20000
  train_batch_size: int = 64
  max_sentence_length: int = 100
  on_decode_error: str = "fail"
  max_train_sentences: int = 0
  train_fraction: float = 1.0
  vocab_unlabeled_sentences: int = 200000
  vocab_min_count: int = 3
  learning_rate: float = _TRAIN.learning_rate
  warmup_steps: int = _TRAIN.warmup_steps
  unlabeled_start_step: int = 0
  unlabeled_loss_weight: float = _TRAIN.unlabeled_loss_weight
  ema_decay: float = _TRAIN.ema_decay
  eval_every_steps: int = 1000
  patience: int = 0
  save_checkpoints_steps: int = 1000
  log_every_steps: int = 100
  num_trials: int = 1
  seed: int = 0

  def check(self):
    ranges.check_ranges(self, SHARED_RANGES)
    CvtTrainConfig(mode=self.mode)  # refuses an unknown --mode

  def model_config(self) -> CvtConfig:
    return CvtConfig(**{name: getattr(self, name) for name in MODEL_FIELDS})

  def train_config(self) -> CvtTrainConfig:
    return CvtTrainConfig(**{name: getattr(self, name) for name in TRAIN_FIELDS})


@dataclasses.dataclass(frozen=True, kw_only=True)
class CvtRunConfig(CvtSharedConfig, *TASK_SETTINGS):
  """A run's settings (`run_cvt`'s flags): the shared ones and every task's own, flat (as every
  earlier run's fingerprint records them), each range-checked where the config is built."""

  def __post_init__(self):
    for part in (CvtSharedConfig,) + TASK_SETTINGS:
      part.check(self)


def check_trainable(config: CvtRunConfig) -> None:
  """What a run's training needs beyond each setting's range (`run_cvt`; a trained run read back
  for prediction does not train): the unlabeled text its mode reads, and an unlabeled start
  within the run's steps."""
  if config.mode != "supervised" and not (config.unlabeled_data or config.unlabeled_remainder):
    raise ValueError(f"--mode={config.mode} needs --unlabeled_data (a corpus) or "
                     "--unlabeled_remainder (the training sentences --train_fraction leaves out)")
  if not 0 <= config.unlabeled_start_step < config.train_steps:
    raise ValueError(f"--unlabeled_start_step={config.unlabeled_start_step} must be in "
                     f"[0, --train_steps={config.train_steps})")
  if config.unlabeled_start_step and config.mode == "supervised":
    raise ValueError("--unlabeled_start_step applies to --mode=cvt or word_dropout, not "
                     "--mode=supervised (which has no unlabeled steps)")


# Valid values of every number of `CvtRunConfig` (`ranges.Range`), for `run_cvt` and
# `cvt_predict` alike, and stated in their `--help`.
RUN_CONFIG_RANGES = {**SHARED_RANGES,
                     **{k: v for part in TASK_SETTINGS for k, v in part.RANGES.items()}}
