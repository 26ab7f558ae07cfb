"""GLUE fine-tuning with the ELECTRA protocol (dissertation Table 5.2): N trials, median + spread.

Per trial: the exported encoder + ELECTRA's head, AdamW (ε 1e-6, weight decay 0 by default) with
layer-wise learning-rate decay, 10% linear warmup then linear decay, gradient clipping 1.0,
batch 32, 3 epochs (10 for RTE and STS-B); evaluation on dev at the end. A task is a
`task.Head`: run alone it is a one-member run of `multihead.HeadsRun`, and the same class is its
part of a multi-task (BAM) run (`bam/multitask.py`).
"""
import dataclasses
import os
from typing import Callable, List, Optional

import numpy as np
import tensorflow as tf

from official_rtd.data import glue_data
from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import task as task_lib
from official_rtd.trials import run as trial_run
from official_rtd.utils import textio

PROTOCOLS = ("electra", "bam")
REGRESSION_SCALE = 5.0  # BAM: STS-B labels 0–5 normalised to [0, 1] under a sigmoid


GlueConfig = configs.GlueConfig


def read_task_split(config: GlueConfig, task: glue_data.TaskSpec, split: str):
  """A task's split from `--tfds_data_dir`, or from `--data_dir`: the task's folder, or a GLUE
  root holding `<TASK>/` folders (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI)."""
  own = configs.task_data_dirs(config).get(task.name)
  if own:
    return glue_data.load_split(own, task, split)
  if bool(config.data_dir) == bool(config.tfds_data_dir):
    raise ValueError("give exactly one of --data_dir (GLUE TSV files) and --tfds_data_dir")
  if config.tfds_data_dir:
    return glue_data.load_tfds_split(config.tfds_data_dir, task, split)
  folder = os.path.join(config.data_dir, task.submission_name)
  return glue_data.load_split(folder if os.path.isdir(folder) else config.data_dir, task, split)


TEST_PREDICTIONS_NAME = "test_predictions.json"


