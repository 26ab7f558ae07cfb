"""Token-tagging data: CoNLL column files, the tasks' file layouts, and word-piece windows.

Column files hold one token per line (`word ... label`, whitespace or tab separated), a blank line
between sentences and `-DOCSTART-` lines between documents (skipped). The word is column 0, the
label `label_column` (default: the last).

Alignment: a word's label sits on its first word piece (with SentencePiece, the first piece that
spells a character of it, not a bare `▁` word-start piece); later pieces, `[CLS]`, `[SEP]` and
padding carry no label. A sentence longer than the window is split into overlapping windows of whole
words, and each word is owned by (predicted from, and trained in) the window where it has the
most context on its smaller side, as BERT does for SQuAD windows; no word is ever dropped.
"""
import collections
import dataclasses
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from official_rtd.data import tag_schemes
from official_rtd.utils import textio


@dataclasses.dataclass(frozen=True)
class Sentence:
  words: Tuple[str, ...]
  tags: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class TaggingTask:
  """A task's files under its folder; `dev_file` None carves the dev set out of train.
  `folder`: its name under a tagging root (`../shared/data/tagging`)."""
  name: str
  train_file: str
  dev_file: Optional[str]
  spans: bool  # span F1 (chunk, NER) rather than token accuracy (POS)
  folder: str


TASKS = {
    "pos": TaggingTask("pos", "train.tsv", "dev.tsv", spans=False, folder="pos_ptb"),
    "chunk": TaggingTask("chunk", "train.txt", None, spans=True, folder="chunk_conll2000"),
    "ner": TaggingTask("ner", "eng.train", "eng.testa", spans=True, folder="ner_conll2003"),
}


def get_task(name: str) -> TaggingTask:
  if name not in TASKS:
    raise ValueError(f"--task must be one of {sorted(TASKS)}, got {name!r}")
  return TASKS[name]


def read_conll(path: str, label_column: int = -1, span_tags: bool = False) -> List[Sentence]:
  """Sentences of a column file; with `span_tags` every tag must be `O` or a span tag
  (`B-`, `I-`, `E-` or `S-` and a type).

  Raises:
    ValueError: `path:line` of the first line with too few columns, a column count different
      from the file's first token line, or (`span_tags`) a tag that is not a span tag.
  """
  sentences, words, tags = [], [], []
  width, first = None, 0

  def flush():
    if words:
      sentences.append(Sentence(tuple(words), tuple(tags)))
      words.clear()
      tags.clear()

  for number, line in textio.numbered_lines(path):
    fields = line.split()
    if not fields or fields[0] == "-DOCSTART-":
      flush()
      continue
    if width is None:
      width, first = len(fields), number
      if width < 2:
        raise ValueError(f"{path}:{number}: one column {line.strip()!r}; expected "
                         "`word ... label` columns")
      if not -width <= label_column < width:
        raise ValueError(f"{path}:{number}: --label_column={label_column} but lines have "
                         f"{width} columns")
    if len(fields) != width:
      raise ValueError(f"{path}:{number}: {len(fields)} columns where line {first} has "
                       f"{width}: {line.rstrip()!r}")
    if span_tags and not tag_schemes.is_span_tag(fields[label_column]):
      raise ValueError(f"{path}:{number}: tag {fields[label_column]!r} is not a span tag (O, or "
                       "B-/I-/E-/S- and a type): span tasks (chunk, ner) read IOB or BIOES tags; "
                       "is this a part-of-speech file (--task=pos), or the wrong --label_column?")
    words.append(fields[0])
    tags.append(fields[label_column])
  flush()
  if not sentences:
    raise ValueError(f"{path}: no sentences")
  return sentences


def with_scheme(sentences: Sequence[Sentence], scheme: str) -> List[Sentence]:
  """Sentences with their span tags rewritten in `scheme` (iob1, iob2 or bioes)."""
  return [Sentence(s.words, tuple(tag_schemes.convert(s.tags, scheme))) for s in sentences]


