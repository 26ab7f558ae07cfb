"""The CVT task contract (after google-research/cvt_text's task modules): what the runner and the
training steps know of a task, and nothing more.

A task owns its data (labeled train and dev examples read from `--data_dir`), its prediction
modules (`build_head`: the primary module and the auxiliary ones with their restricted views,
over the shared encoder's states `encoder.CnnBiLstmEncoder`), its losses and its decoding:

  labeled_loss(head, states, inputs, targets, dropout)   the primary module vs the gold targets
  teacher(head, states, inputs)                          the primary's targets on an unlabeled
                                                         batch (no dropout, held fixed)
  student_loss(head, states, inputs, teacher, dropout,   each auxiliary module (or, for the word-
               auxiliary)                                dropout baseline, the primary) vs them
  predict(head, states, inputs)                          what `evaluate` decodes
  evaluate(rows, path)                                   dev metrics; writes the predictions file

A task is built from its label set and the run's settings (`CvtTask(name, labels, settings)`);
`read` builds it from its data (reading the labels off the training examples), and a trained
run's task from the labels its run wrote, without data, to label new text: `predict_file` reads
a file (one of its `input_formats`), predicts in batches of similar lengths with progress and an
ETA, and writes the task's own output format (`cvt_predict`).

A new task is one module (a `CvtTask` subclass decorated with `register`) and its import line in
`all_tasks.py`.
"""
import abc
import collections
import os
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from official_rtd.cvt import losses
from official_rtd.utils import subsets

_TASKS: Dict[str, type] = {}


def register(*names: str):
  """Class decorator: the task answers to `--tasks=<name>` for each of `names`."""
  def decorate(cls):
    for name in names:
      if name in _TASKS:
        raise ValueError(f"CVT task {name!r} registered twice")
      _TASKS[name] = cls
    return cls
  return decorate


def names() -> List[str]:
  return sorted(_TASKS)


def get(name: str) -> type:
  if name not in _TASKS:
    raise ValueError(f"--tasks: unknown {name!r}; one of: {', '.join(names())}")
  return _TASKS[name]