@task_lib.register(*glue_data.TASKS)
class GlueTask(task_lib.Head):
  """One GLUE task: a head on `[CLS]`. Alone (`--task`, the ELECTRA protocol): ELECTRA's head,
  softmax cross-entropy or, for STS-B, the squared error of wᵀc; dev metrics per dev split (MNLI
  has two); with `--do_predict` the best trial's test-set predictions as `<TASK>.tsv`, with
  `--write_train_predictions` its training-set logits (a BAM teacher). With `--protocol=bam` or
  in a BAM run (§3.1): for regression sigmoid(wᵀc) on labels normalised to [0, 1] (scaled back
  for Pearson/Spearman); targets λ·y + (1 − λ)·teacher."""

  run_name = "GlueRunner"
  protocols = PROTOCOLS
  family = "glue"

  def __init__(self, config: GlueConfig, export, log: Callable[[str], None],
               name: Optional[str] = None):
    super().__init__(config, export, log, name)
    if not config.task:
      raise ValueError("give --task (one GLUE task) or --tasks (a multi-task run)")
    self.spec = glue_data.get_task(self.name)
    bam = config.protocol == "bam"
    # Regression: BAM's sigmoid on labels / 5, or ELECTRA's linear wᵀc on the labels.
    self.label_scale = REGRESSION_SCALE if bam and self.spec.is_regression else 1.0
    self.sigmoid = bam and self.spec.is_regression
    self.num_outputs = self.spec.num_classes
    self.teacher_file = distillation.file_name(self.spec.name)
    self.default_epochs = (configs.PROTOCOL_EPOCHS["bam"] if config.protocol == "bam"
                           else self.epochs_default(self.spec.name))
    self.check_max_seq_length()
    if config.double_unordered and self.spec.name not in ("mrpc", "sts-b"):
      raise ValueError("--double_unordered applies to MRPC and STS-B only")
    self.published = [self.teacher_file] if config.write_train_predictions else []
    self.primary_metric = metrics_lib.PRIMARY[self.spec.name]
    self.all_train_examples = read_task_split(config, self.spec, "train")[0][1]
    self.rows = task_lib.subset_rows(len(self.all_train_examples), config)
    self.train_examples = [self.all_train_examples[i] for i in self.rows]
    self.orders = [False, True] if config.double_unordered else [False]  # swap a and b
    self.num_train = len(self.rows) * len(self.orders)
    self.dev_splits = read_task_split(config, self.spec, "dev")
    self.test_splits = read_task_split(config, self.spec, "test") if config.do_predict else []
    self.teacher = None  # [all_train, classes] probabilities or [all_train, 1] values in [0, 1]
    self._mixture_arrays = None

  @classmethod
  def member_config(cls, config: GlueConfig, name: str) -> GlueConfig:
    """BAM's heads (§3.1) on the run's settings."""
    return dataclasses.replace(config, task=name, tasks="", protocol="bam")

  @classmethod
  def epochs_default(cls, name: str) -> float:
    return configs.task_epochs(name)

  def describe(self) -> str:
    return (f"run_glue ({self.config.protocol} protocol): {self.spec.name}, "
            f"{len(self.train_examples)} train examples")

  # --- training ----------------------------------------------------------------------------------
  def read_teacher(self, path: str) -> None:
    predictions, function = distillation.read_predictions(path, self.name,
                                                          len(self.all_train_examples),
                                                          self.spec.num_classes)
    if self.spec.is_regression:
      if function != "sigmoid":
        self.log(f"teacher {path}: its {self.name} head is {function or 'a linear regressor'}, "
                 "the student's is sigmoid(wᵀc) on labels / 5; §3.2.2's born-again teachers "
                 "share the student's prediction function: train it with run_glue "
                 "--protocol=bam")
      self.teacher = np.clip(predictions / REGRESSION_SCALE, 0.0, 1.0)[:, None]
    else:
      self.teacher = distillation.softmax(predictions)
    self.teacher_path = path

  def mixture_dataset(self, seed: int) -> tf.data.Dataset:
    """Targets: `gold` `[classes]` one-hot (`[1]`: the label / `label_scale`), `teacher` alike
    (zeros without one), `has_teacher` `[]`; with `--double_unordered` every example also with
    its two sentences swapped."""
    if self._mixture_arrays is None:
      examples = self.train_examples
      labels = np.array(glue_data.labels_of(examples), np.float32)
      gold = ((labels / self.label_scale)[:, None] if self.spec.is_regression
              else np.eye(self.spec.num_classes, dtype=np.float32)[labels.astype(np.int64)])
      teacher = (self.teacher[self.rows].astype(np.float32) if self.teacher is not None
                 else np.zeros_like(gold))
      has_teacher = np.full([len(examples)], float(self.teacher is not None), np.float32)
      orders = [glue_data.encode(examples, self.tokenizer, self.config.max_seq_length, swap=swap)
                for swap in self.orders]
      repeat = len(self.orders)
      self._mixture_arrays = (
          {k: np.concatenate([order[k] for order in orders]) for k in orders[0]},
          {"gold": np.concatenate([gold] * repeat), "teacher": np.concatenate([teacher] * repeat),
           "has_teacher": np.concatenate([has_teacher] * repeat)})
    return (tf.data.Dataset.from_tensor_slices(self._mixture_arrays)
            .shuffle(self.num_train, seed=seed).repeat())

  def output(self, head, dropout, sequence_output, inputs, training):
    """`[batch, classes]` logits, or `[batch]` values: sigmoid(wᵀc) in [0, 1] or wᵀc."""
    y = tf.cast(head(dropout(sequence_output[:, 0], training=training)), tf.float32)
    if not self.spec.is_regression:
      return y
    return tf.sigmoid(y[:, 0]) if self.sigmoid else y[:, 0]

  def example_losses(self, head, output, features, targets, lam):
    """Cross-entropy against the mixed distribution, or the squared error for regression."""
    del head, features  # unused
    mixed = distillation.soft_targets(targets["gold"], targets["teacher"],
                                      targets["has_teacher"], lam)
    if self.spec.is_regression:
      losses = tf.square(output - mixed[:, 0])
    else:
      losses = -tf.reduce_sum(mixed * tf.nn.log_softmax(output), -1)
    return losses, tf.ones_like(losses)

  # --- evaluation --------------------------------------------------------------------------------
  def scores(self, predict, examples, logits: bool = False) -> np.ndarray:
    """`[examples, classes]` softmax probabilities (or logits), or `[examples]` values on the
    label scale, from the head's `predict`; with `--double_unordered` averaged over both
    orders."""
    total = 0.0
    for swap in self.orders:
      encoded = glue_data.encode(examples, self.tokenizer, self.config.max_seq_length, swap=swap)
      values = predict(encoded, f"{self.name}: predicting {len(examples)} examples")
      if self.spec.is_regression:
        values = values * self.label_scale
      elif not logits:
        values = distillation.softmax(values)
      total = total + values
    return total / len(self.orders)

  def evaluate_head(self, predict, head, trial_dir):
    """Metrics per dev split; the primary metric of the first (WNLI: not averaged, as GLUE's
    average). With `trial_dir` and `--do_predict`, the test splits' predictions."""
    del head  # unused
    dev = {}
    for split, examples in self.dev_splits:
      dev[split] = metrics_lib.task_metrics(self.spec.name, glue_data.labels_of(examples),
                                            self.predictions(predict, examples))
    if trial_dir is not None and self.test_splits:
      textio.write_json_atomic(os.path.join(trial_dir, TEST_PREDICTIONS_NAME), {
          split: self.predictions(predict, examples) for split, examples in self.test_splits})
    return dev, None if self.name == "wnli" else self.primary(dev)

  def predictions(self, predict, examples) -> List[float]:
    """Class indices, or values on the label scale for regression."""
    scores = self.scores(predict, examples)
    return scores.tolist() if self.spec.is_regression else scores.argmax(-1).tolist()

  def multitask_entries(self, dev):
    """`<task>`, or `<task>:<split>` for MNLI's two."""
    return {self.name if len(dev) == 1 else f"{self.name}:{split}": metrics
            for split, metrics in dev.items()}

  def primary(self, dev) -> float:
    """The primary metric on the first dev split."""
    return dev[next(iter(dev))][self.primary_metric]

  def write_head_teacher(self, path: str, predict) -> None:
    """The teacher file: logits, or values on the label scale, of every training example
    (whatever `--max_train_examples`), with the head's prediction function."""
    function = ("sigmoid" if self.sigmoid else "linear" if self.spec.is_regression
                else "softmax")
    distillation.write_predictions(path, self.spec.name, self.spec.num_classes,
                                   self.scores(predict, self.all_train_examples, logits=True),
                                   function)

  # --- the run -----------------------------------------------------------------------------------
  def summary_fields(self, median):
    return {"task": self.spec.name}

  def finish(self, trials, best, model_dir):
    """`<TASK>.tsv` (`index<TAB>prediction`) from the trial with the best dev primary metric."""
    if not self.test_splits:
      return
    predictions = textio.load_json(
        trial_run.trial_dir(model_dir, best["trial"], TEST_PREDICTIONS_NAME))
    for split, examples in self.test_splits:
      suffix = {"test_matched": "-m", "test_mismatched": "-mm"}.get(split, "")
      path = os.path.join(model_dir, f"{self.spec.submission_name}{suffix}.tsv")
      lines = ["index\tprediction"]
      for example, value in zip(examples, predictions[split]):
        shown = (f"{min(max(value, 0.0), 5.0):.3f}" if self.spec.is_regression
                 else self.spec.labels[int(value)])
        lines.append(f"{example.guid}\t{shown}")
      textio.write_lines_atomic(path, lines)
      self.log(f"wrote {len(examples)} test predictions to {path}")
