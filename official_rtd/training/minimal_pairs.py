"""Minimal-pair scoring (BLiMP, Warstadt et al., 2020): a model gets a pair right when it scores
the grammatical sentence above the ungrammatical one; accuracy per paradigm, per phenomenon and
overall (the macro mean over paradigms, as BLiMP reports).

Sentence scores (each `[CLS] pieces [SEP]`, summed over the pieces, `[CLS]`/`[SEP]` excluded):
  * `pll`: the method's own pseudo-log-likelihood: masked LMs (BERT, ELECTRA's generator) mask
    each piece in turn, Σ_t log p(x_t | x∖t) (Salazar et al., 2020); Electric, ELECTRA-TT and
    SCRIPT their one-pass scores;
  * `pll_word_l2r`: masked LMs only; piece t is predicted with the pieces of its word to its right
    masked too (Kauf & Ivanova, 2023);
  * `discriminator`: Σ_t log(1 − D(x)_t), the detector's log-probability that every piece is
    original (ELECTRA's discriminator and the other methods with a replaced-token detector).
Equal scores are a tie and count ½ (`TIE_RULE`).
"""
import collections
import dataclasses
import glob
import json
import math
import os
import time
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from official_rtd.training import scoring

SCORES = ("pll", "pll_word_l2r", "discriminator")
TIE_RULE = "a pair whose two sentences score equally counts 1/2 (ties are also counted apart)"
REQUIRED_KEYS = ("sentence_good", "sentence_bad", "UID")


@dataclasses.dataclass(frozen=True)
class Pair:
  """One minimal pair and where it was read (`file:line`)."""
  paradigm: str
  phenomenon: str
  pair_id: str
  good: str
  bad: str
  source: str


def pair_files(specs: Sequence[str]) -> List[str]:
  """The `.jsonl` files named by `specs`: files, globs or directories (their `*.jsonl`)."""
  files = []
  for spec in specs:
    if os.path.isdir(spec):
      found = sorted(glob.glob(os.path.join(spec, "*.jsonl")))
      if not found:
        raise scoring.ScoringError(f"{spec} holds no .jsonl files")
    else:
      found = sorted(glob.glob(spec))
      if not found:
        raise scoring.ScoringError(f"{spec}: no such file")
    files += [f for f in found if f not in files]
  return files


