"""Fine-tuning configurations. Field names are the tools' flag names; `None` means "the paper's
default" (resolved per model size). `FinetuneConfig` holds what every task family shares (the
export, trials, the optimizer and its layer-wise decay, precision); each family adds its data and
head options."""
import dataclasses
from typing import ClassVar, Optional, Tuple

from official_rtd.utils import ranges

# Valid values of the numeric settings every fine-tuning tool shares: (lowest, highest, whether
# the lowest is allowed); None means unset (the paper's default). Checked before any work starts,
# and stated in each flag's help.
RANGES = {
    "max_seq_length": (3, None, True),
    "train_batch_size": (1, None, True),
    "eval_batch_size": (1, None, True),
    "num_train_epochs": (0, None, False),
    "learning_rate": (0, None, False),
    "layerwise_lr_decay": (0, 1, False),
    "warmup_proportion": (0, 1, True),
    "weight_decay_rate": (0, None, True),
    "num_trials": (1, None, True),
    "max_train_examples": (0, None, True),
    "log_every_steps": (1, None, True),
    "save_checkpoints_steps": (0, None, True),
}


# Default epochs when `--num_train_epochs` is unset, TensorFlow-free so that every tool's `--help`
# prints them without importing a task: the tasks read them, and `EPOCHS_HELP` says them (a test
# checks it against the task registry).
DEFAULT_EPOCHS = 3.0
TASK_EPOCHS = {"rte": 10, "sts-b": 10, "squad": 2, "race": 2}  # the ELECTRA protocol's
MULTI_TASK_EPOCHS = 6  # run_glue with several --tasks (BAM)
PROTOCOL_EPOCHS = {"shao": 3, "bam": 3}  # --protocol's own, for the tasks that accept it
EPOCHS_HELP = {
    "GlueConfig": "3 (6: several --tasks; 10: rte, sts-b); --protocol=bam 3.",
    "TaggingConfig": "3; --protocol=shao 3.",
    "SquadConfig": "2.",
    "MultipleChoiceConfig": "2; --protocol=shao 3.",
    "ParsingConfig": "3.",
}


def task_epochs(name: str) -> float:
  """The default epochs of the task registered as `name` (the ELECTRA protocol)."""
  return TASK_EPOCHS.get(name, DEFAULT_EPOCHS)


def check_ranges(config) -> None:
  """Raises ValueError naming the first flag whose value is outside `RANGES`."""
  ranges.check_ranges(config, RANGES)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinetuneConfig:
  # The settings that name data inputs, whose content a run's fingerprint digests (`fingerprint`).
  INPUTS: ClassVar[Tuple[str, ...]] = ("init_checkpoint", "data_dir", "tfds_data_dir",
                                       "train_file", "dev_file", "predict_file",
                                       "teachers_from", "single_task_finetune")
  init_checkpoint: str
  model_dir: str
  random_init: bool = False
  model_size: str = "auto"
  max_seq_length: int = 128
  train_batch_size: Optional[int] = None
  eval_batch_size: int = 128
  num_train_epochs: Optional[float] = None
  learning_rate: Optional[float] = None
  layerwise_lr_decay: Optional[float] = None
  lr_decay_convention: Optional[str] = None
  warmup_proportion: float = 0.1
  weight_decay_rate: float = 0.0
  num_trials: int = 1
  seed: int = 0
  max_train_examples: int = 0
  log_every_steps: int = 100
  save_checkpoints_steps: int = 1000
  mixed_precision: str = "float32"
  jit_compile: bool = False

  def __post_init__(self):
    check_ranges(self)
    # Task names are case-insensitive, as GLUE spells them (RTE, SST-2, STS-B, CoLA).
    for name in ("task", "tasks"):
      if isinstance(getattr(self, name, None), str):
        object.__setattr__(self, name, getattr(self, name).lower())

  @property
  def task_name(self) -> str:
    """The registered task (`finetune/task.py`) this config runs."""
    return getattr(self, "task", "")


