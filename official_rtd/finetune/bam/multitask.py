"""BAM: multi-task fine-tuning with born-again distillation and teacher annealing (dissertation
ch. 3), `run_glue --tasks=...`, over any mix of registered tasks that take part (`task.Task.multitask`: the GLUE tasks
in `glue/task.py`, the tagging tasks in `tagging/task.py`).

One shared encoder and a head per task (softmax(W c) on `[CLS]` for classification; sigmoid(wᵀc)
on labels normalised to [0, 1] for regression, scaled back for Pearson/Spearman; a softmax per
word for tagging). Examples of all tasks are shuffled together, even within a batch: each
example's task is drawn with probability ∝ |D_τ|^`--task_sampling_exponent` (Bowman et al.), every
head runs on every example and the other tasks' losses are masked. Each task adds its share of
the batch times its mean loss over its examples in the batch (per word for tagging), so a batch
of one task gives exactly that task's single-task loss. One epoch is Σ_τ |D_τ| examples drawn
from the mixture. With teachers (`distillation.py`) the targets are λ·y + (1 − λ)·f_τ(x, θ_τ).
"""
import json
import os
from typing import Callable, Dict, List, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.utils import checkpoint_files
from official_rtd.utils import textio
from official_rtd.finetune import configs
from official_rtd.finetune import heads
from official_rtd.finetune import distillation
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune import task as task_lib
from official_rtd.finetune import trials as trials_lib
from official_rtd.modeling.layers.dropout import Dropout

# §3.3: batch 128, learning rate 1e-4, layer-wise decay α = 0.9 with layer 0 the closest to the
# output (lr·α^d: the "corrected" convention of layerwise_decay.py), 6 epochs.
BAM_DEFAULTS = {"train_batch_size": 128, "learning_rate": 1e-4, "layerwise_lr_decay": 0.9,
                "lr_decay_convention": "corrected"}
MULTI_TASK_EPOCHS = 6
SINGLE_TASK_FINETUNE_LEARNING_RATE = 1e-5  # Table 3.3
MODEL_NAME = "model"


def sampling_probabilities(sizes: Sequence[int], exponent: float) -> np.ndarray:
  """p(τ) ∝ |D_τ|^exponent (0: uniform, 1: proportional)."""
  weights = np.asarray(sizes, np.float64) ** exponent
  return weights / weights.sum()


def head_name(task: str) -> str:
  return task.replace("-", "_")


