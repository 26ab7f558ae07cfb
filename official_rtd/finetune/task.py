"""The fine-tuning task contract and registry (as google-research/electra's `finetune/task.py` and
Model Garden's tasks): a task reads and encodes its data, builds its head on an encoder, defines
the loss, predicts, evaluates and names its primary metric. `runner.Runner` owns everything else
(the export, defaults, trials, checkpoints, the best trial, publishing, the summary), so a new
task is one module:

  @task.register("my_task")
  class MyTask(task.Task):
    default_epochs = 3
    primary_metric = "accuracy"
    def __init__(self, config, export, log): ...  # read and encode the data once
    def train_arrays(self): ...      # (features, labels) numpy nests, one row per example
    def build_model(self, encoder): ...
    def loss(self, model, batch, progress): ...
    def evaluate(self, model, trial_dir): ...

and the runner picks it by `config.task_name`. The same class takes part in multi-task (BAM)
runs (`bam/multitask.py`, `run_glue --tasks=...`) when it sets `multitask = True` and implements the
methods under "taking part in a multi-task run": each task family is written once.
"""
import json
import math
import typing
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Type

import tensorflow as tf

from official_rtd.finetune import trials as trials_lib
from official_rtd.utils import subsets


class Task:
  """One fine-tuning task. Constructed once per run (after the export is loaded) with the
  run's config, the `export.Export` and a log function; its data is read and encoded then.

  Attributes a task sets (class or instance):
    default_epochs: epochs when `--num_train_epochs` is unset.
    primary_metric: the dev metric that picks the best trial (dotted for nested dicts, e.g.
      `glue.average`).
    published: per-trial files copied from the best trial to `<model_dir>`.
    run_name: the name a run directory's fingerprint records for this task's runs. The existing
      tasks keep the names of the runner classes they replaced ("GlueRunner", ...): run
      directories written before record those, and a changed name would refuse to resume them.
    protocols: the `--protocol` values the task accepts (`trials.PROTOCOL_DEFAULTS`).
    multitask: whether the task can join a multi-task run (then it also sets `family`,
      `num_outputs`, `teacher_file` and `num_train` and implements the methods below).

  Args:
    config: the run's config (a multi-task run's own, with `name` given).
    export: the `export.Export` fine-tuned.
    log: takes one line.
    name: set when the task is one member of a multi-task run (its name among `--tasks`);
      otherwise the task is `config.task`.
  """

  default_epochs: float = 3.0
  primary_metric: str = "accuracy"
  published: Sequence[str] = ()
  run_name: str = ""
  protocols: Sequence[str] = ("electra",)
  multitask: bool = False
  family: str = ""  # "glue" members make up a multi-task run's `glue.average`
  num_outputs: int = 0  # units of its head in a multi-task run (`Dense` on the encoder output)
  teacher_file: str = ""  # its teacher file's name in a teacher run's directory
  teacher_path: str = ""  # the teacher file read (`read_teacher`), "" without one
  num_train: int = 0  # training examples of a multi-task member (after `--max_train_examples`)

  def __init__(self, config, export, log: Callable[[str], None], name: Optional[str] = None):
    self.config = config
    self.export = export
    self.tokenizer = export.tokenizer
    self.log = log
    self.name = (name or getattr(config, "task", "") or "").lower()
    self.is_member = name is not None

  @classmethod
  def optimizer_defaults(cls, config) -> Dict:
    """Settings of `config`'s run overriding the per-size defaults: its `--protocol`'s (checked
    against `protocols`; a config without one is "electra"). Called before the task is
    constructed."""
    return trials_lib.protocol_defaults(getattr(config, "protocol", "electra"), cls.protocols)

  def subset(self, items: Sequence) -> list:
    """A `--max_train_examples` random subset of `items` (in their order), or all of them."""
    return [items[i] for i in subset_rows(len(items), self.config)]

  def check_max_seq_length(self):
    positions = self.export.encoder_config["max_position_embeddings"]
    if self.config.max_seq_length > positions:
      raise ValueError(f"--max_seq_length={self.config.max_seq_length} exceeds the encoder's "
                       f"max_position_embeddings {positions}")

  # --- training ----------------------------------------------------------------------------------
  def num_train_rows(self) -> int:
    """Training examples per epoch."""
    return len(tf.nest.flatten(self.train_arrays()[1])[0])

  def train_arrays(self):
    """`(features, labels)`: numpy nests with one row per training example."""
    raise NotImplementedError

  def train_dataset(self, seed: int, batch_size: int) -> tf.data.Dataset:
    """Batches of `(features, labels)`, repeated, deterministic for `seed` (a resumed trial
    replays it). Default: `train_arrays` shuffled."""
    features, labels = self.train_arrays()
    return (tf.data.Dataset.from_tensor_slices((features, labels))
            .shuffle(self.num_train_rows(), seed=seed).repeat()
            .batch(batch_size, drop_remainder=True).prefetch(2))

  def build_model(self, encoder):
    """The task's model on `encoder`, with its variables created."""
    raise NotImplementedError

  def loss(self, model, batch, progress) -> tf.Tensor:
    """The scalar training loss of `batch`; `progress` is the step's fraction of training (a
    float tensor in [0, 1], for schedules such as teacher annealing)."""
    raise NotImplementedError

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate(self, model, trial_dir: Optional[str]) -> dict:
    """Dev metrics of `model`; writes the trial's output files (`published` among them) into
    `trial_dir` (None: an evaluation during training, nothing written)."""
    raise NotImplementedError

  def primary(self, dev: dict) -> float:
    """The primary metric's value in a trial's dev metrics (`primary_metric`, dotted)."""
    value = dev
    for key in self.primary_metric.split("."):
      value = value[key]
    return float(value)

  def brief(self, dev: dict) -> str:
    """One line of a trial's dev metrics for the log."""
    return json.dumps(dev)

  # --- the run -----------------------------------------------------------------------------------
  def describe(self) -> str:
    """The run's opening log line (data sizes), before the resolved defaults."""
    return self.run_name

  def summary_fields(self, median: dict) -> dict:
    """Task fields of `eval_results.json` (e.g. the task name, labels), given the median dev
    metrics."""
    return {}

  def resolved(self) -> dict:
    """Settings the task resolved (beyond the optimizer's), for `eval_results.json`."""
    return {}

  def finish(self, trials: List[dict], best: dict, model_dir: str) -> None:
    """After every trial (e.g. GLUE's test-set submission from the best trial)."""

  # --- taking part in a multi-task (BAM) run (`multitask = True`) ---------------------------------
  def read_teacher(self, path: str) -> None:
    """Reads the teacher file at `path` (checked against the training set); sets
    `teacher_path`."""
    raise NotImplementedError

  def mixture_dataset(self, seed: int) -> tf.data.Dataset:
    """Unbatched `(features, targets)` of the training examples, shuffled (for `seed`) and
    repeated; `targets` holds the task's own gold and teacher tensors."""
    raise NotImplementedError

  def output(self, head, dropout, sequence_output, inputs, training):
    """The task's output from the shared encoder's `[batch, seq_len, hidden]` sequence output
    through its `head` (a `Dense` of `num_outputs` units) and the shared `dropout`."""
    raise NotImplementedError

  def example_losses(self, output, features, targets, lam):
    """`(losses, units)`, both `[batch]`: each example's summed loss against λ·gold +
    (1 − λ)·teacher, and the units it sums over (1 per sentence, its words for tagging)."""
    raise NotImplementedError

  def evaluate_head(self, predict) -> Tuple[Dict[str, dict], Optional[float]]:
    """Dev metrics `{key: metrics}` and the primary metric in [0, 1] (None: not averaged);
    `predict(features, label)` runs the task's head over numpy features."""
    raise NotImplementedError

  def write_head_teacher(self, path: str, predict) -> None:
    """Writes the task's training-set predictions (a teacher for a later run) to `path`."""
    raise NotImplementedError