class CvtTask(abc.ABC):
  """One task of a CVT run. Subclasses set `primary_metric` and `label_kind`; `read` gives the
  task with its data (`self.train` / `self.dev` examples), the constructor the task without data
  (a trained run's, for `cvt_predict`); `split_unlabeled` (optional) says how a line of the
  unlabeled text becomes sentences (default: paragraphs split into sentences)."""
  split_unlabeled = None
  primary_metric: str
  label_kind: str = "tags"  # what `num_labels` counts, for the log line
  target_spec = tf.TensorSpec([None, None], tf.int32)  # labeled targets `[batch, time]`

  @classmethod
  def primary_metric_of(cls, name: str) -> str:
    """The figure that selects the dev evaluations of task `name` (known before it is built)."""
    del name
    return cls.primary_metric

  def __init__(self, name: str, labels: dict, settings):
    """The task without data. `labels`: its label set as `vocabulary_json` writes it (what a
    trained run recorded, or what `read` found in the training data); `settings`: the run's
    `settings.CvtRunConfig` (the task's own settings among its fields)."""
    self.name = name
    self.train: list = []
    self.dev: list = []
    self.remainder: list = []  # training examples `labeled_subset` left out (labels unused)
    del labels, settings

  @classmethod
  def read(cls, name: str, config, rng: np.random.Generator) -> "CvtTask":
    """The task with its data from `config.data_dir` (`config`: the run's `CvtRunConfig`): the
    training subset (`labeled_subset`, `rng` picking it), its remainder, and dev."""
    raise NotImplementedError(f"{cls.__name__} reads no data")

  def with_data(self, train: list, dev: list, remainder: list = ()) -> "CvtTask":
    self.train, self.dev, self.remainder = list(train), list(dev), list(remainder)
    return self

  # --- data --------------------------------------------------------------------------------------
  @abc.abstractmethod
  def source_words(self, example) -> Sequence[str]:
    """The words the shared encoder reads."""

  @abc.abstractmethod
  def targets(self, example) -> Sequence[int]:
    """The labeled loss's target ids of one training example."""

  @property
  @abc.abstractmethod
  def num_labels(self) -> int:
    """Size of the primary module's output per position."""

  def vocabulary_json(self) -> dict:
    """What reading a trained model back needs beyond the encoder's vocabulary (e.g. tags)."""
    return {}

  def pad_targets(self, targets: Sequence[Sequence[int]]) -> np.ndarray:
    """`[batch, longest]` target ids, 0 past each example's end."""
    out = np.zeros([len(targets), max(len(t) for t in targets)], np.int32)
    for row, ids in enumerate(targets):
      out[row, :len(ids)] = ids
    return out

  # --- model and losses (called inside tf.function) ----------------------------------------------
  @abc.abstractmethod
  def build_head(self, config) -> tf.Module:
    """The task's prediction modules (a Keras layer) over the encoder's states."""

  @abc.abstractmethod
  def labeled_loss(self, head, states, inputs, targets, dropout_rate: float,
                   label_smoothing: float) -> tf.Tensor:
    """Mean cross-entropy of the primary module against `targets`."""

  @abc.abstractmethod
  def teacher(self, head, states, inputs):
    """The primary module's targets for the auxiliary modules on an unlabeled batch."""

  @abc.abstractmethod
  def student_loss(self, head, states, inputs, teacher, dropout_rate: float,
                   auxiliary: bool) -> tf.Tensor:
    """L_CVT over the auxiliary modules (`auxiliary`), or the primary module's loss against the
    teacher (the word-dropout baseline, whose inputs had words removed)."""

  @abc.abstractmethod
  def predict(self, head, states, inputs) -> Dict[str, tf.Tensor]:
    """`{name: [batch, ...]}` for `evaluate`, without dropout."""

  # --- evaluation --------------------------------------------------------------------------------
  @abc.abstractmethod
  def evaluate(self, rows: List[Dict[str, np.ndarray]], path: Optional[str],
               log: Callable[[str], None]) -> Dict[str, float]:
    """Dev metrics from each dev example's `predict` row (padding cut by the caller is not
    assumed); with `path`, writes the predictions file there."""

  def predictions_name(self) -> str:
    """The predictions file's name in `trial_<k>/`."""
    return f"predictions_{self.name}.txt"

  # --- a trained run's task, applied to new text (`cvt_predict`) -------------------------------
  def create_variables(self, head, states, inputs) -> None:
    """Builds what prediction reads in `head` (before a trained run's weights are checked in):
    by default, one `predict` call."""
    self.predict(head, states, inputs)

  input_formats: Sequence[str] = ("text",)
  # What `cvt_predict` writes one of per input sentence, and the run's settings its decoding reads
  # (which `cvt_predict`'s flags may override; named in its log).
  output_unit: str = "sentences"
  decoding_settings: Sequence[str] = ()

  def predict_file(self, run, input_path: str, output_path: str, input_format: str,
                   log: Callable[[str], None]) -> int:
    """Labels `input_path` (one of `input_formats`) with `run` (`run_dir.TrainedRun`) and writes
    `output_path` atomically; returns the number of sentences."""
    raise NotImplementedError(f"{type(self).__name__} cannot label new text")

  def describe(self) -> str:
    return (f"{self.name} {len(self.train)} train / {len(self.dev)} dev sentences, "
            f"{self.num_labels} {self.label_kind}")


def labeled_subset(examples: list, rng: np.random.Generator, config) -> Tuple[list, list]:
  """(kept, remainder): the training examples kept (`subset` of `--train_fraction`,
  `--max_train_sentences`) and the others, which `--unlabeled_remainder` reads as unlabeled
  text."""
  kept = subset(examples, rng, config.train_fraction, config.max_train_sentences)
  chosen = {id(e) for e in kept}
  return kept, [e for e in examples if id(e) not in chosen]


