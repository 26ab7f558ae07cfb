"""Token tagging (POS, chunking, NER) with the ELECTRA fine-tuning protocol of `run_glue`.

Per trial: the exported encoder + a tagging head (a `task.Head`, run alone as a one-member
`multihead.HeadsRun`; `--crf` adds a linear-chain CRF, `tagger.py`, decoded with Viterbi), AdamW
with layer-wise LR decay, 10% warmup, 3 epochs; dev evaluation at the end: token accuracy (POS)
or conlleval span precision/recall/F1, overall and per type (chunk, NER). Span tasks train on
`--tag_scheme` tags (BIOES by default, as google-research/electra); predictions are written back
as IOB2, which conlleval reads next to the gold file's IOB1 or IOB2.
Finished trials are kept in `<model_dir>/trial_<k>/` (results.json, predictions.txt), so a killed
run resumes with the next unfinished trial; `<model_dir>/predictions.txt` is the best trial's.
With `--write_train_predictions`, each training word's tag logits (`train_predictions_<task>.npz`):
a teacher for a multi-task run. The same class is a tagging task's part of a multi-task (BAM)
run (`bam/multitask.py`).
"""
import os
from typing import Callable, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from official_rtd.data import tag_schemes
from official_rtd.data import tagging_data
from official_rtd.data import tagging_scores
from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import task as task_lib
from official_rtd.finetune.tagging import tagger
from official_rtd.ops import crf as crf_lib

PREDICTIONS_NAME = "predictions.txt"
PROTOCOLS = ("electra", "shao")
TaggingConfig = configs.TaggingConfig


def teacher_file(task: str) -> str:
  return f"train_predictions_{task}.npz"


