"""The fine-tuning contracts and registry (as google-research/electra's `finetune/task.py` and
Model Garden's tasks). `runner.Runner` owns everything common (the export, defaults, trials,
checkpoints, the best trial, publishing, the summary) and runs one `Task`.

A task whose model is one head on the encoder's outputs is a `Head` (GLUE, tagging): its head's
output, per-example losses, evaluation and teacher files are the whole contract, and every run of
it is a multi-task run (`multihead.HeadsRun`): `--task=rte` is a one-member run (weight 1, no
teacher), `--tasks=rte,chunk` a BAM run (`bam/multitask.py`). A new one is one module:

  @task.register("my_task")
  class MyTask(task.Head):
    primary_metric = "accuracy"
    def __init__(self, config, export, log): ...  # read and encode the data once
    def mixture_dataset(self, seed): ...          # unbatched (features, targets), repeated
    def output(self, head, dropout, sequence_output, inputs, training): ...
    def example_losses(self, head, output, features, targets, lam): ...
    def evaluate_head(self, predict, head, trial_dir): ...

A task whose model is more than a head (SQuAD's joint span head, RACE's choices, the biaffine
parser) is a `Task`: it builds its model, defines the loss and evaluates. Both are registered by
name and the runner picks one by `config.task_name`.
"""
import json
import math
import typing
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Type, Union

import tensorflow as tf

from official_rtd.finetune import heads
from official_rtd.finetune import protocol
from official_rtd.utils import subsets


class _Part:
  """What a `Task` and a `Head` share: the run's config, the export, its tokenizer and the log;
  the attributes the runner reads (see `Task`)."""

  default_epochs: float = 3.0
  primary_metric: str = "accuracy"
  published: Sequence[str] = ()
  run_name: str = ""
  protocols: Sequence[str] = ("electra",)
  help_name: str = ""  # what `--help` calls the task (default: its registered name)

  def __init__(self, config, export, log: Callable[[str], None]):
    self.config = config
    self.export = export
    self.tokenizer = export.tokenizer
    self.log = log

  @classmethod
  def epochs_default(cls, name: str) -> float:
    """Epochs of a run of the task registered as `name` when `--num_train_epochs` is unset and
    its `--protocol` sets none (what `--help` lists). Default: `default_epochs`."""
    del name  # the same for every name
    return cls.default_epochs

  @classmethod
  def optimizer_defaults(cls, config) -> Dict:
    """Settings of `config`'s run overriding the per-size defaults: its `--protocol`'s (checked
    against `protocols`; a config without one is "electra"). Called before the task is
    constructed."""
    return protocol.protocol_defaults(getattr(config, "protocol", "electra"), cls.protocols)

  def subset(self, items: Sequence) -> list:
    """A `--max_train_examples` random subset of `items` (in their order), or all of them."""
    return [items[i] for i in subset_rows(len(items), self.config)]

  def check_max_seq_length(self):
    positions = self.export.encoder_config["max_position_embeddings"]
    if self.config.max_seq_length > positions:
      raise ValueError(f"--max_seq_length={self.config.max_seq_length} exceeds the encoder's "
                       f"max_position_embeddings {positions}")

  def primary(self, dev: dict) -> float:
    """The primary metric's value in a trial's dev metrics (`primary_metric`, dotted)."""
    value = dev
    for key in self.primary_metric.split("."):
      value = value[key]
    return float(value)

  def brief(self, dev: dict) -> str:
    """One line of a trial's dev metrics for the log."""
    return json.dumps(dev)

  def describe(self) -> str:
    """The run's opening log line (data sizes), before the resolved defaults."""
    return self.run_name

  def summary_fields(self, median: dict) -> dict:
    """Task fields of `eval_results.json` (e.g. the task name, labels), given the median dev
    metrics."""
    return {}

  def finish(self, trials: List[dict], best: dict, model_dir: str) -> None:
    """After every trial (e.g. GLUE's test-set submission from the best trial)."""


