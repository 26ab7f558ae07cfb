"""GLUE tasks in the original distribution layout (`<data_dir>/{train,dev,test}.tsv`) and TFDS.

Rows are split on tabs only (no CSV quoting: MRPC and SST-2 sentences contain `"`), a UTF-8 BOM is
dropped, and a row with too few columns or an unknown label fails with `file:line`.
"""
import dataclasses
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from official_rtd.utils import textio


class GlueDataError(ValueError):
  """A GLUE file or TFDS source that cannot be read."""


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  """Column layout of one task's TSV files (0-based column indices)."""
  name: str
  labels: Optional[Tuple[str, ...]]  # None: regression
  header: bool
  text_a: int
  text_b: Optional[int]
  label: int
  test_text_a: int
  test_text_b: Optional[int]
  submission_name: str = ""
  dev_files: Tuple[str, ...] = ("dev.tsv",)
  test_files: Tuple[str, ...] = ("test.tsv",)
  tfds_name: str = ""
  # The header names of the text_a, text_b and label columns of train/dev files (checked, so
  # another task's files are refused instead of read by column number).
  column_names: Tuple[Optional[str], ...] = ()

  @property
  def is_regression(self) -> bool:
    return self.labels is None

  @property
  def num_classes(self) -> int:
    return 1 if self.labels is None else len(self.labels)


TASKS = {t.name: t for t in [
    TaskSpec("cola", labels=("0", "1"), header=False, text_a=3, text_b=None, label=1,
             test_text_a=1, test_text_b=None, submission_name="CoLA", tfds_name="glue/cola"),
    TaskSpec("sst-2", labels=("0", "1"), header=True, text_a=0, text_b=None, label=1,
             test_text_a=1, test_text_b=None, submission_name="SST-2", tfds_name="glue/sst2",
             column_names=("sentence", None, "label")),
    TaskSpec("mrpc", labels=("0", "1"), header=True, text_a=3, text_b=4, label=0,
             test_text_a=3, test_text_b=4, submission_name="MRPC", tfds_name="glue/mrpc",
             column_names=("#1 String", "#2 String", "Quality")),
    TaskSpec("sts-b", labels=None, header=True, text_a=7, text_b=8, label=9,
             test_text_a=7, test_text_b=8, submission_name="STS-B", tfds_name="glue/stsb",
             column_names=("sentence1", "sentence2", "score")),
    TaskSpec("qqp", labels=("0", "1"), header=True, text_a=3, text_b=4, label=5,
             test_text_a=1, test_text_b=2, submission_name="QQP", tfds_name="glue/qqp",
             column_names=("question1", "question2", "is_duplicate")),
    TaskSpec("mnli", labels=("contradiction", "entailment", "neutral"), header=True, text_a=8,
             text_b=9, label=-1, test_text_a=8, test_text_b=9, submission_name="MNLI",
             dev_files=("dev_matched.tsv", "dev_mismatched.tsv"),
             test_files=("test_matched.tsv", "test_mismatched.tsv"), tfds_name="glue/mnli",
             column_names=("sentence1", "sentence2", "gold_label")),
    TaskSpec("qnli", labels=("entailment", "not_entailment"), header=True, text_a=1, text_b=2,
             label=3, test_text_a=1, test_text_b=2, submission_name="QNLI", tfds_name="glue/qnli",
             column_names=("question", "sentence", "label")),
    TaskSpec("rte", labels=("entailment", "not_entailment"), header=True, text_a=1, text_b=2,
             label=3, test_text_a=1, test_text_b=2, submission_name="RTE", tfds_name="glue/rte",
             column_names=("sentence1", "sentence2", "label")),
    TaskSpec("wnli", labels=("0", "1"), header=True, text_a=1, text_b=2, label=3,
             test_text_a=1, test_text_b=2, submission_name="WNLI", tfds_name="glue/wnli",
             column_names=("sentence1", "sentence2", "label")),
]}
ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "sts": "sts-b", "sst": "sst-2"}


def get_task(name: str) -> TaskSpec:
  key = ALIASES.get(name.lower(), name.lower())
  if key not in TASKS:
    raise GlueDataError(f"unknown GLUE task {name!r}; one of {sorted(TASKS)}")
  return TASKS[key]


@dataclasses.dataclass
class Example:
  guid: str
  text_a: str
  text_b: Optional[str]
  label: Optional[float]  # class index, or the score for STS-B; None for test rows


def check_header(path: str, task: TaskSpec, header: Sequence[str]) -> None:
  """Raises GlueDataError (`path:1`) when a train/dev header does not name `task`'s columns."""
  for column, name in zip((task.text_a, task.text_b, task.label), task.column_names):
    if name is None or column is None:
      continue
    found = header[column].strip() if -len(header) <= column < len(header) else None
    if found != name:
      raise GlueDataError(
          f"{path}:1: column {column} of the header is {found!r}, not {task.name}'s {name!r}: "
          f"is this a {task.name} folder (header: {chr(9).join(header)[:80]!r})?")