@task_lib.register(*tagging_data.TASKS)
class TokenTagging(task_lib.Head):
  """Reads and encodes the data once; the head scores each word's first piece (`--crf`: a
  linear-chain CRF over them, `tagger.CrfHead`, decoded with Viterbi).

  In a BAM run: a softmax over tags at each word's first piece (no CRF; span tasks train on
  BIOES tags, scored as `run_tagging` does). Its examples are word-piece windows; its data is
  `--task_data_dirs=<task>:DIR` or `<--data_dir>/<folder>` (pos_ptb, chunk_conll2000,
  ner_conll2003). The tag set is the whole training set's, as a teacher's."""

  run_name = "TaggingRunner"
  protocols = PROTOCOLS
  published = (PREDICTIONS_NAME,)

  def __init__(self, config: TaggingConfig, export, log: Callable[[str], None],
               name: Optional[str] = None):
    super().__init__(config, export, log, name)
    self.spec = tagging_data.get_task(self.name)
    self.teacher_file = teacher_file(self.spec.name)
    self.primary_metric = "f1" if self.spec.spans else "accuracy"
    self.check_max_seq_length()
    self._check_config()
    train, self.dev_sentences = tagging_data.load_task(
        self.spec, config.data_dir, config.label_column, config.train_file, config.dev_file,
        config.carve_dev_sentences)
    self.stride, self.crf = config.window_stride, config.crf
    if self.spec.spans:
      train = tagging_data.with_scheme(train, config.tag_scheme)
    self.all_train = train
    self._all_train_windows = None
    self.rows = task_lib.subset_rows(len(train), config)
    self.train_sentences = [train[i] for i in self.rows]
    self.check_dev_tags(self.train_sentences)
    # The tag set is the whole training set's, under --max_train_examples too: a teacher's (its
    # logits cover every training word) and a member's of a multi-task run are the same.
    self.labels = sorted({tag for sentence in train for tag in sentence.tags})
    self.label_ids = {tag: i for i, tag in enumerate(self.labels)}
    self.train_windows = tagging_data.encode(self.train_sentences, self.tokenizer,
                                             config.max_seq_length, self.label_ids, self.stride)
    self.dev_windows = tagging_data.encode(self.dev_sentences, self.tokenizer,
                                           config.max_seq_length, self.label_ids, self.stride)
    self.num_train = len(self.train_windows)
    self.num_outputs = len(self.labels)
    self.teacher = None  # ([words, tags] probabilities, [windows, seq_len] row of each word)

  def _check_config(self):
    config = self.config
    if config.protocol == "shao":
      if self.spec.name != "pos":
        raise ValueError(f"--protocol=shao is Shao's PTB part-of-speech protocol; --task="
                         f"{self.spec.name} has none (use --protocol=electra)")
      self.default_epochs = configs.PROTOCOL_EPOCHS["shao"]
    if config.tag_scheme not in tag_schemes.SCHEMES:
      raise ValueError(f"--tag_scheme must be one of {tag_schemes.SCHEMES}")
    if config.max_seq_length < 3:
      raise ValueError(f"--max_seq_length={config.max_seq_length} leaves no room for a word")
    if config.window_stride < 0:
      raise ValueError(f"--window_stride={config.window_stride} must be >= 0 (0: half a window)")
    if config.write_train_predictions and config.crf:
      raise ValueError("--write_train_predictions writes a softmax teacher's word logits; a CRF's "
                       "word scores are not a distribution over tags: drop --crf")
    if config.write_train_predictions:
      self.published = (PREDICTIONS_NAME, self.teacher_file)

  @classmethod
  def member_config(cls, config: configs.GlueConfig, name: str) -> TaggingConfig:
    """The run's shared settings; the task's folder (`--task_data_dirs=<task>:DIR` or
    `<--data_dir>/<folder>`) with the default tag scheme, no CRF, dev tags unseen in training
    logged."""
    spec = tagging_data.get_task(name)
    directory = (configs.task_data_dirs(config).get(name)
                 or os.path.join(config.data_dir, spec.folder))
    if not os.path.isdir(directory):
      raise ValueError(f"no data for {name}: {directory} is not a folder; give "
                       f"--task_data_dirs={name}:DIR (with {spec.train_file}) or a "
                       f"--data_dir holding {spec.folder}/")
    return TaggingConfig(**configs.shared_settings(config), task=name, data_dir=directory,
                         allow_unseen_dev_tags=True,
                         write_train_predictions=config.write_train_predictions)

  def describe(self) -> str:
    cfg = self.config
    words = sum(len(s.words) for s in self.train_sentences)
    return (f"run_tagging ({cfg.protocol} protocol): {self.spec.name}, "
            f"{len(self.train_sentences)} train sentences ({words} words) -> "
            f"{len(self.train_windows)} windows, {len(self.dev_sentences)} dev sentences -> "
            f"{len(self.dev_windows)} windows, {len(self.labels)} tags"
            f"{' (' + cfg.tag_scheme + ')' if self.spec.spans else ''}"
            f"{', CRF' if self.crf else ''}")

  def check_dev_tags(self, train):
    """Dev tags (span types) absent from the training sentences are refused, or with
    --allow_unseen_dev_tags (a multi-task member's `member_config`) logged: the model cannot
    predict them, so they count as errors."""
    unseen = tagging_data.unseen_dev_tags(train, self.dev_sentences, self.spec.spans)
    if not unseen:
      return
    what = "span types" if self.spec.spans else "tags"
    listed = ", ".join(f"{tag} ({n})" for tag, n in list(unseen.items())[:8])
    subset = (f" (the --max_train_examples={self.config.max_train_examples} used)"
              if self.config.max_train_examples else "")
    if not self.config.allow_unseen_dev_tags:
      raise ValueError(f"dev {what} never seen in the training sentences{subset}: {listed} (dev "
                       "tokens); the model cannot predict them. Use training data that has them, "
                       "or --allow_unseen_dev_tags to count them as errors")
    self.log(f"{self.name}: dev {what} unseen in training{subset}, counted as errors: {listed}")

  # --- training ----------------------------------------------------------------------------------
  def build_head(self, encoder, name: str):
    if self.crf:
      return tagger.CrfHead(encoder, self.num_outputs, name=name)
    return super().build_head(encoder, name)

  def head_checkpoint_names(self, head):
    """The single-task `TokenTagger` kept the dense layer as `head` and, with a CRF, the
    transitions as `transitions`."""
    if self.crf:
      return {"head": head.dense, "transitions": head.transitions}
    return {"head": head}

  def read_teacher(self, path: str) -> None:
    probabilities = distillation.softmax(read_teacher_file(path, self.name, self.all_train,
                                                           self.labels)).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum([len(s.words) for s in self.all_train])])
    windows = self.train_windows
    start = offsets[np.asarray(self.rows)[windows.sentence]] + windows.first_word
    positions = np.arange(windows.word_labels.shape[1])
    owned = positions[None, :] < windows.inputs["word_lengths"][:, None]
    index = np.where(owned, start[:, None] + positions[None, :], 0).astype(np.int32)
    self.teacher = probabilities, index  # [windows, seq_len]: each owned word's teacher row
    self.teacher_path = path

  def mixture_dataset(self, seed: int) -> tf.data.Dataset:
    """Targets: `labels` `[seq_len]` tag ids of the owned words, `teacher` `[seq_len, tags]`
    (the teacher's distribution per word, zeros without one or past the words), `has_teacher`."""
    n = self.num_train
    probabilities, index = self.teacher or (np.zeros([1, self.num_outputs], np.float32),
                                            np.zeros_like(self.train_windows.word_labels))
    targets = {"labels": self.train_windows.word_labels,
               "has_teacher": np.full([n], float(self.teacher is not None), np.float32)}
    table = tf.constant(probabilities)

    def with_teacher(features, targets, rows):
      owned = tf.sequence_mask(features["word_lengths"], tf.shape(rows)[0], tf.float32)
      return features, {**targets, "teacher": tf.gather(table, rows) * owned[:, None]}

    return (tf.data.Dataset.from_tensor_slices((self.train_windows.inputs, targets, index))
            .shuffle(n, seed=seed).repeat().map(with_teacher))

  def output(self, head, dropout, sequence_output, inputs, training):
    """`[batch, seq_len, tags]` scores at each owned word's first piece, left-aligned."""
    logits = tf.cast(head(dropout(sequence_output, training=training)), tf.float32)
    return tf.gather(logits, inputs["word_positions"], batch_dims=1)

  def example_losses(self, head, output, features, targets, lam):
    """Each window's summed per-word cross-entropy against λ·y + (1 − λ)·teacher, or with a CRF
    its −log p(y); its words."""
    lengths = features["word_lengths"]
    labels = tf.maximum(tf.cast(targets["labels"], tf.int32), 0)
    if self.crf:  # no teacher
      return (-crf_lib.log_likelihood(output, head.transitions, labels, lengths),
              tf.cast(lengths, tf.float32))
    owned = tf.sequence_mask(lengths, tf.shape(output)[1], tf.float32)
    gold = tf.one_hot(labels, self.num_outputs)
    has_teacher = targets["has_teacher"][:, None, None]
    mixed = (has_teacher * (lam * gold + (1.0 - lam) * targets["teacher"])
             + (1.0 - has_teacher) * gold)
    losses = -tf.reduce_sum(mixed * tf.nn.log_softmax(output), -1)
    return tf.reduce_sum(losses * owned, -1), tf.cast(lengths, tf.float32)

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate_head(self, predict, head, trial_dir):
    """Token accuracy, or conlleval span precision/recall/F1 overall and per type; with
    `trial_dir`, a run of the task alone writes its predictions file there."""
    predicted = self.dev_tags(predict, head.transitions.numpy() if self.crf else None)
    if trial_dir is not None:
      tagging_scores.write_predictions(os.path.join(trial_dir, PREDICTIONS_NAME),
                                        self.dev_sentences, predicted)
    metrics = tagging_scores.evaluate(self.spec, self.dev_sentences, predicted)
    return metrics, metrics[self.primary_metric]

  def dev_tags(self, predict, transitions=None) -> List[List[str]]:
    """Each dev sentence's predicted tags (IOB2 for span tasks; Viterbi with CRF `transitions`)."""
    logits = predict(self.dev_windows.inputs,
                     f"{self.name}: tagging {len(self.dev_windows)} windows")
    return predicted_tags(self.spec, self.labels, self.dev_windows, logits, self.dev_sentences,
                          transitions)

  def all_train_windows(self) -> tagging_data.Windows:
    """Every training sentence's windows (whatever `--max_train_examples`), encoded once."""
    if self._all_train_windows is None:
      self._all_train_windows = tagging_data.encode(
          self.all_train, self.tokenizer, self.config.max_seq_length, self.label_ids,
          self.stride)
    return self._all_train_windows

  def write_head_teacher(self, path: str, predict) -> None:
    """Every training sentence's word logits (all of them, whatever `--max_train_examples`): the
    teacher file of a single-task or a multi-task run."""
    windows = self.all_train_windows()
    logits = predict(windows.inputs, f"{self.name}: tagging {len(windows)} training windows")
    write_teacher_file(path, self.name, self.labels,
                       sentence_word_logits(windows, logits, self.all_train))

  def brief(self, dev) -> str:
    return f"{self.primary_metric}={dev[self.primary_metric]:.4f}"

  def summary_fields(self, median):
    return {"task": self.spec.name, "labels": self.labels}


