"""Pseudo-log-likelihood scoring of text with a pre-training run (`score_pll`).

PLL(x) = Σ_t log p(x_t | x∖t) over the word pieces of x, as each method defines it: Electric
Σ_t −E(x)_t in one pass; ELECTRA-TT log(k·q·D / (n·(1−D))) in one pass; masked LMs (ELECTRA's
generator) exactly, with one forward pass per position, batched. Re-ranking an n-best list uses
score = first-pass score + λ·PLL (dissertation §5.4.5). Runs are rebuilt by
`training.run_dir.load_model`.
"""
import collections
from typing import Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from official_rtd.data import tokenizer as tokenizer_lib


class ScoringError(ValueError):
  """A run or input that cannot be scored."""


def score_sentences(model, tokenizer: tokenizer_lib.WordPieceTokenizer, sentences: Sequence[str],
                    max_seq_length: int = 128, batch_size: int = 16) -> Tuple[np.ndarray, List[int]]:
  """PLL of each sentence (`[CLS] pieces [SEP]`, truncated to `max_seq_length`) and its number of
  scored pieces."""
  vocab = tokenizer.vocab
  pieces = [p[:max_seq_length - 2] for p in tokenizer.tokenize_to_lists(list(sentences))]
  scores = []
  for start in range(0, len(pieces), batch_size):
    chunk = pieces[start:start + batch_size]
    width = max(len(p) for p in chunk) + 2
    ids = np.full([len(chunk), width], vocab.pad_id, np.int32)
    for row, p in enumerate(chunk):
      ids[row, :len(p) + 2] = [vocab.cls_id, *p, vocab.sep_id]
    mask = (ids != vocab.pad_id).astype(np.int32)
    out = model.pseudo_log_likelihood(tf.constant(ids), tf.constant(mask),
                                      tf.zeros_like(tf.constant(ids)), vocab.mask_id)
    if out is None:
      raise ScoringError(f"the {model.name} method cannot score text")
    scores.append(out.numpy())
  return np.concatenate(scores) if scores else np.zeros([0]), [len(p) for p in pieces]


def read_nbest(path: str) -> Dict[str, List[Tuple[str, float]]]:
  """`id<TAB>hypothesis<TAB>score` lines -> {id: [(hypothesis, score)]} in file order."""
  out = collections.OrderedDict()
  with open(path, encoding="utf-8") as f:
    for number, line in enumerate(f, start=1):
      if not line.strip():
        continue
      columns = line.rstrip("\n").split("\t")
      if len(columns) != 3:
        raise ScoringError(f"{path}:{number}: expected id<TAB>hypothesis<TAB>score")
      try:
        score = float(columns[2])
      except ValueError:
        raise ScoringError(f"{path}:{number}: score {columns[2]!r} is not a number") from None
      out.setdefault(columns[0], []).append((columns[1], score))
  if not out:
    raise ScoringError(f"{path} holds no hypotheses")
  return out


def word_errors(hypothesis: str, reference: str) -> Tuple[int, int]:
  """(word-level edit distance, reference length)."""
  h, r = hypothesis.split(), reference.split()
  previous = list(range(len(h) + 1))
  for i, rw in enumerate(r, start=1):
    current = [i] + [0] * len(h)
    for j, hw in enumerate(h, start=1):
      current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (rw != hw))
    previous = current
  return previous[-1], len(r)


def rerank(nbest, plls: Dict[Tuple[str, int], float], lm_weight: float) -> Dict[str, int]:
  """{id: index of the best hypothesis} by first-pass score + λ·PLL."""
  return {key: max(range(len(hyps)), key=lambda i, k=key, h=hyps: h[i][1] + lm_weight * plls[(k, i)])
          for key, hyps in nbest.items()}


# §5.4.5: "I select the best λ on the dev set out of [0.05, 0.1, ..., 0.95, 1.0]".
LM_WEIGHT_GRID = tuple(round(0.05 * i, 2) for i in range(1, 21))


def read_references(path: str, ids) -> Dict[str, str]:
  """`id<TAB>reference` lines; every id of `ids` must have one."""
  references = {}
  with open(path, encoding="utf-8") as f:
    for number, line in enumerate(f, start=1):
      if line.strip():
        key, tab, text = line.rstrip("\n").partition("\t")
        if not tab:
          raise ScoringError(f"{path}:{number}: expected id<TAB>reference")
        references[key] = text
  missing = [k for k in ids if k not in references]
  if missing:
    raise ScoringError(f"{path} has no reference for id(s) {missing[:5]}")
  return references


def corpus_wer(nbest, choice: Dict[str, int], references: Dict[str, str]) -> float:
  """Word error rate (%) of the chosen hypotheses: total edits / total reference words."""
  errors = [word_errors(nbest[k][i][0], references[k]) for k, i in choice.items()]
  return 100.0 * sum(e for e, _ in errors) / max(sum(n for _, n in errors), 1)


def tune_lm_weight(nbest, plls, references, grid: Sequence[float] = LM_WEIGHT_GRID):
  """The λ of `grid` whose re-ranking of the dev `nbest` has the lowest WER (the smallest λ on a
  tie), and {λ: WER} for every λ tried."""
  wers = {weight: corpus_wer(nbest, rerank(nbest, plls, weight), references) for weight in grid}
  best = min(grid, key=lambda weight: (wers[weight], weight))
  return best, wers