def read_tsv(path: str, task: TaskSpec, split: str) -> List[Example]:
  """Reads `train`/`dev`/`test` rows of `task` from `path`.

  Raises:
    GlueDataError: missing file, or `path:line` of a short row or an unknown label.
  """
  if not os.path.isfile(path):
    raise GlueDataError(f"GLUE file {path} does not exist")
  test = split == "test"
  a_col = task.test_text_a if test else task.text_a
  b_col = task.test_text_b if test else task.text_b
  needed = max(c for c in (a_col, b_col, None if test else task.label) if c is not None and c >= 0)
  examples = []
  for line_number, line in textio.numbered_lines(path, "utf-8-sig"):
    if line_number == 1 and (task.header or test):
      if task.header and not test:
        check_header(path, task, line.rstrip("\r\n").split("\t"))
      continue
    line = line.rstrip("\r\n")
    if not line:
      continue
    columns = line.split("\t")
    if len(columns) <= needed:
      raise GlueDataError(f"{path}:{line_number}: expected at least {needed + 1} tab-separated "
                          f"columns for {task.name}, got {len(columns)}")
    label = None
    if not test:
      raw = columns[task.label].strip()
      if task.is_regression:
        try:
          label = float(raw)
        except ValueError:
          raise GlueDataError(f"{path}:{line_number}: score {raw!r} is not a number") from None
      elif raw in task.labels:
        label = task.labels.index(raw)
      else:
        raise GlueDataError(f"{path}:{line_number}: label {raw!r} is not one of "
                            f"{list(task.labels)}")
    examples.append(Example(
        guid=columns[0] if test else f"{split}-{line_number}", text_a=columns[a_col],
        text_b=columns[b_col] if b_col is not None else None, label=label))
  if not examples:
    raise GlueDataError(f"GLUE file {path} holds no rows")
  return examples


def load_split(data_dir: str, task: TaskSpec, split: str) -> List[Tuple[str, List[Example]]]:
  """`[(split name, examples)]`: one entry, or two for MNLI's dev (matched, mismatched)."""
  files = {"train": ("train.tsv",), "dev": task.dev_files, "test": task.test_files}[split]
  return [(os.path.splitext(f)[0], read_tsv(os.path.join(data_dir, f), task, split))
          for f in files]


def load_tfds_split(tfds_data_dir: str, task: TaskSpec, split: str
                    ) -> List[Tuple[str, List[Example]]]:
  """The same from a TFDS cache (`glue/<task>` builder), never downloading.

  Raises:
    GlueDataError: naming the builder and directory when the cache does not hold it.
  """
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  splits = {"train": ["train"], "test": ["test"],
            "dev": ["validation_matched", "validation_mismatched"] if task.name == "mnli"
                   else ["validation"]}[split]
  try:
    builder = tfds.builder(task.tfds_name, data_dir=tfds_data_dir, try_gcs=False)
    if not builder.is_prepared():
      raise GlueDataError(f"TFDS builder {task.tfds_name} is not prepared in {tfds_data_dir} (this "
                          "tool never downloads: run `tfds build` where there is network, or use "
                          "--data_dir with the GLUE TSV files)")
    out = []
    for name in splits:
      rows = tfds.as_numpy(builder.as_dataset(split=name))
      keys = {"cola": ("sentence", None), "sst2": ("sentence", None),
              "mrpc": ("sentence1", "sentence2"), "stsb": ("sentence1", "sentence2"),
              "qqp": ("question1", "question2"), "mnli": ("premise", "hypothesis"),
              "qnli": ("question", "sentence"), "rte": ("sentence1", "sentence2"),
              "wnli": ("sentence1", "sentence2")}[task.tfds_name.split("/")[1]]
      names = None if task.is_regression else builder.info.features["label"].names

      def label(value, names=names):
        if split == "test":
          return None
        if names is None:
          return float(value)
        return task.labels.index(names[value]) if task.name == "mnli" else int(value)

      examples = [Example(
          guid=str(row["idx"]), text_a=row[keys[0]].decode("utf-8"),
          text_b=row[keys[1]].decode("utf-8") if keys[1] else None, label=label(row["label"]))
          for row in rows]
      out.append((name, examples))
    return out
  except GlueDataError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise GlueDataError(f"cannot read TFDS {task.tfds_name} from {tfds_data_dir}: "
                        f"{' '.join(str(e).split())[:300]}") from None


def labels_of(examples: Sequence[Example]):
  return [e.label for e in examples]


def encode(examples: List[Example], tokenizer,
           max_seq_length: int, swap: bool = False) -> Dict[str, np.ndarray]:
  """`[CLS] a [SEP] (b [SEP])` ids of `tokenizer` (a `data.tokenizer.Tokenizer`), longest-first
  truncation; `swap` puts b first."""
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