# What `--data_dir` must hold when several tasks share one run (named in its errors).
ROOT_LAYOUT = ("a root holding each task's folder (pos_ptb/, chunk_conll2000/, ner_conll2003/, "
               "each also under tagging/; parsing/ud_ewt/; translation/multi30k/), e.g. "
               "../shared/data")


def task_folder(config, name: str, candidates: Sequence[str], folder: str) -> str:
  """The first existing folder of `candidates` (the task's folder under `--data_dir`); else
  `--data_dir` itself when the run has one task (its files there); else an error naming the
  root layout a multi-task run needs."""
  found = next((c for c in candidates if os.path.isdir(c)), None)
  if found:
    return found
  tasks = [t for t in config.tasks.split(",") if t.strip()]
  if len(tasks) > 1:
    raise FileNotFoundError(
        f"--tasks={config.tasks}: --data_dir={config.data_dir} has no {folder}/ for {name}; with "
        f"several tasks --data_dir is {ROOT_LAYOUT}")
  return config.data_dir


def subset(examples: list, rng: np.random.Generator, fraction: float, limit: int) -> list:
  """A seeded random subset, in corpus order: `fraction` of the examples (1.0: all), then at
  most `limit` (0: no limit)."""
  if not 0.0 < fraction <= 1.0:
    raise ValueError(f"--train_fraction={fraction} must be in (0, 1]")
  keep = len(examples) if fraction >= 1.0 else max(1, int(round(fraction * len(examples))))
  if limit:
    keep = min(keep, limit)
  return subsets.random_subset(examples, keep, rng)


# A CoNLL-U token row: an id (1, 1-2 or 1.1), then nine more tab-separated fields.
CONLLU_ROW = re.compile(r"^\d+([-.]\d+)?\t([^\t]*\t){8}[^\t]*$")


def detect_format(path: str, max_lines: int = 2000) -> Tuple[Optional[str], str]:
  """(format, what shows it) of an input file from its first `max_lines` lines (None for a file
  without words, which any format reads as no sentences): "conllu" when its
  lines are `#` comments and tab-separated rows of ten fields that start with a token id; "conll"
  when its lines are rows of one column count, in blocks between blank lines (or it has
  `-DOCSTART-`); else "text"."""
  from official_rtd.utils import textio  # pylint: disable=g-import-not-at-top
  lines = []
  for number, line in textio.numbered_lines(path):
    if number > max_lines:
      break
    lines.append(line.rstrip("\n"))
  filled = [line for line in lines if line.strip()]
  if not filled:
    return None, "no words"
  rows = sum(bool(CONLLU_ROW.match(line)) for line in filled)
  if rows and rows + sum(line.startswith("#") for line in filled) == len(filled):
    return "conllu", "tab-separated rows of ten fields starting with token ids"
  if any(line.split()[0] == "-DOCSTART-" for line in filled):
    return "conll", "-DOCSTART- rows"
  widths = collections.Counter(len(line.split()) for line in filled)
  width, count = widths.most_common(1)[0]
  blocks = sum(1 for before, line in zip([""] + lines, lines)
               if line.strip() and not before.strip())
  if count >= 0.95 * len(filled) and len(filled) >= 2 * blocks and len(lines) > len(filled):
    return "conll", f"rows of {width} column(s) in blocks between blank lines"
  return "text", "lines of running text"


def input_format_of(path: str, given: str, log: Callable[[str], None]) -> str:
  """The format to read `path` in: `given`, refused (one line) where the content shows another;
  unset (""), the one the content shows, logged."""
  found, why = detect_format(path)
  if found is None:
    return given or "text"
  if not given:
    log(f"{path}: read as --input_format={found} ({why}; --input_format sets it)")
    return found
  if given != found:
    raise ValueError(f"{path} looks like {found} ({why}), not --input_format={given}: give "
                     f"--input_format={found}, or leave --input_format unset")
  return given


