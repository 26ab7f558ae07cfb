"""Pseudo-log-likelihood scoring of text with a pre-training run (`score_pll`).

PLL(x) = Σ_t log p(x_t | x∖t) over the word pieces of x, as each method defines it: Electric
Σ_t −E(x)_t in one pass; ELECTRA-TT log(k·q·D / (n·(1−D))) in one pass; masked LMs (ELECTRA's
generator) exactly, with one forward pass per position, batched. `SentenceScorer` computes these
and PLL-word-l2r and the discriminator's score (`score_pairs`). Re-ranking an n-best list uses
score = first-pass score + λ·PLL (dissertation §5.4.5). Runs are rebuilt by
`runs.load_model`.
"""
import collections
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.utils import textio


class ScoringError(ValueError):
  """A run or input that cannot be scored."""


SCORES = ("pll", "pll_word_l2r", "discriminator")


def _padded_width(length: int, multiple: int = 4) -> int:
  """Rows are padded to a multiple of 4 pieces, so few distinct shapes are traced."""
  return -(-length // multiple) * multiple


class SentenceScorer:
  """`scorer(sentences) -> [n] float64 scores` of one kind (`SCORES`) under a pre-training model.

  Sentences are sorted by length and batched (`batch_size` sentences; a PLL expands each into one
  masked copy per position inside the same forward pass), so short sentences share a batch.
  """

  def __init__(self, model, tokenizer, score: str = "pll", max_seq_length: int = 128,
               batch_size: int = 32):
    if score not in SCORES:
      raise ScoringError(f"score must be one of {SCORES}, got {score!r}")
    if max_seq_length < 3:
      raise ScoringError(f"max_seq_length must be at least 3, got {max_seq_length}")
    if batch_size < 1:
      raise ScoringError(f"batch_size must be positive, got {batch_size}")
    self.model, self.tokenizer, self.score = model, tokenizer, score
    self.max_seq_length, self.batch_size = max_seq_length, batch_size
    self.vocab = tokenizer.vocab
    self._continuation = tf.constant(self.vocab.is_continuation())
    self._score_fn = tf.function(self._score_batch, reduce_retracing=True, autograph=False)
    self._check_method()

  def _check_method(self):
    name = getattr(self.model, "name", "this")
    if self.score == "pll_word_l2r" and self.model.masked_language_model() is None:
      raise ScoringError(f"the {name} method has no masked LM: pll_word_l2r needs one")
    ids = tf.constant([[self.vocab.cls_id, self.vocab.mask_id, self.vocab.sep_id]])
    probe = self._score_batch(ids, tf.ones_like(ids))
    if probe is None:
      raise ScoringError(f"the {name} method has no {self.score} score")

  def _score_batch(self, ids, mask):
    """`[batch]` scores of `[batch, width]` rows (None when the method has no such score)."""
    types = tf.zeros_like(ids)
    if self.score == "pll":
      return self.model.pseudo_log_likelihood(ids, mask, types, self.vocab.mask_id)
    if self.score == "pll_word_l2r":
      encoder, masked_lm = self.model.masked_language_model()
      return objectives.masked_lm_pll(encoder, masked_lm, ids, mask, types, self.vocab.mask_id,
                                      continuation=tf.gather(self._continuation, ids))
    logits = self.model.replaced_token_logits(
        {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    if logits is None:
      return None
    # log(1 − D) = log σ(−logit): the log-probability that the piece is original.
    return base.sum_inner_positions(-tf.nn.softplus(tf.cast(logits, tf.float32)), mask)

  def tokenize(self, sentences: Sequence[str]) -> List[List[int]]:
    """Each sentence's word pieces, cut to `max_seq_length` − 2."""
    return [p[:self.max_seq_length - 2]
            for p in self.tokenizer.tokenize_to_lists(list(sentences))]

  def __call__(self, sentences: Sequence[str],
               progress: Optional[Callable[[int, int], None]] = None) -> np.ndarray:
    return self.score_pieces(self.tokenize(sentences), progress, sentences)

  def score_pieces(self, pieces: Sequence[Sequence[int]],
                   progress: Optional[Callable[[int, int], None]] = None,
                   texts: Optional[Sequence[str]] = None) -> np.ndarray:
    """`[n]` scores of tokenized sentences (`texts` only name a non-finite one)."""
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
    scores = np.zeros([len(pieces)], np.float64)
    done = 0
    for start in range(0, len(order), self.batch_size):
      rows = order[start:start + self.batch_size]
      width = min(_padded_width(max(len(pieces[i]) for i in rows) + 2), self.max_seq_length)
      ids = np.full([len(rows), width], self.vocab.pad_id, np.int32)
      for row, i in enumerate(rows):
        ids[row, :len(pieces[i]) + 2] = [self.vocab.cls_id, *pieces[i], self.vocab.sep_id]
      mask = (ids != self.vocab.pad_id).astype(np.int32)
      scores[rows] = self._score_fn(tf.constant(ids), tf.constant(mask)).numpy()
      done += len(rows)
      if progress is not None:
        progress(done, len(pieces))
    bad = [texts[i] if texts is not None else f"sentence {i + 1}"
           for i in np.flatnonzero(~np.isfinite(scores))[:3]]
    if bad:
      raise ScoringError(f"non-finite {self.score} scores (the checkpoint may hold NaN "
                         f"weights), e.g. for {bad!r}")
    return scores


def score_sentences(model, tokenizer, sentences: Sequence[str], max_seq_length: int = 128,
                    batch_size: int = 16) -> Tuple[np.ndarray, List[int]]:
  """PLL of each sentence (`[CLS] pieces [SEP]`, truncated to `max_seq_length`) and its number of
  scored pieces."""
  scorer = SentenceScorer(model, tokenizer, "pll", max_seq_length, batch_size)
  pieces = scorer.tokenize(sentences)
  return scorer.score_pieces(pieces, texts=sentences), [len(p) for p in pieces]


def read_nbest(path: str) -> Dict[str, List[Tuple[str, float]]]:
  """`id<TAB>hypothesis<TAB>score` lines -> {id: [(hypothesis, score)]} in file order."""
  out = collections.OrderedDict()
  for number, line in textio.numbered_lines(path):
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
  return {key: max(range(len(hyps)),
                  key=lambda i, k=key, h=hyps: h[i][1] + lm_weight * plls[(k, i)])
          for key, hyps in nbest.items()}


# §5.4.5: "I select the best λ on the dev set out of [0.05, 0.1, ..., 0.95, 1.0]".
LM_WEIGHT_GRID = tuple(round(0.05 * i, 2) for i in range(1, 21))


def read_references(path: str, ids) -> Dict[str, str]:
  """`id<TAB>reference` lines; every id of `ids` must have one."""
  references = {}
  for number, line in textio.numbered_lines(path):
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