def predicted_tags(task: tagging_data.TaggingTask, labels: Sequence[str],
                   windows: tagging_data.Windows, logits: np.ndarray, sentences,
                   transitions=None) -> List[List[str]]:
  """Each sentence's tags from its windows' `[windows, seq_len, tags]` word logits: argmax, or
  Viterbi with a CRF's `transitions`; IOB2 for span tasks."""
  lengths = windows.inputs["word_lengths"]
  if transitions is not None:
    ids = [crf_lib.viterbi_decode(row[:n], transitions) for row, n in zip(logits, lengths)]
  else:
    ids = [row[:n].argmax(-1) for row, n in zip(logits, lengths)]
  by_sentence = tagging_data.words_by_sentence(windows, ids, sentences)
  return tagging_scores.output_tags(task, [[labels[i] for i in row] for row in by_sentence])


def sentence_word_logits(windows: tagging_data.Windows, logits: np.ndarray, sentences
                         ) -> List[np.ndarray]:
  """`[words, tags]` logits of each sentence, from its windows' owned words."""
  lengths = windows.inputs["word_lengths"]
  rows = tagging_data.words_by_sentence(windows, [row[:n] for row, n in zip(logits, lengths)],
                                        sentences)
  return [np.asarray(row, np.float32).reshape(len(row), logits.shape[-1]) for row in rows]