def read_sentences(path: str, input_format: str):
  """`conllu.Sentence`s of an input file: "text" (a sentence per line, tokens split on
  whitespace; a blank line is an empty sentence, so output sentence k is input line k), "conll"
  (the first column of a column file, blank lines between sentences) or "conllu" (Universal
  Dependencies; its tags and ids are written back)."""
  from official_rtd.data import conllu  # pylint: disable=g-import-not-at-top
  from official_rtd.utils import textio  # pylint: disable=g-import-not-at-top
  if input_format == "conllu":
    return conllu.read_conllu(path)
  blank = lambda words: conllu.Sentence(list(words), [0] * len(words), ["_"] * len(words),
                                        ["_"] * len(words), ["_"] * len(words))
  sentences, words = [], []
  for _, line in textio.numbered_lines(path):
    fields = line.split()
    if input_format == "text":
      sentences.append(blank(fields))
    elif not fields or fields[0] == "-DOCSTART-":
      if words:
        sentences.append(blank(words))
      words = []
    else:
      words.append(fields[0])
  if words:
    sentences.append(blank(words))
  if not any(s.words for s in sentences):
    raise ValueError(f"{path}: no sentences (read as --input_format={input_format})")
  return sentences


class PerWordTask(CvtTask):
  """A task whose modules output one distribution per source word (`head(views, dropout,
  names)` → `{module: logits [batch, time, num_labels]}`): tagging, and parsing with (head,
  relation) pairs as the labels. Its CVT loss (§4.1):
    L_CVT = Σ_j KL(p_θ(y|x) ‖ p^j_θ(y|x)), averaged over words,
  the primary prediction p_θ computed without dropout and held fixed."""
  auxiliary_modules: Sequence[str] = ()

  def _logits(self, head, states, inputs, dropout_rate, modules):
    return head(states, inputs["lengths"], dropout_rate=dropout_rate, names=modules)

  def labeled_loss(self, head, states, inputs, targets, dropout_rate, label_smoothing):
    logits = self._logits(head, states, inputs, dropout_rate, ("primary",))["primary"]
    return losses.smoothed_cross_entropy(logits, targets, word_mask(inputs), label_smoothing)

  def teacher(self, head, states, inputs):
    return self._logits(head, states, inputs, 0.0, ("primary",))["primary"]

  def student_loss(self, head, states, inputs, teacher, dropout_rate, auxiliary):
    names = tuple(self.auxiliary_modules) if auxiliary else ("primary",)
    student = self._logits(head, states, inputs, dropout_rate, names)
    mask = word_mask(inputs)
    return tf.add_n([losses.kl_divergence(teacher, student[n], mask) for n in names])

  input_formats = ("text", "conll", "conllu")

  def write_predictions(self, path: str, sentences, rows) -> None:
    """Writes the predictions (`predict` rows, one per sentence) of `sentences` to `path`."""
    raise NotImplementedError(f"{type(self).__name__} cannot write predictions")

  def predict_file(self, run, input_path, output_path, input_format, log):
    from official_rtd.cvt import data as data_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.cvt import training  # pylint: disable=g-import-not-at-top
    sentences = read_sentences(input_path, input_format)
    head = run.model.heads[self.name]
    step = tf.function(lambda inputs: self.predict(head, run.model(inputs), inputs),
                       input_signature=[training.INPUTS], autograph=False)
    filled = [i for i, s in enumerate(sentences) if s.words]
    predicted = data_lib.predict_rows([run.vocab.encode(sentences[i].words) for i in filled],
                                      step, log, f"{self.name}: predicted")
    rows = [None] * len(sentences)  # an empty sentence (a blank text line) has no row
    for i, row in zip(filled, predicted):
      rows[i] = row
    self.write_predictions(output_path, sentences, rows)
    return len(sentences)


def word_mask(inputs) -> tf.Tensor:
  """`[batch, time]` float: 1 at real words."""
  return tf.sequence_mask(inputs["lengths"], tf.shape(inputs["words"])[1], tf.float32)
