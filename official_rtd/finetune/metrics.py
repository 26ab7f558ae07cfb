"""Fine-tuning metrics as the papers report them, computed directly (no scikit-learn/scipy
needed): GLUE's, and span precision/recall/F1 with `conlleval`'s semantics for tagging."""
import collections
from typing import Dict, Sequence

import numpy as np

from official_rtd.data import tag_schemes


def accuracy(labels, predictions) -> float:
  return float(np.mean(np.asarray(labels) == np.asarray(predictions)))


def f1(labels, predictions, positive=1) -> float:
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  tp = np.sum((predictions == positive) & (labels == positive))
  fp = np.sum((predictions == positive) & (labels != positive))
  fn = np.sum((predictions != positive) & (labels == positive))
  return float(2 * tp / (2 * tp + fp + fn)) if tp + fp + fn else 0.0


def matthews_corrcoef(labels, predictions) -> float:
  """Binary MCC = (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)); 0 when undefined."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  tp = float(np.sum((predictions == 1) & (labels == 1)))
  tn = float(np.sum((predictions == 0) & (labels == 0)))
  fp = float(np.sum((predictions == 1) & (labels == 0)))
  fn = float(np.sum((predictions == 0) & (labels == 1)))
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y) -> float:
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  x, y = x - x.mean(), y - y.mean()
  denominator = np.sqrt((x * x).sum() * (y * y).sum())
  return float((x * y).sum() / denominator) if denominator else 0.0


def _rank(values) -> np.ndarray:
  """1-based ranks, ties sharing their average rank (as scipy.stats.rankdata)."""
  values = np.asarray(values, np.float64)
  order = np.argsort(values, kind="mergesort")
  ranks = np.empty(len(values))
  sorted_values = values[order]
  start = 0
  for end in range(1, len(values) + 1):
    if end == len(values) or sorted_values[end] != sorted_values[start]:
      ranks[order[start:end]] = (start + end + 1) / 2.0
      start = end
  return ranks


def spearman(x, y) -> float:
  return pearson(_rank(x), _rank(y))


# The figure each task contributes to the GLUE score (ELECTRA/BERT papers' dev-set convention).
PRIMARY = {"cola": "mcc", "sst-2": "accuracy", "mrpc": "accuracy", "sts-b": "spearman",
           "qqp": "accuracy", "mnli": "accuracy", "qnli": "accuracy", "rte": "accuracy",
           "wnli": "accuracy"}


def task_metrics(task: str, labels: Sequence, predictions: Sequence) -> Dict[str, float]:
  """MCC for CoLA; Pearson and Spearman for STS-B; accuracy otherwise, plus F1 for MRPC/QQP."""
  if task == "sts-b":
    return {"pearson": pearson(labels, predictions), "spearman": spearman(labels, predictions)}
  out = {"accuracy": accuracy(labels, predictions)}
  if task == "cola":
    out["mcc"] = matthews_corrcoef(labels, predictions)
  if task in ("mrpc", "qqp"):
    out["f1"] = f1(labels, predictions)
  return out


def _prf(correct: int, predicted: int, gold: int) -> Dict[str, float]:
  precision = correct / predicted if predicted else 0.0
  recall = correct / gold if gold else 0.0
  f1_value = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return {"precision": precision, "recall": recall, "f1": f1_value,
          "correct": correct, "predicted": predicted, "gold": gold}


def span_metrics(gold_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]
                 ) -> Dict[str, dict]:
  """conlleval's figures over sentences of tags (any scheme `tag_schemes` reads; gold and
  predicted may differ): a span counts when type, start and end all match.

  Returns `{"overall": {precision, recall, f1, correct, predicted, gold}, "per_type": {type:
  the same}}`, precision/recall/F1 as fractions (conlleval prints percentages).
  """
  if len(gold_tags) != len(predicted_tags):
    raise ValueError(f"{len(gold_tags)} gold sentences but {len(predicted_tags)} predicted")
  counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> [correct, predicted, gold]
  for row, (gold, predicted) in enumerate(zip(gold_tags, predicted_tags)):
    if len(gold) != len(predicted):
      raise ValueError(f"sentence {row}: {len(gold)} gold tags but {len(predicted)} predicted")
    gold_spans = set(tag_schemes.spans_of(gold))
    predicted_spans = set(tag_schemes.spans_of(predicted))
    for kind, _, _ in gold_spans:
      counts[kind][2] += 1
    for span in predicted_spans:
      counts[span[0]][1] += 1
      counts[span[0]][0] += span in gold_spans
  totals = [sum(c[i] for c in counts.values()) for i in range(3)]
  return {"overall": _prf(*totals),
          "per_type": {kind: _prf(*counts[kind]) for kind in sorted(counts)}}