class CarveError(ValueError):
  """A task without a dev file whose training file is too short to set `carve` sentences aside
  (`sentences`: how many it holds); the message names `--carve_dev_sentences` (`run_tagging`'s
  flag), and other tools say it in their own terms."""

  def __init__(self, message: str, sentences: int, carve: int):
    super().__init__(message)
    self.sentences, self.carve = sentences, carve


def load_task(task: TaggingTask, data_dir: str, label_column: int = -1, train_file: str = "",
              dev_file: str = "", carve_dev_sentences: int = 1000
              ) -> Tuple[List[Sentence], List[Sentence]]:
  """`(train, dev)` sentences; with no dev file the last `carve_dev_sentences` of train are dev.

  Raises:
    FileNotFoundError: a file of the task is missing (naming the layout `data_dir` must have).
    ValueError: a file holds no sentence or a bad line (`read_conll`).
  """
  def read(name):
    path = os.path.join(data_dir, name)
    if not os.path.isfile(path):
      files = [f for f in (train_file or task.train_file, dev_file or task.dev_file) if f]
      raise FileNotFoundError(
          f"{task.name}: {path} not found (the data folder must hold the task's "
          f"{' and '.join(files)}, e.g. ../shared/data/tagging/{task.folder})")
    return read_conll(path, label_column, task.spans)

  train = read(train_file or task.train_file)
  dev_name = dev_file or task.dev_file
  if dev_name:
    return train, read(dev_name)
  if not 0 < carve_dev_sentences < len(train):
    raise CarveError(f"--carve_dev_sentences={carve_dev_sentences} must be in (0, "
                     f"{len(train)}) for {task.train_file}", len(train), carve_dev_sentences)
  return train[:-carve_dev_sentences], train[-carve_dev_sentences:]


def unseen_dev_tags(train: Sequence[Sentence], dev: Sequence[Sentence], spans: bool
                    ) -> Dict[str, int]:
  """{dev tag (span tasks: span type): dev tokens} of those no training sentence has: the
  model can never predict them."""
  kind = (lambda tag: tag_schemes.split_tag(tag)[1]) if spans else (lambda tag: tag)
  seen = {kind(tag) for sentence in train for tag in sentence.tags}
  counts = collections.Counter(kind(tag) for sentence in dev for tag in sentence.tags)
  return {tag: n for tag, n in sorted(counts.items()) if tag not in seen and tag != ""}


@dataclasses.dataclass
class Windows:
  """Encoded windows. `inputs`: `input_word_ids`, `input_mask`, `input_type_ids` and
  `word_positions` (the first-piece position of each owned word, left-aligned, 0-padded), all
  `[windows, seq_len]` int32; `word_lengths` `[windows]` (owned words); `word_labels`
  `[windows, seq_len]` label ids (-1 for a tag outside the label set). `sentence`, `first_word`:
  which sentence each window belongs to and its first owned word (owned words are consecutive)."""
  inputs: Dict[str, np.ndarray]
  word_labels: np.ndarray
  sentence: np.ndarray
  first_word: np.ndarray

  def __len__(self):
    return len(self.sentence)


def word_windows(piece_counts: Sequence[int], max_pieces: int, stride: int
                 ) -> List[Tuple[int, int]]:
  """`[start, end)` word ranges of at most `max_pieces` pieces each (a longer word alone), the
  next starting at the first word `stride` pieces after the previous start (or at its end)."""
  offsets = np.concatenate([[0], np.cumsum(piece_counts)])
  windows, start, n = [], 0, len(piece_counts)
  while True:
    end = start + 1
    while end < n and offsets[end + 1] - offsets[start] <= max_pieces:
      end += 1
    windows.append((start, end))
    if end >= n:
      return windows
    after = int(np.searchsorted(offsets, offsets[start] + stride, side="left"))
    start = min(max(after, start + 1), end)