def read_pairs(specs: Sequence[str]) -> List[Pair]:
  """Reads BLiMP JSONL: one object per line with `sentence_good`, `sentence_bad`, `UID` (the
  paradigm) and, optionally, `linguistics_term` (the phenomenon; the paradigm when absent) and
  `pairID`. A malformed line raises `ScoringError` naming `file:line`."""
  pairs = []
  for path in pair_files(specs):
    with open(path, "rb") as f:
      for number, raw in enumerate(f, start=1):
        where = f"{path}:{number}"
        try:
          line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
          raise scoring.ScoringError(f"{where}: not UTF-8 ({e.reason})") from None
        if not line.strip():
          continue
        try:
          row = json.loads(line)
        except json.JSONDecodeError as e:
          raise scoring.ScoringError(f"{where}: not a JSON object ({e.msg})") from None
        if not isinstance(row, dict):
          raise scoring.ScoringError(f"{where}: not a JSON object")
        missing = [k for k in REQUIRED_KEYS if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
          raise scoring.ScoringError(f"{where}: missing or empty {', '.join(missing)}")
        pairs.append(Pair(row["UID"], str(row.get("linguistics_term") or row["UID"]),
                          str(row.get("pairID", number - 1)), row["sentence_good"].strip(),
                          row["sentence_bad"].strip(), where))
  if not pairs:
    raise scoring.ScoringError(f"{', '.join(specs)} holds no pairs")
  return pairs


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
      raise scoring.ScoringError(f"score must be one of {SCORES}, got {score!r}")
    if max_seq_length < 3:
      raise scoring.ScoringError(f"max_seq_length must be at least 3, got {max_seq_length}")
    if batch_size < 1:
      raise scoring.ScoringError(f"batch_size must be positive, got {batch_size}")
    self.model, self.tokenizer, self.score = model, tokenizer, score
    self.max_seq_length, self.batch_size = max_seq_length, batch_size
    self.vocab = tokenizer.vocab
    self._continuation = tf.constant(self.vocab.is_continuation())
    self._score_fn = tf.function(self._score_batch, reduce_retracing=True)
    self._check_method()

  def _check_method(self):
    name = getattr(self.model, "name", "this")
    if self.score == "pll_word_l2r" and self.model.masked_language_model() is None:
      raise scoring.ScoringError(f"the {name} method has no masked LM: pll_word_l2r needs one "
                                 "(use --score=pll or --score=discriminator)")
    ids = tf.constant([[self.vocab.cls_id, self.vocab.mask_id, self.vocab.sep_id]])
    probe = self._score_batch(ids, tf.ones_like(ids))
    if probe is None:
      other = "discriminator" if self.score == "pll" else "pll"
      raise scoring.ScoringError(f"the {name} method has no {self.score} score "
                                 f"(try --score={other})")

  def _score_batch(self, ids, mask):
    """`[batch]` scores of `[batch, width]` rows (None when the method has no such score)."""
    types = tf.zeros_like(ids)
    if self.score == "pll":
      return self.model.pseudo_log_likelihood(ids, mask, types, self.vocab.mask_id)
    if self.score == "pll_word_l2r":
      from official_rtd.methods import objectives  # pylint: disable=g-import-not-at-top
      encoder, masked_lm = self.model.masked_language_model()
      return objectives.masked_lm_pll(encoder, masked_lm, ids, mask, types, self.vocab.mask_id,
                                      continuation=tf.gather(self._continuation, ids))
    logits = self.model.replaced_token_logits(
        {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    if logits is None:
      return None
    from official_rtd.methods import base  # pylint: disable=g-import-not-at-top
    # log(1 − D) = log σ(−logit): the log-probability that the piece is original.
    return base.sum_inner_positions(-tf.nn.softplus(tf.cast(logits, tf.float32)), mask)

  def __call__(self, sentences: Sequence[str],
               progress: Optional[Callable[[int, int], None]] = None) -> np.ndarray:
    pieces = [p[:self.max_seq_length - 2] for p in self.tokenizer.tokenize_to_lists(list(sentences))]
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
    bad = [sentences[i] for i in np.flatnonzero(~np.isfinite(scores))[:3]]
    if bad:
      raise scoring.ScoringError(f"non-finite {self.score} scores (the checkpoint may hold NaN "
                                 f"weights), e.g. for {bad!r}")
    return scores


def pair_outcome(good: float, bad: float) -> float:
  """1 if the good sentence scores higher, 0 if lower, ½ on a tie."""
  return 1.0 if good > bad else 0.0 if good < bad else 0.5


def accuracy_report(pairs: Sequence[Pair], good_scores, bad_scores) -> Dict:
  """Accuracies (×100): per paradigm (mean over its pairs), per phenomenon (mean over its
  paradigms), `overall` (mean over paradigms) and `overall_pairs` (mean over pairs), with the
  pair and tie counts."""
  by_paradigm = collections.defaultdict(list)
  phenomenon_of = {}
  for pair, good, bad in zip(pairs, good_scores, bad_scores):
    by_paradigm[pair.paradigm].append(pair_outcome(good, bad))
    phenomenon_of.setdefault(pair.paradigm, pair.phenomenon)
  paradigms = {
      uid: {"accuracy": 100.0 * float(np.mean(outcomes)), "pairs": len(outcomes),
            "ties": sum(o == 0.5 for o in outcomes), "phenomenon": phenomenon_of[uid]}
      for uid, outcomes in sorted(by_paradigm.items())}
  phenomena = collections.defaultdict(list)
  for uid, row in paradigms.items():
    phenomena[row["phenomenon"]].append(row["accuracy"])
  outcomes = [o for values in by_paradigm.values() for o in values]
  return {
      "overall": float(np.mean([row["accuracy"] for row in paradigms.values()])),
      "overall_pairs": 100.0 * float(np.mean(outcomes)),
      "pairs": len(outcomes), "ties": sum(o == 0.5 for o in outcomes), "tie_rule": TIE_RULE,
      "phenomena": {name: {"accuracy": float(np.mean(values)), "paradigms": len(values)}
                    for name, values in sorted(phenomena.items())},
      "paradigms": paradigms}


class Progress:
  """Logs `scored i/n sentences (rate/s), ETA` at most every `every_seconds`, and at the end."""

  def __init__(self, log: Callable[[str], None], what: str = "sentences",
               every_seconds: float = 10.0):
    self.log, self.what, self.every = log, what, every_seconds
    self.start = self.last = time.time()

  def __call__(self, done: int, total: int):
    now = time.time()
    if now - self.last < self.every and done < total:
      return
    self.last = now
    rate = done / max(now - self.start, 1e-9)
    eta = (total - done) / rate if rate > 0 else math.inf
    self.log(f"scored {done}/{total} {self.what} ({rate:.1f}/s), ETA "
             f"{time.strftime('%H:%M:%S', time.gmtime(eta)) if math.isfinite(eta) else '?'}")


def score_pairs(scorer: SentenceScorer, pairs: Sequence[Pair],
                log: Callable[[str], None] = print) -> Dict:
  """Scores both sentences of every pair (each distinct sentence once); returns
  `accuracy_report` plus `scores` (`[pairs, 2]`: good, bad), the score kind and the speed."""
  sentences = sorted({s for pair in pairs for s in (pair.good, pair.bad)})
  index = {s: i for i, s in enumerate(sentences)}
  start = time.time()
  scores = scorer(sentences, Progress(log))
  seconds = time.time() - start
  good = np.array([scores[index[p.good]] for p in pairs])
  bad = np.array([scores[index[p.bad]] for p in pairs])
  report = accuracy_report(pairs, good, bad)
  report.update(score=scorer.score, seconds=seconds, pairs_per_second=len(pairs) / seconds,
                sentences_scored=len(sentences))
  return dict(report, scores=np.stack([good, bad], axis=1))
