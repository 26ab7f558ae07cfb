"""Every run of `task.Head` tasks: one shared encoder and a head per task (google-research/electra's
multi-task model, where a single-task run is a one-member run). `--task=rte` runs one member with
weight 1 and no teacher; `bam/multitask.py` runs several (`--tasks=...`) with BAM's sampling,
teachers and annealing.

Examples of all members are shuffled together, even within a batch: each example's task is drawn
with probability p(τ), every head runs on every example and the other tasks' losses are masked.
Each task adds its share of the batch times its mean loss over its examples in the batch (per word
for tagging), so a batch of one task gives exactly that task's own loss.
"""
import json
import os
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.finetune import distillation
from official_rtd.finetune import task as task_lib
from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.trials import steps as trial_steps


def sampling_probabilities(sizes: Sequence[int], exponent: float) -> np.ndarray:
  """p(τ) ∝ |D_τ|^exponent (0: uniform, 1: proportional)."""
  weights = np.asarray(sizes, np.float64) ** exponent
  return weights / weights.sum()


def head_name(task: str) -> str:
  return task.replace("-", "_")


class MultiTaskModel(tf_keras.Model):
  """`call` returns `{task: output}` (each member's `output`: `[batch, classes]` logits,
  `[batch]` regression values, `[batch, seq_len, tags]` word logits); `only=task` runs that head
  alone (its features suffice). `heads[head_name(task)]` is each member's `build_head`."""

  def __init__(self, encoder, members: Sequence[task_lib.Head], dropout_rate: float = 0.1,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.members = list(members)
    self.dropout = Dropout(dropout_rate)
    self.heads = {head_name(m.name): m.build_head(encoder, f"{head_name(m.name)}_head")
                  for m in self.members}

  def head_of(self, member: task_lib.Head):
    return self.heads[head_name(member.name)]

  def call(self, inputs, training=None, only=None):
    sequence = self.encoder(inputs, training=training)["sequence_output"]
    return {m.name: m.output(self.head_of(m), self.dropout, sequence, inputs, training)
            for m in self.members if only in (None, m.name)}


def multitask_loss(model: MultiTaskModel, outputs: Dict[str, tf.Tensor], features, targets,
                   lam) -> tf.Tensor:
  """Σ_τ (n_τ / batch) · Σ_{i: task_i = τ} ℓ_τ(i) / Σ_{i: task_i = τ} units_τ(i).

  Args:
    model: the `MultiTaskModel` (its members and heads).
    outputs: its outputs.
    features: the batch's features (every member's keys).
    targets: `task_id` `[batch]` (index into `members`) and, per member name, its targets.
    lam: λ of the soft targets λ·y + (1 − λ)·teacher.
  A sentence-level task's units are its examples (the term is Σ ℓ / batch); a tagging task's are
  its words (the term is the batch share times its per-word mean loss).
  """
  task_ids = targets["task_id"]
  batch = tf.cast(tf.shape(task_ids)[0], tf.float32)
  total = 0.0
  for index, member in enumerate(model.members):
    mask = tf.cast(tf.equal(task_ids, index), tf.float32)
    losses, units = member.example_losses(model.head_of(member), outputs[member.name], features,
                                          targets[member.name], lam)
    share = tf.reduce_sum(mask) / batch
    total += share * tf.math.divide_no_nan(tf.reduce_sum(losses * mask),
                                           tf.reduce_sum(tf.cast(units, tf.float32) * mask))
  return total


class HeadsRun(task_lib.Task):
  """A run of `config.task` alone (a `task.Head`): the runner's `Task` for it. Subclasses run
  several (`members` and `probabilities` set in their `__init__`)."""

  @classmethod
  def optimizer_defaults(cls, config) -> Dict:
    return task_lib.get(config.task_name).optimizer_defaults(config)

  def __init__(self, config, export, log: Callable[[str], None],
               members: Optional[List[task_lib.Head]] = None):
    super().__init__(config, export, log)
    self.members = members or [task_lib.get_multitask(config.task_name)(config, export, log)]
    self.sizes = [m.num_train for m in self.members]
    self.probabilities = np.ones([1])
    # λ of the soft targets λ·y + (1 − λ)·teacher as a function of training progress.
    self.lam = distillation.annealing_schedule("fixed", 1.0)
    if len(self.members) == 1:  # a one-task run carries its task's names (BAM sets its own after)
      only = self.members[0]
      self.default_epochs, self.primary_metric = only.default_epochs, only.primary_metric
      self.published, self.run_name = only.published, only.run_name
    # How the run reports, decided once: a task alone as itself, members (`--tasks`) together.
    self.report = MembersReport(self) if members else LoneReport(self.members[0])
    self._example = None

  # --- data --------------------------------------------------------------------------------------
  def num_train_rows(self) -> int:
    """One epoch is Σ_τ |D_τ| examples drawn from the mixture."""
    return sum(self.sizes)

  def train_dataset(self, seed: int, batch_size: int):
    """Each example from task τ with probability p(τ), shuffled within tasks; deterministic for
    `seed` (a resumed trial replays it). Every example carries every member's features and
    targets (zeros where they are another task's) and `task_id`."""
    per_task = [m.mixture_dataset(seed + 1000 * index) for index, m in enumerate(self.members)]
    feature_specs, target_specs = {}, {}
    for member, dataset in zip(self.members, per_task):
      feature_specs.update(dataset.element_spec[0])
      target_specs[member.name] = dataset.element_spec[1]

    def zeros(spec):
      return tf.zeros(spec.shape, spec.dtype)

    def widen(index):
      def to_union(features, own):
        features = {k: features[k] if k in features else zeros(spec)
                    for k, spec in feature_specs.items()}
        targets = {name: own if name == self.members[index].name
                   else tf.nest.map_structure(zeros, spec)
                   for name, spec in target_specs.items()}
        targets["task_id"] = tf.constant(index, tf.int32)
        return features, targets
      return to_union

    widened = [dataset.map(widen(index)) for index, dataset in enumerate(per_task)]
    mixed = (widened[0] if len(widened) == 1 else tf.data.Dataset.sample_from_datasets(
        widened, weights=self.probabilities.tolist(), seed=seed))
    return mixed.batch(batch_size, drop_remainder=True).prefetch(2)

  def example_features(self):
    """One example's features with every member's keys (what builds every head)."""
    if self._example is None:
      self._example = next(iter(self.train_dataset(0, 1)))[0]
    return self._example

  # --- one trial ---------------------------------------------------------------------------------
  def build_model(self, encoder):
    model = MultiTaskModel(encoder, self.members, name="heads")
    model(self.example_features())
    return model

  def loss(self, model, batch, progress):
    """Σ_τ masked losses against λ·y + (1 − λ)·teacher."""
    features, targets = batch
    return multitask_loss(model, model(features, training=True), features, targets,
                          self.lam(progress))

  def older_layouts(self, model) -> Dict[str, tf.Module]:
    return self.report.older_layouts(model)

  def predictor(self, model, member: task_lib.Head):
    """`predict(features, label)`: the member's head outputs over numpy features."""

    def predict(features, label):
      return trial_steps.predict(
          lambda batch: {"y": model(batch, training=False, only=member.name)[member.name]},
          features, self.config.eval_batch_size, self.log, label)["y"]
    return predict

  def evaluate(self, model, trial_dir) -> Dict[str, dict]:
    """Each member's dev metrics, reported in the run's shape (`LoneReport`, `MembersReport`).
    With `trial_dir` and `--write_train_predictions`, each member's teacher file is written
    there."""
    results = []
    for member in self.members:
      predict = self.predictor(model, member)
      results.append((member,) + member.evaluate_head(predict, model.head_of(member),
                                                      self.report.member_dir(trial_dir)))
      if trial_dir is not None and self.config.write_train_predictions:
        member.write_head_teacher(os.path.join(trial_dir, member.teacher_file), predict)
    return self.report.dev(results)

  def primary(self, dev) -> float:
    return self.report.primary(dev)

  def brief(self, dev) -> str:
    return self.report.brief(dev)

  def describe(self) -> str:
    return self.members[0].describe()

  def summary_fields(self, median):
    return self.members[0].summary_fields(median)

  def finish(self, trials, best, model_dir):
    for member in self.members:
      member.finish(trials, best, model_dir)


class LoneReport:
  """A task run alone reports as itself: its own dev metrics, primary figure and log line, and
  restores the single-task checkpoints older code wrote."""

  def __init__(self, member: task_lib.Head):
    self.member = member

  def dev(self, results) -> Dict[str, dict]:
    return results[0][1]

  def member_dir(self, trial_dir: Optional[str]) -> Optional[str]:
    """Where the task writes its own trial files: the trial's folder."""
    return trial_dir

  def primary(self, dev) -> float:
    return self.member.primary(dev)

  def brief(self, dev) -> str:
    return self.member.brief(dev)

  def older_layouts(self, model) -> Dict[str, tf.Module]:
    """The single-task models before this contract kept the encoder and the head as
    `model.encoder` and `model.head` (`head_checkpoint_names`)."""
    view = tf.Module()
    view.encoder = model.encoder
    for name, value in self.member.head_checkpoint_names(model.head_of(self.member)).items():
      setattr(view, name, value)
    return {"model/head/": view}


class MembersReport:
  """Members of `--tasks` report together: each member's entries and the mean primary metric
  × 100 (WNLI excluded): `glue.average` over the GLUE tasks, `tasks.average` over all when they
  are not all GLUE (`run.primary_metric` says which)."""

  def __init__(self, run: HeadsRun):
    self.run = run

  def member_dir(self, trial_dir: Optional[str]) -> Optional[str]:
    """None: the members write no files of their own (the run writes their teachers)."""
    del trial_dir  # unused
    return None

  def dev(self, results) -> Dict[str, dict]:
    dev, primaries = {}, {}
    for member, metrics, primary in results:
      dev.update(member.multitask_entries(metrics))
      if primary is not None:
        primaries[member.name] = (member.family, primary)
    glue_values = [v for family, v in primaries.values() if family == "glue"]
    if glue_values or self.run.primary_metric == "glue.average":
      dev["glue"] = {"average": float(100.0 * np.mean(glue_values)) if glue_values else 0.0}
    if self.run.primary_metric == "tasks.average":
      dev["tasks"] = {"average": float(100.0 * np.mean([v for _, v in primaries.values()]))}
    return dev

  def primary(self, dev) -> float:
    return task_lib.Task.primary(self.run, dev)

  def brief(self, dev) -> str:
    averages = ("glue", "tasks")
    return (f"dev average {self.primary(dev):.2f}: "
            + json.dumps({k: v for k, v in dev.items() if k not in averages}))

  def older_layouts(self, model) -> Dict[str, tf.Module]:
    del model  # BAM's variable names never changed
    return {}
