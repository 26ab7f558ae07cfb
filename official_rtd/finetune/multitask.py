"""BAM: multi-task GLUE fine-tuning with born-again distillation and teacher annealing
(dissertation ch. 3), `run_glue --tasks=...`.

One shared encoder and a head per task (softmax(W c) on `[CLS]` for classification; sigmoid(wᵀc)
on labels normalised to [0, 1] for regression, scaled back for Pearson/Spearman). Examples of all
tasks are shuffled together, even within a batch: each example's task is drawn with probability
∝ |D_τ|^`--task_sampling_exponent` (Bowman et al.), every head runs on every example and the other
tasks' losses are masked; the loss is the sum over tasks, divided by the batch size (so a batch of
one task gives exactly that task's single-task loss). One epoch is Σ_τ |D_τ| examples drawn from
the mixture. With teachers (`distillation.py`) the targets are λ·y + (1 − λ)·f_τ(x, θ_τ).
"""
import json
import os
from typing import Callable, Dict, List, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd import textio
from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import glue
from official_rtd.finetune import glue_data
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune import task as task_lib
from official_rtd.finetune import trials as trials_lib
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.modeling.layers.dropout import Dropout

# §3.3: batch 128, learning rate 1e-4, layer-wise decay α = 0.9 with layer 0 the closest to the
# output (lr·α^d: the "corrected" convention of layerwise_decay.py), 6 epochs.
BAM_DEFAULTS = {"train_batch_size": 128, "learning_rate": 1e-4, "layerwise_lr_decay": 0.9,
                "lr_decay_convention": "corrected"}
MULTI_TASK_EPOCHS = 6
SINGLE_TASK_FINETUNE_LEARNING_RATE = 1e-5  # Table 3.3
REGRESSION_SCALE = glue.REGRESSION_SCALE  # STS-B labels 0–5 are normalised to [0, 1]
MODEL_NAME = "model"


def sampling_probabilities(sizes: Sequence[int], exponent: float) -> np.ndarray:
  """p(τ) ∝ |D_τ|^exponent (0: uniform, 1: proportional)."""
  weights = np.asarray(sizes, np.float64) ** exponent
  return weights / weights.sum()


def head_name(task: str) -> str:
  return task.replace("-", "_")


