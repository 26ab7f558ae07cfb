"""Minimal-pair scoring (BLiMP, Warstadt et al., 2020): a model gets a pair right when it scores
the grammatical sentence above the ungrammatical one; accuracy per paradigm, per phenomenon and
overall (the macro mean over paradigms, as BLiMP reports).

Sentence scores (`scoring.SentenceScorer`; each `[CLS] pieces [SEP]`, summed over the pieces,
`[CLS]`/`[SEP]` excluded):
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
import os
import time
from typing import Callable, Dict, List, Sequence

import numpy as np

from official_rtd.training import scoring
from official_rtd.utils import progress

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
        missing = [k for k in REQUIRED_KEYS
                   if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
          raise scoring.ScoringError(f"{where}: missing or empty {', '.join(missing)}")
        pairs.append(Pair(row["UID"], str(row.get("linguistics_term") or row["UID"]),
                          str(row.get("pairID", number - 1)), row["sentence_good"].strip(),
                          row["sentence_bad"].strip(), where))
  if not pairs:
    raise scoring.ScoringError(f"{', '.join(specs)} holds no pairs")
  return pairs


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
    self.log, self.what = log, what
    self.throttle = progress.Throttle(0, every_seconds)

  def __call__(self, done: int, total: int):
    self.throttle.total = total
    if self.throttle.due(force=done >= total):
      self.log(f"scored {done}/{total} {self.what} ({self.throttle.rate(done):.1f}/s), ETA "
               f"{self.throttle.eta(done)}")


def score_pairs(scorer: scoring.SentenceScorer, pairs: Sequence[Pair],
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
