"""GLUE fine-tuning with the ELECTRA protocol (dissertation Table 5.2): N trials, median + spread.

Per trial: the exported encoder + ELECTRA's head, AdamW (ε 1e-6, weight decay 0 by default) with
layer-wise learning-rate decay, 10% linear warmup then linear decay, gradient clipping 1.0, batch 32,
3 epochs (10 for RTE and STS-B); evaluation on dev at the end. Finished trials are kept in
`<model_dir>/trial_<k>/results.json`, so a killed run resumes with the next unfinished trial.
"""
import json
import os
from typing import Callable, Dict, List

import numpy as np
import tensorflow as tf

from official_rtd.data import records
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.finetune import classifier
from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import glue_data
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune import trials as trials_lib

LONG_TASKS = ("rte", "sts-b")  # 10 epochs instead of 3


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


def load_split(config: GlueConfig, task: glue_data.TaskSpec, split: str):
  """A task's split from `--tfds_data_dir`, or from `--data_dir`: the task's folder, or a GLUE
  root holding `<TASK>/` folders (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI)."""
  if bool(config.data_dir) == bool(config.tfds_data_dir):
    raise ValueError("give exactly one of --data_dir (GLUE TSV files) and --tfds_data_dir")
  if config.tfds_data_dir:
    return glue_data.load_tfds_split(config.tfds_data_dir, task, split)
  folder = os.path.join(config.data_dir, task.submission_name)
  return glue_data.load_split(folder if os.path.isdir(folder) else config.data_dir, task, split)


class GlueRunner(runner_lib.FinetuneRunner):
  """Loads data and the export once, then runs trials."""

  def __init__(self, config: GlueConfig, log: Callable[[str], None] = print):
    if not config.task or config.tasks:
      raise ValueError("GlueRunner is single-task: give --task (--tasks runs multitask.py)")
    self.task = glue_data.get_task(config.task)
    super().__init__(config, log)
    if config.double_unordered and self.task.name not in ("mrpc", "sts-b"):
      raise ValueError("--double_unordered applies to MRPC and STS-B only")
    self.check_max_seq_length()
    self.epochs = config.num_train_epochs or (10 if self.task.name in LONG_TASKS else 3)
    self.all_train_examples = load_split(config, self.task, "train")[0][1]
    self.train_examples = self.subset(self.all_train_examples)
    self.dev_splits = load_split(config, self.task, "dev")
    self.test_splits = load_split(config, self.task, "test") if config.do_predict else []
    log(f"run_glue: {self.task.name}, {len(self.train_examples)} train examples, "
        f"{self.defaults_line(self.epochs)}")

  # --- one trial ---------------------------------------------------------------------------------
  def make_model(self, encoder):
    model = classifier.SequenceClassifier(encoder, self.task.num_classes, name="glue")
    model({k: v[:1] for k, v in encode(self.train_examples[:1], self.tokenizer, 8).items()})
    return model

  def _train_features(self):
    features = encode(self.train_examples, self.tokenizer, self.config.max_seq_length)
    labels = np.array(glue_data.labels_of(self.train_examples), np.float32)
    if self.config.double_unordered:
      swapped = encode(self.train_examples, self.tokenizer, self.config.max_seq_length, swap=True)
      features = {k: np.concatenate([features[k], swapped[k]]) for k in features}
      labels = np.concatenate([labels, labels])
    return features, labels

  def run_trial(self, trial: int) -> dict:
    features, labels = self._train_features()
    model, result = self.fit(
        trial, features, labels, self.epochs, self.make_model,
        lambda m, batch: classifier.loss(m(batch[0], training=True), batch[1]))
    result["dev"] = {}
    for split, examples in self.dev_splits:
      predictions = self.predict(model, examples)
      result["dev"][split] = metrics_lib.task_metrics(
          self.task.name, glue_data.labels_of(examples), predictions)
    result["test_predictions"] = {split: np.asarray(self.predict(model, examples)).tolist()
                                  for split, examples in self.test_splits}
    if self.config.write_train_predictions:  # a teacher for BAM distillation
      distillation.write_predictions(
          trials_lib.trial_dir(self.config.model_dir, trial,
                               distillation.file_name(self.task.name)),
          self.task.name, self.task.num_classes,
          self.scores(model, self.all_train_examples, logits=True))
    return result

  def scores(self, model, examples, logits: bool = False) -> np.ndarray:
    """`[examples, classes]` softmax probabilities (or logits), or `[examples]` STS-B scores;
    with `double_unordered` averaged over both orders."""
    orders = [False, True] if self.config.double_unordered else [False]
    regression = self.task.is_regression

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
    return scores.tolist() if self.task.is_regression else scores.argmax(-1).tolist()

  # --- all trials --------------------------------------------------------------------------------
  def run(self) -> dict:
    trials = self.run_trials(lambda result: json.dumps(result["dev"]))
    summary = self.write_summary(self.summary(
        [{k: v for k, v in t.items() if k != "test_predictions"} for t in trials],
        {"num_train_epochs": self.epochs}, task=self.task.name,
        primary_metric=metrics_lib.PRIMARY[self.task.name]))
    if self.config.do_predict:
      self._write_submission(trials)
    if self.config.write_train_predictions:
      self.publish_best(self._best(trials)["trial"], [distillation.file_name(self.task.name)])
    return summary

  def _best(self, trials) -> dict:
    """The trial with the best primary metric on the first dev split."""
    primary = metrics_lib.PRIMARY[self.task.name]
    first_dev = next(iter(trials[0]["dev"]))
    return max(trials, key=lambda t: t["dev"][first_dev][primary])

  def _write_submission(self, trials):
    """`<TASK>.tsv` (`index<TAB>prediction`) from the trial with the best dev primary metric."""
    best = self._best(trials)
    for split, examples in self.test_splits:
      suffix = {"test_matched": "-m", "test_mismatched": "-mm"}.get(split, "")
      path = os.path.join(self.config.model_dir, f"{self.task.submission_name}{suffix}.tsv")
      lines = ["index\tprediction"]
      for example, value in zip(examples, best["test_predictions"][split]):
        shown = (f"{min(max(value, 0.0), 5.0):.3f}" if self.task.is_regression
                 else self.task.labels[int(value)])
        lines.append(f"{example.guid}\t{shown}")
      records.write_lines_atomic(path, lines)
      self.log(f"wrote {len(examples)} test predictions to {path}")