class MultiTaskModel(tf_keras.Model):
  """`call` returns `{task: output}` (each member's `output`: `[batch, classes]` logits,
  `[batch]` regression values in [0, 1], `[batch, seq_len, tags]` word logits); `only=task`
  runs that head alone (its features suffice)."""

  def __init__(self, encoder, members: Sequence[task_lib.Task], dropout_rate: float = 0.1,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.members = list(members)
    self.dropout = Dropout(dropout_rate)
    self.heads = {head_name(m.name): heads.dense(encoder, m.num_outputs,
                                                 f"{head_name(m.name)}_head")
                  for m in self.members}

  def call(self, inputs, training=None, only=None):
    sequence = self.encoder(inputs, training=training)["sequence_output"]
    return {m.name: m.output(self.heads[head_name(m.name)], self.dropout, sequence, inputs,
                             training)
            for m in self.members if only in (None, m.name)}


def multitask_loss(members: Sequence[task_lib.Task], outputs: Dict[str, tf.Tensor], features,
                   targets, lam) -> tf.Tensor:
  """Σ_τ (n_τ / batch) · Σ_{i: task_i = τ} ℓ_τ(i) / Σ_{i: task_i = τ} units_τ(i).

  Args:
    outputs: `MultiTaskModel` outputs.
    features: the batch's features (every member's keys).
    targets: `task_id` `[batch]` (index into `members`) and, per member name, its targets.
    lam: λ of the soft targets λ·y + (1 − λ)·teacher.
  A sentence-level task's units are its examples (the term is Σ ℓ / batch); a tagging task's are
  its words (the term is the batch share times its per-word mean loss).
  """
  task_ids = targets["task_id"]
  batch = tf.cast(tf.shape(task_ids)[0], tf.float32)
  total = 0.0
  for index, member in enumerate(members):
    mask = tf.cast(tf.equal(task_ids, index), tf.float32)
    losses, units = member.example_losses(outputs[member.name], features, targets[member.name],
                                          lam)
    share = tf.reduce_sum(mask) / batch
    total += share * tf.math.divide_no_nan(tf.reduce_sum(losses * mask),
                                           tf.reduce_sum(tf.cast(units, tf.float32) * mask))
  return total


@task_lib.register("bam")
class MultiTask(task_lib.Task):
  """BAM over `--tasks`: every member's data and teacher read once; a trial's model is
  `MultiTaskModel`; with `--single_task_finetune` it starts from a multi-task run's best
  trial."""

  run_name = "MultiTaskRunner"

  @classmethod
  def optimizer_defaults(cls, config) -> Dict:
    """§3.3's for several tasks (one task keeps the per-size ones); Table 3.3's learning rate
    with `--single_task_finetune`."""
    defaults = dict(BAM_DEFAULTS) if len(task_names(config)) > 1 else {}
    if config.single_task_finetune:
      defaults["learning_rate"] = SINGLE_TASK_FINETUNE_LEARNING_RATE
    return defaults

  def __init__(self, config: configs.GlueConfig, export, log: Callable[[str], None]):
    super().__init__(config, export, log)
    names = task_names(config)
    classes = [task_lib.get_multitask(n) for n in names]  # unknown names refused before reading
    if config.double_unordered or config.do_predict or config.protocol != "electra":
      raise ValueError("--double_unordered, --do_predict and --protocol are single-task (--task) "
                       "options (multi-task runs follow BAM's §3.3)")
    if config.task_sampling_exponent < 0:
      raise ValueError(f"--task_sampling_exponent={config.task_sampling_exponent} must be >= 0")
    unknown = sorted(set(configs.task_data_dirs(config)) - set(names))
    if unknown:
      raise ValueError(f"--task_data_dirs names {unknown}, not in --tasks {names}")
    self.check_max_seq_length()
    self.source_checkpoint = (source_checkpoint(config.single_task_finetune, names)
                              if config.single_task_finetune else "")
    self.members = [cls(config, export, log, name=name) for cls, name in zip(classes, names)]
    # One member: that task's own default (GLUE's RTE and STS-B 10 epochs, ...).
    self.default_epochs = (MULTI_TASK_EPOCHS if len(names) > 1
                           else self.members[0].default_epochs)
    self.primary_metric = ("glue.average" if all(m.family == "glue" for m in self.members)
                           else "tasks.average")
    self.published = ([m.teacher_file for m in self.members]
                      if config.write_train_predictions else [])
    paths = distillation.teacher_paths(names, config.teacher_dirs, config.teachers_from,
                                       {m.name: m.teacher_file for m in self.members})
    for member in self.members:
      if member.name in paths:
        member.read_teacher(paths[member.name])
    distillation.annealing_schedule(config.teacher_annealing, config.teacher_lambda)
    self.sizes = [m.num_train for m in self.members]
    self._example = None
    self.probabilities = sampling_probabilities(self.sizes, config.task_sampling_exponent)

  @property
  def teachers(self) -> List[str]:
    return sorted(m.name for m in self.members if m.teacher_path)

  def describe(self) -> str:
    mixture = ", ".join(f"{m.name} {n} (p={p:.3f})"
                        for m, n, p in zip(self.members, self.sizes, self.probabilities))
    return (f"run_glue (multi-task): {mixture}; teachers for {self.teachers or 'no task'}"
            f" ({self.config.teacher_annealing} annealing)")

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

    mixed = tf.data.Dataset.sample_from_datasets(
        [dataset.map(widen(index)) for index, dataset in enumerate(per_task)],
        weights=self.probabilities.tolist(), seed=seed)
    return mixed.batch(batch_size, drop_remainder=True).prefetch(2)

  def example_features(self):
    """One example's features with every member's keys (what builds every head)."""
    if self._example is None:
      self._example = next(iter(self.train_dataset(0, 1)))[0]
    return self._example

  # --- one trial ---------------------------------------------------------------------------------
  def build_model(self, encoder):
    model = MultiTaskModel(encoder, self.members, name="bam")
    model(self.example_features())
    if self.source_checkpoint:  # encoder and our tasks' heads from the multi-task run
      status = tf.train.Checkpoint(model=model).read(self.source_checkpoint)
      status.expect_partial().assert_existing_objects_matched()
    return model

  def loss(self, model, batch, progress):
    """Σ_τ masked losses against λ·y + (1 − λ)·teacher, λ annealed over `progress`."""
    features, targets = batch
    lam = distillation.annealing_schedule(self.config.teacher_annealing,
                                          self.config.teacher_lambda)(progress)
    return multitask_loss(self.members, model(features, training=True), features, targets, lam)

  def predictor(self, model, member: task_lib.Task):
    """`predict(features, label)`: the member's head outputs over numpy features."""

    def predict(features, label):
      return trials_lib.predict(
          lambda batch: {"y": model(batch, training=False, only=member.name)[member.name]},
          features, self.config.eval_batch_size, self.log, label)["y"]
    return predict

  def evaluate(self, model, trial_dir) -> Dict[str, dict]:
    """Each member's dev metrics and the mean primary metric × 100 (WNLI excluded):
    `glue.average` over the GLUE tasks, `tasks.average` over all when they are not all GLUE.
    With `trial_dir`, the model's weights and (`--write_train_predictions`) each member's
    teacher file are written there."""
    dev, primaries = {}, {}
    for member in self.members:
      metrics, primary = member.evaluate_head(self.predictor(model, member))
      dev.update(metrics)
      if primary is not None:
        primaries[member.name] = (member.family, primary)
    glue_values = [v for family, v in primaries.values() if family == "glue"]
    if glue_values or self.primary_metric == "glue.average":
      dev["glue"] = {"average": float(100.0 * np.mean(glue_values)) if glue_values else 0.0}
    if self.primary_metric == "tasks.average":
      dev["tasks"] = {"average": float(100.0 * np.mean([v for _, v in primaries.values()]))}
    if trial_dir is not None:
      checkpoint_files.write(tf.train.Checkpoint(model=model),
                             os.path.join(trial_dir, MODEL_NAME))
      for member in self.members if self.config.write_train_predictions else []:
        member.write_head_teacher(os.path.join(trial_dir, member.teacher_file),
                                  self.predictor(model, member))
    return dev

  def brief(self, dev) -> str:
    averages = ("glue", "tasks")
    return (f"dev average {self.primary(dev):.2f}: "
            + json.dumps({k: v for k, v in dev.items() if k not in averages}))

  def summary_fields(self, median):
    names = [m.name for m in self.members]
    return {"tasks": names, "sampling_probabilities": dict(zip(names, self.probabilities.tolist())),
            "teachers": self.teachers}


def source_checkpoint(model_dir: str, names: Sequence[str]) -> str:
  """The best trial's weights of a multi-task run, checked to cover every task of `names`."""
  path = os.path.join(model_dir, runner_lib.RESULTS_NAME)
  if not os.path.isfile(path):
    raise ValueError(f"--single_task_finetune={model_dir} holds no {runner_lib.RESULTS_NAME}"
                     " (a finished multi-task run_glue --tasks=... model_dir)")
  source = textio.load_json(path)
  missing = [name for name in names if name not in source.get("tasks", [])]
  if missing:
    raise ValueError(f"--single_task_finetune={model_dir} was not trained on {missing}")
  return trials_lib.trial_dir(model_dir, source["best_trial"], MODEL_NAME)


def task_names(config: configs.GlueConfig) -> List[str]:
  """`--tasks` as a list, checked."""
  names = [n.strip() for n in config.tasks.split(",") if n.strip()]
  if not names or config.task:
    raise ValueError("give --tasks (a comma list) and not --task for multi-task fine-tuning")
  if len(set(names)) != len(names):
    raise ValueError(f"--tasks={config.tasks} names a task twice")
  return names