def subset_rows(count: int, config) -> List[int]:
  """Indices (ascending) of a `--max_train_examples` random subset of `count` rows (seeded by
  `--seed`), or all of them."""
  return subsets.random_rows(count, config.max_train_examples, config.seed)


_TASKS: Dict[str, Type[Task]] = {}


def get_multitask(name: str) -> Type[Task]:
  """The task registered as `name` (case-insensitive), checked to take part in multi-task runs."""
  name = name.lower()
  if not getattr(_TASKS.get(name), "multitask", False):
    known = sorted(n for n, cls in _TASKS.items() if cls.multitask)
    raise ValueError(f"--tasks names {name!r}, which cannot join a multi-task run; known: "
                     f"{', '.join(known)}")
  return _TASKS[name]


def _registry(table: dict, what: str):
  """A class decorator factory `(*names)` registering a class in `table` under each name."""

  def register_as(*names: str):
    def decorate(cls):
      for name in names:
        existing = table.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
          raise ValueError(f"{what} name {name!r} is registered twice")
        table[name] = cls
      return cls
    return decorate
  return register_as


register = _registry(_TASKS, "fine-tuning task")  # @register("rte", ...) on a `Task`


def get(name: str) -> Type[Task]:
  """The task registered as `name` (case-insensitive)."""
  if name.lower() not in _TASKS:
    raise ValueError(f"unknown fine-tuning task {name!r} (--task); one of: "
                     f"{', '.join(sorted(_TASKS)) or 'none'}")
  return _TASKS[name.lower()]


def config_type(cls: Type[Task]) -> type:
  """The config dataclass a task is built from (its `__init__`'s `config` annotation)."""
  return typing.get_type_hints(cls.__init__)["config"]


def names_for(config_class: type) -> List[str]:
  """The registered tasks built from `config_class` (one tool's tasks)."""
  return sorted(n for n, cls in _TASKS.items() if config_type(cls) is config_class)


def num_steps(rows: int, batch_size: int, epochs: float) -> int:
  """Training steps for `epochs` over `rows` examples in batches of `batch_size`."""
  return int(math.ceil(max(rows // batch_size, 1) * epochs))
