"""Packs tokenized lines into `[CLS] A [SEP] B [SEP]` pre-training examples.

Follows ELECTRA's `build_pretraining_dataset.py` `ExampleBuilder`: lines of a document accumulate
until they reach a target length (`max_seq_length`, or with probability `short_seq_prob` a random
length in [5, max_seq_length] for the next example); an example also ends at a document boundary.
With probability `single_segment_prob` an example is a single segment; otherwise its lines are split
into segments A and B at a random line boundary near the middle (both contiguous: ELECTRA can
move a later short line into A, we do not). There is no next-sentence label.

Two packing modes:
* `electra`: ELECTRA's builder (but for contiguous segments). The line that reaches the target
  joins the example whole and the overflow is truncated, which with paragraph-per-line corpora
  throws away ~20% of the text.
* `fill` (default): the line that would cross the target is cut there (at a word start where
  possible) and its remainder starts the next example, so examples are as full and nothing is
  truncated.
* `sentences`: sentence-level examples (BabyBERTa, Huebner et al. 2021: one sentence per input):
  each line is one sentence (`data/sentences.py` splits paragraphs), and an example is a single
  segment `[CLS] s1 s2 ... [SEP]` of at most `sentences_per_example` whole consecutive sentences
  of one document (0: as many as fit); a sentence longer than an example is cut at word starts
  (and counted: `PackingStats.sentences_cut`).
The number of word pieces dropped is counted either way.
"""
import dataclasses
import random
from typing import List, Optional, Sequence, Tuple

import numpy as np

Segments = Tuple[List[int], List[int]]
PACKING_MODES = ("fill", "electra", "sentences")


@dataclasses.dataclass
class PackingStats:
  tokens_in: int = 0        # word pieces read
  tokens_kept: int = 0      # word pieces written into examples
  examples: int = 0
  sentences: int = 0        # `sentences` mode: sentences read
  sentences_cut: int = 0    # ... of which longer than an example, cut into pieces

  @property
  def tokens_truncated(self) -> int:
    return self.tokens_in - self.tokens_kept


class ExampleBuilder:
  """Accumulates lines of one document stream and emits packed segment pairs."""

  def __init__(self, max_seq_length: int, rng: random.Random, short_seq_prob: float = 0.05,
               single_segment_prob: float = 0.1, mode: str = "fill",
               is_continuation: Optional[np.ndarray] = None, sentences_per_example: int = 1):
    if mode not in PACKING_MODES:
      raise ValueError(f"packing mode must be one of {PACKING_MODES}, got {mode!r}")
    self._max_length = max_seq_length
    self._rng = rng
    self._short_seq_prob = short_seq_prob
    self._single_segment_prob = single_segment_prob
    self._mode = mode
    self._is_continuation = is_continuation
    self._sentences_per_example = sentences_per_example
    self._lines: List[List[int]] = []
    self._length = 0
    self._target_length = max_seq_length
    self.stats = PackingStats()

  def add_line(self, tokens: Sequence[int]) -> List[Segments]:
    """Adds one tokenized line; returns the examples it completed (possibly none)."""
    self.stats.tokens_in += len(tokens)
    tokens = list(tokens)
    examples = []
    if self._mode == "sentences":
      return self._add_sentence(tokens)
    if self._mode == "electra":
      if tokens:
        self._append(tokens)
        if self._length >= self._target_length:
          examples.append(self._create_example())
      return examples
    while tokens:
      room = self._target_length - 3 - self._length  # -3: [CLS] and two [SEP]
      cut = self._cut_point(tokens, room) if len(tokens) > room else len(tokens)
      self._append(tokens[:cut])
      tokens = tokens[cut:]
      if tokens or self._length >= self._target_length - 3:
        examples.append(self._create_example())
    return examples

  def end_document(self) -> List[Segments]:
    """Flushes the pending lines at a document (or chunk) boundary."""
    if not self._lines:
      return []
    return [self._single_segment() if self._mode == "sentences" else self._create_example()]

  def _full(self) -> bool:
    return 0 < self._sentences_per_example <= len(self._lines)

  def _add_sentence(self, tokens: List[int]) -> List[Segments]:
    """`sentences` mode: whole sentences into one segment while they fit (and up to
    `sentences_per_example`); a sentence longer than an example is cut at word starts."""
    room, examples = self._max_length - 2, []  # -2: [CLS] and [SEP]
    if not tokens:
      return examples
    self.stats.sentences += 1
    self.stats.sentences_cut += len(tokens) > room
    if self._lines and self._length + len(tokens) > room:
      examples.append(self._single_segment())
    while len(tokens) > room:
      cut = self._cut_point(tokens, room)
      self._append(tokens[:cut])
      tokens = tokens[cut:]
      examples.append(self._single_segment())
    self._append(tokens)
    if self._full():
      examples.append(self._single_segment())
    return examples

  def _single_segment(self) -> Segments:
    first = [token for line in self._lines for token in line]
    self.stats.tokens_kept += len(first)
    self.stats.examples += 1
    self._lines, self._length = [], 0
    return first, []

  def _append(self, piece: List[int]):
    if piece:
      self._lines.append(piece)
      self._length += len(piece)

  def _cut_point(self, tokens: List[int], room: int) -> int:
    """Largest cut <= room at a word start; `room` itself if no word starts in (0, room]."""
    if self._is_continuation is not None:
      for cut in range(room, 0, -1):
        if not self._is_continuation[tokens[cut]]:
          return cut
    return room

  def _create_example(self) -> Segments:
    if self._rng.random() < self._single_segment_prob:
      first_target = float("inf")  # everything goes to segment A
    else:
      first_target = (self._target_length - 3) // 2  # -3: [CLS] and two [SEP] are added later
    first, second = [], []
    for line in self._lines:
      # A line joins segment A if A is empty, if it fits under A's target, or (coin flip) when it
      # would overflow A while B is still empty. Unlike ELECTRA's builder, once B has started every
      # later line goes to B, so both segments are contiguous text.
      if not second and (not first or len(first) + len(line) < first_target or
                         (len(first) < first_target and self._rng.random() < 0.5)):
        first += line
      else:
        second += line
    first = first[:self._max_length - 2]
    second = second[:max(0, self._max_length - len(first) - 3)]
    self.stats.tokens_kept += len(first) + len(second)
    self.stats.examples += 1

    self._lines, self._length = [], 0
    if self._rng.random() < self._short_seq_prob:
      self._target_length = self._rng.randint(5, self._max_length)
    else:
      self._target_length = self._max_length
    return first, second


def to_features(examples: Sequence[Segments], max_seq_length: int, cls_id: int, sep_id: int,
                pad_id: int) -> dict:
  """Lays segment pairs out as padded `[num_examples, max_seq_length]` int64 arrays:
  `input_word_ids` (`[CLS] A [SEP] B [SEP]`, or `[CLS] A [SEP]`), `input_mask`, `input_type_ids`."""
  n = len(examples)
  ids = np.full([n, max_seq_length], pad_id, dtype=np.int64)
  mask = np.zeros([n, max_seq_length], dtype=np.int64)
  types = np.zeros([n, max_seq_length], dtype=np.int64)
  for row, (first, second) in enumerate(examples):
    tokens = [cls_id, *first, sep_id]
    if second:
      types[row, len(tokens):len(tokens) + len(second) + 1] = 1
      tokens += [*second, sep_id]
    ids[row, :len(tokens)] = tokens
    mask[row, :len(tokens)] = 1
  return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