def shared_settings(config) -> dict:
  """`config`'s `FinetuneConfig` fields (what every family shares): the start of a multi-task
  member's own config (`task.Head.member_config`)."""
  return {f.name: getattr(config, f.name) for f in dataclasses.fields(FinetuneConfig)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class GlueConfig(FinetuneConfig):
  """`run_glue`: `--task` (single-task, the ELECTRA protocol) or `--tasks` (BAM multi-task
  fine-tuning and distillation, `bam/multitask.py`). `num_train_epochs` None is 3 (10 for RTE and
  STS-B), 6 multi-task."""
  task: str = ""
  tasks: str = ""
  data_dir: str = ""
  tfds_data_dir: str = ""
  double_unordered: bool = False
  do_predict: bool = False
  write_train_predictions: bool = False
  task_sampling_exponent: float = 0.75
  eval_every_steps: int = 0
  patience: int = 0
  teacher_dirs: str = ""
  teachers_from: str = ""
  teacher_annealing: str = "linear"
  teacher_lambda: float = 0.0
  single_task_finetune: str = ""
  protocol: str = "electra"
  task_data_dirs: str = ""

  def __post_init__(self):
    super().__post_init__()
    if self.patience < 0:
      raise ValueError(f"--patience={self.patience} must be >= 0")
    if self.patience and not self.eval_every_steps:
      raise ValueError(f"--patience={self.patience} counts dev evaluations: give "
                       "--eval_every_steps too")

  @property
  def task_name(self) -> str:
    return "bam" if self.tasks else self.task


def task_dirs(value: str, flag: str) -> dict:
  """`{task: dir}` of a `task:dir,...` flag value (`--task_data_dirs`, `--teacher_dirs`)."""
  dirs = {}
  for item in filter(None, (t.strip() for t in value.split(","))):
    task, sep, directory = item.partition(":")
    if not sep or not directory:
      raise ValueError(f"{flag} entry {item!r} is not task:dir")
    dirs[task] = directory
  return dirs


def task_data_dirs(config) -> dict:
  """`{task: folder}` from `--task_data_dirs=task:dir,...` (a multi-task run's per-task data,
  e.g. a tagging task beside GLUE tasks)."""
  return task_dirs(getattr(config, "task_data_dirs", ""), "--task_data_dirs")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadConfig(FinetuneConfig):
  """`run_squad`."""
  train_file: str
  predict_file: str
  version_2_with_negative: bool = False
  max_seq_length: int = 512
  doc_stride: int = 128
  max_query_length: int = 64
  max_answer_length: int = 30
  joint_prediction: bool = True
  beam_size: int = 20
  n_best_size: int = 20
  answerable_weight: float = 0.5
  na_threshold: float = -2.75
  eval_batch_size: int = 32
  num_train_epochs: Optional[float] = 2.0

  @property
  def task_name(self) -> str:
    return "squad"


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaggingConfig(FinetuneConfig):
  """`run_tagging`: `num_train_epochs` None is 3; `protocol` "shao" takes Shao's PTB settings
(`trials.PROTOCOL_DEFAULTS`)."""
  task: str
  data_dir: str
  train_file: str = ""
  dev_file: str = ""
  carve_dev_sentences: int = 1000
  label_column: int = -1
  tag_scheme: str = "bioes"
  window_stride: int = 0
  crf: bool = False
  allow_unseen_dev_tags: bool = False
  protocol: str = "electra"
  write_train_predictions: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultipleChoiceConfig(FinetuneConfig):
  """`run_multiple_choice`: `num_train_epochs` None is 2 (3 with `protocol` "shao", which also
takes Shao's RACE input layout, 384 tokens at most and his settings, `trials.PROTOCOL_DEFAULTS`)."""
  task: str = "race"
  data_dir: str
  train_splits: str = "train"
  dev_split: str = "dev"
  max_seq_length: int = 512
  max_dev_examples: int = 0
  train_batch_size: int = 16
  eval_batch_size: int = 32
  protocol: str = "electra"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ParsingConfig(FinetuneConfig):
  """`run_parsing`: a UD treebank folder (`*-ud-train.conllu`, `*-ud-dev.conllu`); `decode`
  "mst" (a well-formed tree, Chu-Liu-Edmonds) or "argmax" (each word's best edge)."""
  task: str = "ud"
  data_dir: str
  decode: str = "mst"
  projection_size: int = 128