class MultiTaskClassifier(tf_keras.Model):
  """`call` returns `{task: [batch, classes] logits}`, or `{task: [batch]}` sigmoid values in
  [0, 1] for a regression task."""

  def __init__(self, encoder, tasks: Sequence[glue_data.TaskSpec], dropout_rate: float = 0.1,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.tasks = list(tasks)
    self.dropout = Dropout(dropout_rate)
    self.heads = {head_name(t.name): tf_keras.layers.Dense(
        t.num_classes, kernel_initializer=transformer_encoder.initializer(encoder.config),
        name=f"{head_name(t.name)}_head") for t in self.tasks}

  def call(self, inputs, training=None):
    c = self.dropout(self.encoder(inputs, training=training)["sequence_output"][:, 0],
                     training=training)
    out = {}
    for task in self.tasks:
      y = tf.cast(self.heads[head_name(task.name)](c), tf.float32)
      out[task.name] = tf.sigmoid(y[:, 0]) if task.is_regression else y
    return out


def multitask_loss(outputs: Dict[str, tf.Tensor], task_ids, targets,
                   tasks: Sequence[glue_data.TaskSpec]) -> tf.Tensor:
  """Σ_τ Σ_{i: task_i = τ} ℓ_τ(target_i, f_τ(x_i)) / batch.

  Args:
    outputs: `MultiTaskClassifier` outputs.
    task_ids: `[batch]` index into `tasks` of each example's task.
    targets: `[batch, max_classes]`: class distributions (one-hot, or mixed with a teacher's), or
      the normalised regression target in column 0.
  ℓ is the cross-entropy against the target distribution, or the squared error for regression.
  """
  batch = tf.cast(tf.shape(task_ids)[0], tf.float32)
  total = 0.0
  for index, task in enumerate(tasks):
    mask = tf.cast(tf.equal(task_ids, index), tf.float32)
    prediction = outputs[task.name]
    if task.is_regression:
      losses = tf.square(prediction - targets[:, 0])
    else:
      losses = -tf.reduce_sum(targets[:, :task.num_classes] * tf.nn.log_softmax(prediction), -1)
    total += tf.reduce_sum(losses * mask) / batch
  return total


@task_lib.register("bam")
class MultiTask(task_lib.Task):
  """BAM over `--tasks`: every task's data and teachers read once; a trial's model is
  `MultiTaskClassifier`; with `--single_task_finetune` it starts from a multi-task run's best
  trial."""

  run_name = "MultiTaskRunner"
  primary_metric = "glue.average"

  @classmethod
  def optimizer_defaults(cls, config) -> Dict:
    """§3.3's for several tasks (one task keeps the per-size ones); Table 3.3's learning rate
    with `--single_task_finetune`."""
    defaults = dict(BAM_DEFAULTS) if len(tasks_of(config)) > 1 else {}
    if config.single_task_finetune:
      defaults["learning_rate"] = SINGLE_TASK_FINETUNE_LEARNING_RATE
    return defaults

  def __init__(self, config: configs.GlueConfig, export, log: Callable[[str], None]):
    super().__init__(config, export, log)
    self.tasks = tasks_of(config)
    names = [t.name for t in self.tasks]
    if config.double_unordered or config.do_predict or config.protocol != "electra":
      raise ValueError("--double_unordered, --do_predict and --protocol are single-task (--task) "
                       "options (multi-task runs follow BAM's §3.3)")
    if config.task_sampling_exponent < 0:
      raise ValueError(f"--task_sampling_exponent={config.task_sampling_exponent} must be >= 0")
    self.check_max_seq_length()
    self.default_epochs = (MULTI_TASK_EPOCHS if len(self.tasks) > 1
                           else 10 if names[0] in glue.LONG_TASKS else 3)
    self.published = ([distillation.file_name(n) for n in names]
                      if config.write_train_predictions else [])
    self.max_classes = max(t.num_classes for t in self.tasks)
    self._encoded = {}  # task index -> (features, targets), shared by the trials
    self.source_checkpoint = (self._source_checkpoint(config.single_task_finetune)
                              if config.single_task_finetune else "")
    self.all_train, self.train, self.dev = {}, {}, {}
    for task in self.tasks:
      self.all_train[task.name] = glue.load_split(config, task, "train")[0][1]
      self.train[task.name] = self.subset(range(len(self.all_train[task.name])))
      self.dev[task.name] = glue.load_split(config, task, "dev")
    paths = distillation.teacher_paths(names, config.teacher_dirs, config.teachers_from)
    self.teachers = {}
    for name, path in paths.items():
      spec = glue_data.get_task(name)
      self.teachers[name], function = distillation.read_predictions(
          path, name, len(self.all_train[name]), spec.num_classes)
      if spec.is_regression and function != "sigmoid":
        log(f"teacher {path}: its {name} head is {function or 'a linear regressor'}, the "
            "student's is sigmoid(wᵀc) on labels / 5; §3.2.2's born-again teachers share the "
            "student's prediction function: train it with run_glue --protocol=bam")
    distillation.annealing_schedule(config.teacher_annealing, config.teacher_lambda)
    self.sizes = [len(self.train[t.name]) for t in self.tasks]
    self.probabilities = sampling_probabilities(self.sizes, config.task_sampling_exponent)

  def describe(self) -> str:
    mixture = ", ".join(f"{t.name} {n} (p={p:.3f})"
                        for t, n, p in zip(self.tasks, self.sizes, self.probabilities))
    return (f"run_glue (multi-task): {mixture}; teachers for {sorted(self.teachers) or 'no task'}"
            f" ({self.config.teacher_annealing} annealing)")

  def _source_checkpoint(self, model_dir: str) -> str:
    """The best trial's weights of a multi-task run, checked to cover every task of ours."""
    path = os.path.join(model_dir, runner_lib.RESULTS_NAME)
    if not os.path.isfile(path):
      raise ValueError(f"--single_task_finetune={model_dir} holds no {runner_lib.RESULTS_NAME}"
                       " (a finished multi-task run_glue --tasks=... model_dir)")
    source = textio.load_json(path)
    missing = [t.name for t in self.tasks if t.name not in source.get("tasks", [])]
    if missing:
      raise ValueError(f"--single_task_finetune={model_dir} was not trained on {missing}")
    return trials_lib.trial_dir(model_dir, source["best_trial"], MODEL_NAME)

  # --- data --------------------------------------------------------------------------------------
  def task_examples(self, index: int):
    """`(features, targets)` numpy arrays of task `index`'s training examples (encoded once for
    all trials): targets hold
    `task_id`, `gold` `[n, max_classes]` (one-hot, or the normalised value in column 0),
    `teacher` (the teacher's softmax or normalised value; zeros without one), `has_teacher`."""
    if index in self._encoded:
      return self._encoded[index]
    task = self.tasks[index]
    rows = self.train[task.name]
    examples = [self.all_train[task.name][i] for i in rows]
    features = glue.encode(examples, self.tokenizer, self.config.max_seq_length)
    n = len(examples)
    gold = np.zeros([n, self.max_classes], np.float32)
    teacher = np.zeros_like(gold)
    labels = np.array(glue_data.labels_of(examples), np.float32)
    if task.is_regression:
      gold[:, 0] = labels / REGRESSION_SCALE
    else:
      gold[np.arange(n), labels.astype(np.int64)] = 1.0
    if task.name in self.teachers:
      predictions = self.teachers[task.name][rows]
      if task.is_regression:
        teacher[:, 0] = np.clip(predictions / REGRESSION_SCALE, 0.0, 1.0)
      else:
        teacher[:, :task.num_classes] = distillation.softmax(predictions)
    targets = {"task_id": np.full([n], index, np.int32), "gold": gold, "teacher": teacher,
               "has_teacher": np.full([n], float(task.name in self.teachers), np.float32)}
    self._encoded[index] = (features, targets)
    return features, targets

  def num_train_rows(self) -> int:
    """One epoch is Σ_τ |D_τ| examples drawn from the mixture."""
    return sum(self.sizes)

  def train_dataset(self, seed: int, batch_size: int):
    """Each example from task τ with probability p(τ), shuffled within tasks; deterministic for
    `seed` (a resumed trial replays it)."""
    per_task = []
    for index in range(len(self.tasks)):
      features, targets = self.task_examples(index)
      per_task.append(tf.data.Dataset.from_tensor_slices((features, targets))
                      .shuffle(len(targets["gold"]), seed=seed + 1000 * index).repeat())
    mixed = tf.data.Dataset.sample_from_datasets(per_task, weights=self.probabilities.tolist(),
                                                 seed=seed)
    return mixed.batch(batch_size, drop_remainder=True).prefetch(2)

  # --- one trial ---------------------------------------------------------------------------------
  def build_model(self, encoder):
    model = MultiTaskClassifier(encoder, self.tasks, name="bam")
    first = self.all_train[self.tasks[0].name][:1]
    model(glue.encode(first, self.tokenizer, 8))
    if self.source_checkpoint:  # encoder and our tasks' heads from the multi-task run
      status = tf.train.Checkpoint(model=model).read(self.source_checkpoint)
      status.expect_partial().assert_existing_objects_matched()
    return model

  def loss(self, model, batch, progress):
    """Σ_τ masked losses against λ·y + (1 − λ)·teacher, λ annealed over `progress`."""
    features, targets = batch
    lam = distillation.annealing_schedule(self.config.teacher_annealing,
                                          self.config.teacher_lambda)(progress)
    mixed = distillation.soft_targets(targets["gold"], targets["teacher"],
                                      targets["has_teacher"], lam)
    return multitask_loss(model(features, training=True), targets["task_id"], mixed, self.tasks)

  def outputs(self, model, task: glue_data.TaskSpec, examples) -> np.ndarray:
    """The task head's outputs (logits, or the sigmoid value in [0, 1]) for `examples`."""
    features = glue.encode(examples, self.tokenizer, self.config.max_seq_length)
    return trials_lib.predict(lambda batch: {"y": model(batch, training=False)[task.name]},
                              features, self.config.eval_batch_size, self.log,
                              f"{task.name}: predicting {len(examples)} examples")["y"]

  def evaluate(self, model, trial_dir) -> Dict[str, dict]:
    """Each task's dev metrics (`<task>` or `<task>:<split>` for MNLI's two dev sets) and
    `glue.average`: the mean primary metric (first dev split per task, WNLI excluded) × 100.
    With `trial_dir`, the model's weights and (`--write_train_predictions`) each task's
    training-set outputs are written there."""
    dev, primaries = {}, []
    for task in self.tasks:
      for position, (split, examples) in enumerate(self.dev[task.name]):
        values = self.outputs(model, task, examples)
        predictions = (values * REGRESSION_SCALE if task.is_regression
                       else values.argmax(-1))
        key = task.name if len(self.dev[task.name]) == 1 else f"{task.name}:{split}"
        dev[key] = metrics_lib.task_metrics(task.name, glue_data.labels_of(examples),
                                            predictions.tolist())
        if position == 0 and task.name != "wnli":
          primaries.append(dev[key][metrics_lib.PRIMARY[task.name]])
    dev["glue"] = {"average": float(100.0 * np.mean(primaries)) if primaries else 0.0}
    if trial_dir is not None:
      tf.train.Checkpoint(model=model).write(os.path.join(trial_dir, MODEL_NAME))
      for task in self.tasks if self.config.write_train_predictions else []:
        values = self.outputs(model, task, self.all_train[task.name])
        if task.is_regression:
          values = values * REGRESSION_SCALE
        distillation.write_predictions(os.path.join(trial_dir, distillation.file_name(task.name)),
                                       task.name, task.num_classes, values,
                                       "sigmoid" if task.is_regression else "softmax")
    return dev

  def brief(self, dev) -> str:
    return (f"dev average {dev['glue']['average']:.2f}: "
            + json.dumps({k: v for k, v in dev.items() if k != "glue"}))

  def summary_fields(self, median):
    names = [t.name for t in self.tasks]
    return {"tasks": names, "sampling_probabilities": dict(zip(names, self.probabilities.tolist())),
            "teachers": sorted(self.teachers)}


def tasks_of(config: configs.GlueConfig) -> List[glue_data.TaskSpec]:
  """`--tasks` as task specs, checked."""
  names = [n.strip() for n in config.tasks.split(",") if n.strip()]
  if not names or config.task:
    raise ValueError("give --tasks (a comma list) and not --task for multi-task fine-tuning")
  if len(set(names)) != len(names):
    raise ValueError(f"--tasks={config.tasks} names a task twice")
  return [glue_data.get_task(n) for n in names]
