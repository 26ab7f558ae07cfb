"""Figures of a detector's scores against binary labels (replaced-token detection and its kin),
in numpy only: the evaluator and the benchmarks' PyTorch side (which never imports TensorFlow)
compute them alike."""
from typing import Dict

import numpy as np


def roc_auc(labels, scores) -> float:
  """Area under the ROC curve = P(score of a random positive > a random negative), ties 1/2."""
  labels, scores = np.asarray(labels, bool).ravel(), np.asarray(scores, np.float64).ravel()
  n_pos, n_neg = labels.sum(), (~labels).sum()
  if n_pos == 0 or n_neg == 0:
    return float("nan")
  order = np.argsort(scores, kind="mergesort")
  ranks = np.empty(len(scores))
  sorted_scores = scores[order]
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]  # runs of equal scores
  ends = np.r_[starts[1:], len(scores)]
  for start, end in zip(starts, ends):
    ranks[order[start:end]] = (start + end + 1) / 2.0  # their average 1-based rank
  return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def detection_figures(labels, logits, prefix: str = "") -> Dict[str, float]:
  """Accuracy, precision, recall (threshold 0: logit > 0 is "replaced"), AUC, the accuracy on
  the negatives ("original") and on the positives ("replaced") apart, and the positives'
  fraction, over the given positions."""
  labels = np.asarray(labels, bool).ravel()
  predicted = np.asarray(logits).ravel() > 0
  tp = float((predicted & labels).sum())
  return {f"{prefix}accuracy": float((predicted == labels).mean()),
          f"{prefix}precision": tp / predicted.sum() if predicted.sum() else 0.0,
          f"{prefix}recall": tp / labels.sum() if labels.sum() else 0.0,
          f"{prefix}auc": roc_auc(labels, logits),
          f"{prefix}accuracy_original": (float((~predicted[~labels]).mean()) if (~labels).any()
                                         else float("nan")),
          f"{prefix}accuracy_replaced": (float(predicted[labels].mean()) if labels.any()
                                         else float("nan")),
          f"{prefix}replaced_fraction": float(labels.mean())}