class Task(_Part):
  """One fine-tuning run's model, loss and evaluation. Constructed once per run (after the export
  is loaded) with the run's config, the `export.Export` and a log function; its data is read and
  encoded then.

  Attributes a task sets (class or instance):
    default_epochs: epochs when `--num_train_epochs` is unset.
    primary_metric: the dev metric that picks the best trial (dotted for nested dicts, e.g.
      `glue.average`).
    published: per-trial files copied from the best trial to `<model_dir>`.
    run_name: the name a run directory's fingerprint records for this task's runs. The existing
      tasks keep the names of the runner classes they replaced ("GlueRunner", ...): run
      directories written before record those, and a changed name would refuse to resume them.
    protocols: the `--protocol` values the task accepts (`trials.PROTOCOL_DEFAULTS`).
  """

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

  def older_layouts(self, model) -> Dict[str, tf.Module]:
    """Views of `model` under the variable names of older code, to resume a trial checkpoint it
    wrote: `{a checkpoint key only that layout has: an object whose attributes are model's
    parts under their older names}`. Default: none."""
    del model  # unused
    return {}

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate(self, model, trial_dir: Optional[str]) -> dict:
    """Dev metrics of `model`; writes the trial's output files (`published` among them) into
    `trial_dir` (None: an evaluation during training, nothing written)."""
    raise NotImplementedError

  # --- the run -----------------------------------------------------------------------------------
  def resolved(self) -> dict:
    """Settings the task resolved (beyond the optimizer's), for `eval_results.json`."""
    return {}


class Head(_Part):
  """One task as a head on the shared encoder (the contract of every run of it: one member of
  `multihead.HeadsRun`, alone for `--task`, with others for `--tasks`).

  Attributes, besides `Task`'s (`published` and `finish`: a run of this task alone):
    family: "glue" members make up a multi-task run's `glue.average`.
    num_outputs: units of its head (`build_head`'s default `Dense` on the encoder output).
    teacher_file: its teacher file's name in a run's directory (`--write_train_predictions`).
    teacher_path: the teacher file read (`read_teacher`), "" without one.
    num_train: training examples per epoch (after `--max_train_examples`).

  Args:
    config: the run's config.
    export: the `export.Export` fine-tuned.
    log: takes one line.
    name: the task's name among `--tasks`, or `config.task` (alone). A member of `--tasks` is
      built from its own `member_config`: the task never asks whether it runs alone.
  """

  family: str = ""
  num_outputs: int = 0
  teacher_file: str = ""
  teacher_path: str = ""
  num_train: int = 0

  def __init__(self, config, export, log: Callable[[str], None], name: Optional[str] = None):
    super().__init__(config, export, log)
    self.name = (name or getattr(config, "task", "") or "").lower()

  @classmethod
  def member_config(cls, config, name: str):
    """The config the task `name` reads as a member of the multi-task run of `config` (BAM's
    `GlueConfig`): the run's shared settings and the member's own (its data, BAM's heads)."""
    raise NotImplementedError(f"{cls.__name__} defines no member_config: --tasks={name} cannot "
                              "join a multi-task run yet")

  def build_head(self, encoder, name: str):
    """The head's layer(s) named `name`; the model tracks what this returns. Default: a `Dense` of
    `num_outputs` units initialised as the encoder's weights."""
    return heads.dense(encoder, self.num_outputs, name)

  def mixture_dataset(self, seed: int) -> tf.data.Dataset:
    """Unbatched `(features, targets)` of the training examples, shuffled (for `seed`) and
    repeated; `targets` holds the task's own gold and teacher tensors."""
    raise NotImplementedError

  def output(self, head, dropout, sequence_output, inputs, training) -> tf.Tensor:
    """The task's output from the shared encoder's `[batch, seq_len, hidden]` sequence output
    through its `head` (`build_head`'s) and the shared `dropout`."""
    raise NotImplementedError

  def example_losses(self, head, output, features, targets, lam) -> Tuple[tf.Tensor, tf.Tensor]:
    """`(losses, units)`, both `[batch]`: each example's summed loss against λ·gold +
    (1 − λ)·teacher, and the units it sums over (1 per sentence, its words for tagging)."""
    raise NotImplementedError

  def evaluate_head(self, predict, head, trial_dir: Optional[str]
                    ) -> Tuple[dict, Optional[float]]:
    """`(dev, primary)`: the task's dev metrics (as a run of it alone reports them) and its
    primary metric in [0, 1] (None: not averaged with the others'); `predict(features, label)`
    runs the head over numpy features. With `trial_dir`, the task's own trial files
    (`published`) are written there."""
    raise NotImplementedError

  def head_checkpoint_names(self, head) -> Dict[str, object]:
    """`head`'s parts under the names the single-task models before this contract gave them on
    the model (to resume their trial checkpoints: `multihead.HeadsRun.older_layouts`). Default:
    `{"head": head}`."""
    return {"head": head}

  def multitask_entries(self, dev: dict) -> Dict[str, dict]:
    """`dev` as entries of a multi-task run's dev metrics. Default: `{name: dev}`."""
    return {self.name: dev}

  def read_teacher(self, path: str) -> None:
    """Reads the teacher file at `path` (checked against the training set); sets
    `teacher_path`."""
    raise NotImplementedError

  def write_head_teacher(self, path: str, predict) -> None:
    """Writes the task's training-set predictions (a teacher for a later run) to `path`."""
    raise NotImplementedError


