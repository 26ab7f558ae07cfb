"""Dependency treebanks encoded for an encoder: each sentence whole, `[CLS] pieces [SEP]`, a word
read at its first piece and ROOT at `[CLS]` (the parsing probe and the `run_parsing` task)."""
import glob
import os
from typing import Dict, Optional, Sequence

import numpy as np

from official_rtd.data import conllu


def treebank_file(data_dir: str, split: str) -> str:
  """The one `*-ud-<split>.conllu` file of a UD treebank folder."""
  found = sorted(glob.glob(os.path.join(data_dir, f"*-ud-{split}.conllu")))
  if len(found) != 1:
    raise FileNotFoundError(f"{data_dir}: expected one *-ud-{split}.conllu file, found "
                            f"{len(found)}")
  return found[0]


class EncodedTreebank:
  """The sentences that fit `max_seq_length`, as arrays:

  * `input_word_ids`, `input_mask` `[S, L]`;
  * `positions` `[S, N]`: node 0 (ROOT) at 0 (`[CLS]`), word i at its first piece (0 past the end);
  * `heads` `[S, N]` gold heads (-1 at ROOT and past the end); `relations` `[S, N]` relation ids
    (`relation_ids`; -1 where unknown or past the end);
  * `nodes` `[S]`: ROOT + words; `kept`: the index of each encoded sentence in `sentences`;
    `skipped`: how many did not fit.
  """

  def __init__(self, sentences: Sequence[conllu.Sentence], tokenizer, max_seq_length: int,
               relation_ids: Optional[Dict[str, int]] = None):
    vocab = tokenizer.vocab
    relation_ids = relation_ids or {}
    flat = [w for s in sentences for w in s.words]
    pieces = [p or [vocab.unk_id] for p in tokenizer.tokenize_to_lists(flat)]
    ids, positions, heads, relations, self.kept, cursor = [], [], [], [], [], 0
    for index, sentence in enumerate(sentences):
      word_pieces = pieces[cursor:cursor + len(sentence)]
      cursor += len(sentence)
      if sum(map(len, word_pieces)) + 2 > max_seq_length:
        continue
      row, first = [vocab.cls_id], [0]
      for p in word_pieces:
        first.append(len(row))
        row.extend(p)
      row.append(vocab.sep_id)
      ids.append(row)
      positions.append(first)
      heads.append([-1] + list(sentence.heads))
      relations.append([-1] + [relation_ids.get(r, -1) for r in sentence.relations])
      self.kept.append(index)
    self.skipped = len(sentences) - len(self.kept)
    if not ids:
      raise ValueError(f"no sentence fits in {max_seq_length} pieces")
    width, nodes = max(map(len, ids)), max(map(len, positions))
    count = len(ids)
    self.input_word_ids = np.full([count, width], vocab.pad_id, np.int32)
    self.input_mask = np.zeros([count, width], np.int32)
    self.positions = np.zeros([count, nodes], np.int32)
    self.heads = np.full([count, nodes], -1, np.int32)
    self.relations = np.full([count, nodes], -1, np.int32)
    for i, (row, first, head, relation) in enumerate(zip(ids, positions, heads, relations)):
      self.input_word_ids[i, :len(row)] = row
      self.input_mask[i, :len(row)] = 1
      self.positions[i, :len(first)] = first
      self.heads[i, :len(head)] = head
      self.relations[i, :len(relation)] = relation
    self.nodes = np.array([len(p) for p in positions], np.int32)

  def __len__(self):
    return len(self.input_word_ids)

  def inputs(self) -> Dict[str, np.ndarray]:
    """The encoder's inputs and `word_positions`."""
    return {"input_word_ids": self.input_word_ids, "input_mask": self.input_mask,
            "input_type_ids": np.zeros_like(self.input_word_ids),
            "word_positions": self.positions}


def candidates(nodes: np.ndarray, size: int) -> np.ndarray:
  """`[S, N, N]` bool: h is a possible head of d (both real nodes, h != d, d not ROOT)."""
  real = np.arange(size)[None, :] < nodes[:, None]
  allowed = real[:, :, None] & real[:, None, :] & ~np.eye(size, dtype=bool)[None]
  allowed[:, :, 0] = False
  return allowed
