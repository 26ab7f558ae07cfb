"""SQuAD EM/F1 exactly as the official `evaluate-v1.1.py` and `evaluate-v2.0.py` define them.

Answers are normalised (lower case, punctuation and the articles a/an/the removed, whitespace
collapsed); each question scores its best match over the gold answers; a question with no gold
answers is unanswerable and its only gold answer is `""`. All figures are percentages.
"""
import collections
import re
import string
from typing import Dict, Mapping, Optional, Sequence

from official_rtd.finetune.squad.data import SquadExample

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
  text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
  return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
  return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str, version_2: bool = True) -> float:
  """Token-overlap F1; v2.0 scores an empty side as 1 only if both are empty (v1.1: 0)."""
  pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
  if version_2 and (not pred_tokens or not gold_tokens):
    return float(pred_tokens == gold_tokens)
  common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
  overlap = sum(common.values())
  if overlap == 0:
    return 0.0
  precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
  return 2 * precision * recall / (precision + recall)


def _gold(example: SquadExample):
  return [a.text for a in example.answers if normalize_answer(a.text)] or [""]


def raw_scores(examples: Sequence[SquadExample], predictions: Mapping[str, str],
               version_2: bool):
  """Per question (exact, f1) in [0, 1], best over gold answers; missing predictions score 0."""
  exact, f1s = {}, {}
  for example in examples:
    if example.qid not in predictions:
      exact[example.qid] = f1s[example.qid] = 0.0
      continue
    prediction = predictions[example.qid]
    golds = _gold(example) if version_2 else [a.text for a in example.answers]
    exact[example.qid] = max(exact_match(prediction, g) for g in golds)
    f1s[example.qid] = max(f1(prediction, g, version_2) for g in golds)
  return exact, f1s


def _best_threshold(examples, predictions, scores, null_odds):
  """The official `find_best_thresh`: sweep the no-answer threshold over the null odds.

  `examples` maps question id -> example."""
  score = best = sum(1 for e in examples.values() if e.is_impossible)
  threshold = 0.0
  for qid in sorted(null_odds, key=null_odds.get):
    example = examples[qid]
    if not example.is_impossible:
      score += scores[qid]
    else:
      score += -1 if predictions[qid] else 0
    if score > best:
      best, threshold = score, null_odds[qid]
  return 100.0 * best / len(examples), threshold


def evaluate(examples: Sequence[SquadExample], predictions: Mapping[str, str],
             version_2: bool, null_odds: Optional[Mapping[str, float]] = None,
             non_null_predictions: Optional[Mapping[str, str]] = None) -> Dict[str, float]:
  """v1.1: `{exact_match, f1}`. v2.0: `{exact, f1, total, HasAns_*, NoAns_*}`, and with
  `null_odds` (larger = more likely unanswerable) the `best_exact`/`best_f1` figures and their
  thresholds, swept over `non_null_predictions` (the best non-empty answer of every question;
  defaults to `predictions`)."""
  exact, f1s = raw_scores(examples, predictions, version_2)
  if not version_2:
    return {"exact_match": 100.0 * sum(exact.values()) / len(exact),
            "f1": 100.0 * sum(f1s.values()) / len(f1s)}

  def summary(qids, prefix=""):
    return {f"{prefix}exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
            f"{prefix}f1": 100.0 * sum(f1s[q] for q in qids) / len(qids),
            f"{prefix}total": len(qids)}

  out = summary([e.qid for e in examples])
  has_answer = [e.qid for e in examples if not e.is_impossible]
  no_answer = [e.qid for e in examples if e.is_impossible]
  if has_answer:
    out.update(summary(has_answer, "HasAns_"))
  if no_answer:
    out.update(summary(no_answer, "NoAns_"))
  if null_odds is not None:
    swept = non_null_predictions or predictions
    by_qid = {e.qid: e for e in examples}
    sweep_exact, sweep_f1 = raw_scores(examples, swept, version_2)
    out["best_exact"], out["best_exact_thresh"] = _best_threshold(
        by_qid, swept, sweep_exact, {q: null_odds[q] for q in by_qid if q in null_odds})
    out["best_f1"], out["best_f1_thresh"] = _best_threshold(
        by_qid, swept, sweep_f1, {q: null_odds[q] for q in by_qid if q in null_odds})
  return out