def subset_rows(count: int, config) -> List[int]:
  """Indices (ascending) of a `--max_train_examples` random subset of `count` rows (seeded by
  `--seed`), or all of them."""
  return subsets.random_rows(count, config.max_train_examples, config.seed)


_TASKS: Dict[str, Type[Union[Task, Head]]] = {}


def get_multitask(name: str) -> Type[Head]:
  """The task registered as `name` (case-insensitive), checked to be a `Head` (able to take part
  in multi-task runs)."""
  name = name.lower()
  if not issubclass(_TASKS.get(name, Task), Head):
    known = sorted(n for n, cls in _TASKS.items() if issubclass(cls, Head))
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


register = _registry(_TASKS, "fine-tuning task")  # @register("rte", ...) on a `Task` or `Head`


def get(name: str) -> Type[Union[Task, Head]]:
  """The task registered as `name` (case-insensitive)."""
  if name.lower() not in _TASKS:
    raise ValueError(f"unknown fine-tuning task {name!r} (--task); one of: "
                     f"{', '.join(sorted(_TASKS)) or 'none'}")
  return _TASKS[name.lower()]


def config_type(cls: Type[Union[Task, Head]]) -> type:
  """The config dataclass a task is built from (its `__init__`'s `config` annotation)."""
  return typing.get_type_hints(cls.__init__)["config"]


def names_for(config_class: type) -> List[str]:
  """The registered tasks built from `config_class` (one tool's tasks)."""
  return sorted(n for n, cls in _TASKS.items() if config_type(cls) is config_class)


def epochs_defaults_text(config_class: type) -> str:
  """The default epochs of one tool's tasks (`names_for(config_class)`, `epochs_default`) as
  `--help` states them: the most common value, then the tasks that differ, e.g. "3 (10: rte,
  sts-b; 6: bam)"."""
  by_value: Dict[float, List[str]] = {}
  for name in names_for(config_class):
    cls = _TASKS[name]
    by_value.setdefault(cls.epochs_default(name), []).append(cls.help_name or name)
  if not by_value:
    return "none registered"
  common = max(by_value, key=lambda value: len(by_value[value]))
  others = "; ".join(f"{value:g}: {', '.join(names)}" for value, names in sorted(by_value.items())
                     if value != common)
  return f"{common:g}" + (f" ({others})" if others else "")


def num_steps(rows: int, batch_size: int, epochs: float) -> int:
  """Training steps for `epochs` over `rows` examples in batches of `batch_size`."""
  return int(math.ceil(max(rows // batch_size, 1) * epochs))
