"""GLUE fine-tuning with the ELECTRA protocol (dissertation Table 5.2): N trials, median + spread.

Per trial: the exported encoder + ELECTRA's head, AdamW (ε 1e-6, weight decay 0 by default) with
layer-wise learning-rate decay, 10% linear warmup then linear decay, gradient clipping 1.0, batch 32,
3 epochs (10 for RTE and STS-B); evaluation on dev at the end (`runner.Runner` runs the trials).
The same class is a GLUE task's part of a multi-task (BAM) run (`bam/multitask.py`).
"""
import os
from typing import Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

from official_rtd.utils import textio
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.finetune.glue import classifier
from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune.glue import data as glue_data
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import task as task_lib
from official_rtd.finetune import trials as trials_lib

LONG_TASKS = ("rte", "sts-b")  # 10 epochs instead of 3
PROTOCOLS = ("electra", "bam")
REGRESSION_SCALE = 5.0  # BAM: STS-B labels 0–5 normalised to [0, 1] under a sigmoid


GlueConfig = configs.GlueConfig


def encode(examples: List[glue_data.Example], tokenizer: tokenizer_lib.Tokenizer,
           max_seq_length: int, swap: bool = False) -> Dict[str, np.ndarray]:
  """`[CLS] a [SEP] (b [SEP])` ids, longest-first truncation; `swap` puts b first."""
  vocab = tokenizer.vocab
  firsts = tokenizer.tokenize_to_lists([e.text_b if swap else e.text_a for e in examples])
  has_b = examples[0].text_b is not None
  seconds = (tokenizer.tokenize_to_lists([e.text_a if swap else e.text_b for e in examples])
             if has_b else [[] for _ in examples])
  n = len(examples)
  ids = np.full([n, max_seq_length], vocab.pad_id, np.int32)
  types = np.zeros([n, max_seq_length], np.int32)
  for row, (a, b) in enumerate(zip(firsts, seconds)):
    budget = max_seq_length - (3 if has_b else 2)
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
      (a if len(a) >= len(b) else b).pop()
    tokens = [vocab.cls_id, *a, vocab.sep_id] + ([*b, vocab.sep_id] if has_b else [])
    ids[row, :len(tokens)] = tokens
    types[row, len(a) + 2:len(tokens)] = 1
  return {"input_word_ids": ids, "input_mask": (ids != vocab.pad_id).astype(np.int32),
          "input_type_ids": types}


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
class GlueTask(task_lib.Task):
  """One GLUE task: ELECTRA's head on `[CLS]`, softmax cross-entropy (squared error for STS-B);
  dev metrics per dev split (MNLI has two); with `--do_predict` the best trial's test-set
  predictions as `<TASK>.tsv`, with `--write_train_predictions` its training-set logits (a BAM
  teacher). In a BAM run (§3.1): softmax(W c) on `[CLS]`, or for regression sigmoid(wᵀc) on labels
  normalised to [0, 1] (scaled back for Pearson/Spearman); targets λ·y + (1 − λ)·teacher."""

  run_name = "GlueRunner"
  protocols = PROTOCOLS
  multitask = True
  family = "glue"

  def __init__(self, config: GlueConfig, export, log: Callable[[str], None],
               name: Optional[str] = None):
    super().__init__(config, export, log, name)
    if not self.is_member and (not config.task or config.tasks):
      raise ValueError("the GLUE task is single-task: give --task (--tasks runs multitask.py)")
    self.spec = glue_data.get_task(self.name)
    bam = config.protocol == "bam"
    self.regression_scale = REGRESSION_SCALE if bam and self.spec.is_regression else 0.0
    self.num_outputs = self.spec.num_classes
    self.teacher_file = distillation.file_name(self.spec.name)
    self.default_epochs = (trials_lib.PROTOCOL_EPOCHS["bam"] if bam
                           else 10 if self.spec.name in LONG_TASKS else 3)
    if not self.is_member:
      self._check_single_task()
    self.primary_metric = metrics_lib.PRIMARY[self.spec.name]
    self.all_train_examples = read_task_split(config, self.spec, "train")[0][1]
    self.rows = task_lib.subset_rows(len(self.all_train_examples), config)
    self.train_examples = [self.all_train_examples[i] for i in self.rows]
    self.num_train = len(self.rows)
    self.dev_splits = read_task_split(config, self.spec, "dev")
    self.test_splits = (read_task_split(config, self.spec, "test")
                        if config.do_predict and not self.is_member else [])
    self.teacher = None  # [all_train, classes] probabilities or [all_train, 1] values in [0, 1]
    self._train_arrays = self._mixture_arrays = None

  def _check_single_task(self):
    """Checks the single-task options; sets the published files they imply."""
    config = self.config
    if config.double_unordered and self.spec.name not in ("mrpc", "sts-b"):
      raise ValueError("--double_unordered applies to MRPC and STS-B only")
    self.check_max_seq_length()
    self.published = [self.teacher_file] if config.write_train_predictions else []

  def describe(self) -> str:
    return (f"run_glue ({self.config.protocol} protocol): {self.spec.name}, "
            f"{len(self.train_examples)} train examples")

  # --- training ----------------------------------------------------------------------------------
  def train_arrays(self):
    if self._train_arrays is None:
      length = self.config.max_seq_length
      features = encode(self.train_examples, self.tokenizer, length)
      labels = np.array(glue_data.labels_of(self.train_examples), np.float32)
      if self.config.double_unordered:
        swapped = encode(self.train_examples, self.tokenizer, length, swap=True)
        features = {k: np.concatenate([features[k], swapped[k]]) for k in features}
        labels = np.concatenate([labels, labels])
      self._train_arrays = features, labels
    return self._train_arrays

  def build_model(self, encoder):
    model = classifier.SequenceClassifier(encoder, self.spec.num_classes, name="glue",
                                          regression_scale=self.regression_scale)
    model({k: v[:1] for k, v in encode(self.train_examples[:1], self.tokenizer, 8).items()})
    return model

  def loss(self, model, batch, progress):
    del progress  # unused
    return classifier.loss(model(batch[0], training=True), batch[1], self.regression_scale)

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate(self, model, trial_dir):
    dev = self.dev_metrics(lambda examples: self.scores(model, examples))
    if trial_dir is None:
      return dev
    if self.test_splits:
      textio.write_json_atomic(os.path.join(trial_dir, TEST_PREDICTIONS_NAME), {
          split: self.predict(model, examples) for split, examples in self.test_splits})
    if self.config.write_train_predictions:
      self.write_teacher(os.path.join(trial_dir, self.teacher_file),
                         lambda examples: self.scores(model, examples, logits=True),
                         "sigmoid" if self.regression_scale else "linear"
                         if self.spec.is_regression else "softmax")
    return dev

  def dev_metrics(self, scores_of) -> Dict[str, dict]:
    """Metrics per dev split; `scores_of(examples)`: `[examples, classes]` scores (argmax taken)
    or `[examples]` values on the label scale (single-task model or multi-task head alike)."""
    dev = {}
    for split, examples in self.dev_splits:
      scores = scores_of(examples)
      predictions = scores if self.spec.is_regression else scores.argmax(-1)
      dev[split] = metrics_lib.task_metrics(self.spec.name, glue_data.labels_of(examples),
                                            predictions.tolist())
    return dev

  def write_teacher(self, path: str, scores_of, function: str) -> None:
    """The teacher file: `scores_of(examples)` (logits, or values on the label scale) of every
    training example (whatever `--max_train_examples`), with the head's prediction function."""
    distillation.write_predictions(path, self.spec.name, self.spec.num_classes,
                                   scores_of(self.all_train_examples), function)

  def primary(self, dev) -> float:
    """The primary metric on the first dev split."""
    return dev[next(iter(dev))][self.primary_metric]

  def scores(self, model, examples, logits: bool = False) -> np.ndarray:
    """`[examples, classes]` softmax probabilities (or logits), or `[examples]` STS-B scores;
    with `double_unordered` averaged over both orders."""
    orders = [False, True] if self.config.double_unordered else [False]
    regression = self.spec.is_regression

    def scores_of(batch):
      out = model(batch, training=False)
      if regression:
        return {"scores": out["predictions"]}
      return {"scores": out["logits"] if logits else tf.nn.softmax(out["logits"])}

    total = None
    for swap in orders:
      features = encode(examples, self.tokenizer, self.config.max_seq_length, swap=swap)
      scores = trials_lib.predict(scores_of, features, self.config.eval_batch_size, self.log,
                                  f"predicting {len(examples)} examples")["scores"]
      total = scores if total is None else total + scores
    return total / len(orders)

  def predict(self, model, examples) -> List[float]:
    """Class indices, or scores for STS-B."""
    scores = self.scores(model, examples)
    return scores.tolist() if self.spec.is_regression else scores.argmax(-1).tolist()

  # --- the run -----------------------------------------------------------------------------------
  def summary_fields(self, median):
    return {"task": self.spec.name}

  def finish(self, trials, best, model_dir):
    """`<TASK>.tsv` (`index<TAB>prediction`) from the trial with the best dev primary metric."""
    if not self.test_splits:
      return
    predictions = textio.load_json(
        trials_lib.trial_dir(model_dir, best["trial"], TEST_PREDICTIONS_NAME))
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

  # --- in a multi-task (BAM) run ----------------------------------------------------------------
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
    """Targets: `gold` `[classes]` one-hot (`[1]`: the normalised value), `teacher` alike (zeros
    without one), `has_teacher` `[]`."""
    if self._mixture_arrays is None:
      examples = self.train_examples
      labels = np.array(glue_data.labels_of(examples), np.float32)
      gold = ((labels / REGRESSION_SCALE)[:, None] if self.spec.is_regression
              else np.eye(self.spec.num_classes, dtype=np.float32)[labels.astype(np.int64)])
      teacher = (self.teacher[self.rows].astype(np.float32) if self.teacher is not None
                 else np.zeros_like(gold))
      self._mixture_arrays = (
          encode(examples, self.tokenizer, self.config.max_seq_length),
          {"gold": gold, "teacher": teacher,
           "has_teacher": np.full([len(examples)], float(self.teacher is not None), np.float32)})
    return (tf.data.Dataset.from_tensor_slices(self._mixture_arrays)
            .shuffle(self.num_train, seed=seed).repeat())

  def output(self, head, dropout, sequence_output, inputs, training):
    """`[batch, classes]` logits, or `[batch]` sigmoid values in [0, 1] for regression."""
    y = tf.cast(head(dropout(sequence_output[:, 0], training=training)), tf.float32)
    return tf.sigmoid(y[:, 0]) if self.spec.is_regression else y

  def example_losses(self, output, features, targets, lam):
    """Cross-entropy against the mixed distribution, or the squared error for regression."""
    del features  # unused
    mixed = distillation.soft_targets(targets["gold"], targets["teacher"],
                                      targets["has_teacher"], lam)
    if self.spec.is_regression:
      losses = tf.square(output - mixed[:, 0])
    else:
      losses = -tf.reduce_sum(mixed * tf.nn.log_softmax(output), -1)
    return losses, tf.ones_like(losses)

  def head_scores(self, predict):
    """`scores_of(examples)` of a multi-task head: logits, or values on the label scale."""

    def scores_of(examples):
      values = predict(encode(examples, self.tokenizer, self.config.max_seq_length),
                       f"{self.name}: predicting {len(examples)} examples")
      return values * REGRESSION_SCALE if self.spec.is_regression else values
    return scores_of

  def evaluate_head(self, predict):
    """Metrics per dev split (`<task>` or `<task>:<split>` for MNLI's two); the primary metric
    of the first split (WNLI: not averaged, as GLUE's average)."""
    by_split = self.dev_metrics(self.head_scores(predict))
    dev = {self.name if len(by_split) == 1 else f"{self.name}:{split}": metrics
           for split, metrics in by_split.items()}
    first = next(iter(by_split.values()))
    return dev, (None if self.name == "wnli" else first[metrics_lib.PRIMARY[self.name]])

  def write_head_teacher(self, path: str, predict) -> None:
    """Logits, or regression values on the label scale, for every training row."""
    self.write_teacher(path, self.head_scores(predict),
                       "sigmoid" if self.spec.is_regression else "softmax")
