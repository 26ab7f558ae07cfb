"""Fine-tuning metrics as the papers report them, computed directly (no scikit-learn/scipy
needed): GLUE's and RACE's (tagging's span scores are `data/tagging_scores.py`)."""
from typing import Dict, Sequence

import numpy as np


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