def write_teacher_file(path: str, task: str, labels: Sequence[str], per_sentence: List[np.ndarray]):
  """A tagging teacher file (`.npz`, written atomically): `logits` `[words, tags]` of every
  training word in order, `sentence_lengths`, `labels` (the tag of each column), `task`."""
  tmp = f"{path}.tmp-{os.getpid()}"
  with open(tmp, "wb") as f:
    np.savez(f, task=np.array(task), labels=np.array(list(labels)),
             prediction_function=np.array("softmax"),
             sentence_lengths=np.array([len(r) for r in per_sentence], np.int64),
             logits=np.concatenate(per_sentence).astype(np.float32))
  os.replace(tmp, path)


def read_teacher_file(path: str, task: str, sentences, labels: Sequence[str]) -> np.ndarray:
  """A tagging teacher's `[words, tags]` logits in the order of the student's `labels`, checked
  against the student's training sentences and tags (the teacher's must be among them).

  Raises:
    ValueError: naming the file when it is missing or unreadable, or its task, sentences (count,
      words) or tags differ from the student's.
  """
  if not os.path.isfile(path):
    raise ValueError(f"teacher file {path} does not exist (write it with run_tagging or a "
                     "multi-task run_glue, --write_train_predictions)")
  try:
    with np.load(path, allow_pickle=False) as data:
      data = {k: data[k] for k in data.files}
  except (OSError, ValueError) as e:
    raise ValueError(f"teacher file {path} is not a tagging teacher (.npz): {e}") from None
  problems = []
  if str(data.get("task", "")) != task:
    problems.append(f"it is for task {str(data.get('task', ''))!r}, not {task!r}")
  lengths = data.get("sentence_lengths", np.zeros([0], np.int64))
  expected = [len(s.words) for s in sentences]
  if len(lengths) != len(expected):
    problems.append(f"it holds {len(lengths)} sentences but the {task} training set has "
                    f"{len(expected)}")
  elif not np.array_equal(lengths, expected):
    first = int(np.flatnonzero(lengths != np.asarray(expected))[0])
    problems.append(f"sentence {first + 1} has {lengths[first]} words there but "
                    f"{expected[first]} here")
  teacher_tags = [str(tag) for tag in data.get("labels", [])]
  extra = sorted(set(teacher_tags) - set(labels))
  if extra:
    problems.append(f"its tags {extra[:6]} are not in the training set's")
  if problems:
    raise ValueError(f"teacher file {path} does not match the training set: "
                     + "; ".join(problems))
  # Columns in the student's tag order; a tag the teacher never saw (it trained on a subset)
  # gets probability 0.
  logits = np.full([len(data["logits"]), len(labels)], -1e9, np.float32)
  logits[:, [list(labels).index(tag) for tag in teacher_tags]] = data["logits"]
  return logits