def owners(piece_counts: Sequence[int], windows: Sequence[Tuple[int, int]]) -> np.ndarray:
  """`[words]` index of the window where each word has the most context (min of the pieces
  before and after it in the window); the earlier window on ties."""
  offsets = np.concatenate([[0], np.cumsum(piece_counts)])
  best = np.full(len(piece_counts), -1)
  best_score = np.full(len(piece_counts), -1)
  for index, (start, end) in enumerate(windows):
    words = np.arange(start, end)
    score = np.minimum(offsets[words] - offsets[start], offsets[end] - offsets[words + 1])
    better = score > best_score[words]
    best[words[better]], best_score[words[better]] = index, score[better]
  return best


def encode(sentences: Sequence[Sentence], tokenizer, max_seq_length: int,
           label_ids: Dict[str, int], stride: int = 0) -> Windows:
  """Word-piece windows of `sentences` (see the module docstring); `stride` 0 is half a window."""
  vocab = tokenizer.vocab
  max_pieces = max_seq_length - 2
  stride = stride or max(max_pieces // 2, 1)
  flat = [w for s in sentences for w in s.words]
  pieces = [p[:max_pieces] or [vocab.unk_id] for p in tokenizer.tokenize_to_lists(flat)]
  rows = {k: [] for k in ("input_word_ids", "word_positions", "word_labels")}
  lengths, sentence_of, first_of = [], [], []
  cursor = 0
  for index, sentence in enumerate(sentences):
    word_pieces = pieces[cursor:cursor + len(sentence.words)]
    cursor += len(sentence.words)
    counts = [len(p) for p in word_pieces]
    windows = word_windows(counts, max_pieces, stride)
    owner = owners(counts, windows)
    for window, (start, end) in enumerate(windows):
      owned = [w for w in range(start, end) if owner[w] == window]
      if not owned:
        continue
      assert owned == list(range(owned[0], owned[-1] + 1)), (index, window, owned)
      ids, first_piece = [vocab.cls_id], {}
      for w in range(start, end):
        # SentencePiece may start a word with a bare "▁" piece, which spells nothing of it.
        bare_start = len(word_pieces[w]) > 1 and vocab.tokens[word_pieces[w][0]] == vocab.word_start
        first_piece[w] = len(ids) + int(bool(vocab.word_start) and bare_start)
        ids.extend(word_pieces[w])
      ids.append(vocab.sep_id)
      rows["input_word_ids"].append(ids)
      rows["word_positions"].append([first_piece[w] for w in owned])
      rows["word_labels"].append([label_ids.get(sentence.tags[w], -1) for w in owned])
      lengths.append(len(owned))
      sentence_of.append(index)
      first_of.append(owned[0])
  padded = {k: _pad(v, max_seq_length, vocab.pad_id if k == "input_word_ids" else 0)
            for k, v in rows.items()}
  ids = padded["input_word_ids"]
  inputs = {"input_word_ids": ids, "input_mask": (ids != vocab.pad_id).astype(np.int32),
            "input_type_ids": np.zeros_like(ids), "word_positions": padded["word_positions"],
            "word_lengths": np.array(lengths, np.int32)}
  return Windows(inputs, padded["word_labels"], np.array(sentence_of, np.int64),
                 np.array(first_of, np.int64))


def _pad(rows: List[List[int]], width: int, value: int) -> np.ndarray:
  out = np.full([len(rows), width], value, np.int32)
  for i, row in enumerate(rows):
    out[i, :len(row)] = row
  return out


def words_by_sentence(windows: Windows, word_predictions: Sequence[Sequence[int]],
                      sentences: Sequence[Sentence]) -> List[List[int]]:
  """Reassembles per-window predictions (each window's owned words, in order) into one list per
  sentence. Raises if a word was predicted by no window or by two."""
  out = [[None] * len(s.words) for s in sentences]
  for sentence, first, predicted in zip(windows.sentence, windows.first_word, word_predictions):
    for offset, value in enumerate(predicted):
      if out[sentence][first + offset] is not None:
        raise AssertionError(f"sentence {sentence} word {first + offset} predicted twice")
      out[sentence][first + offset] = value
  for index, row in enumerate(out):
    missing = [w for w, value in enumerate(row) if value is None]
    if missing:
      raise AssertionError(f"sentence {index} word {missing[0]} predicted by no window")
  return out
