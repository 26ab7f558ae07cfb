"""The replaced-token-detection figures both sides of `electra_crosscheck.py` report, in numpy only
(the PyTorch side never imports TensorFlow), so each figure has one definition.

All arrays are `[batch, seq_len]` unless said otherwise; `mask` is 1 at the positions scored (the
non-pad ones).
"""
from typing import Dict

import numpy as np


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
  """The area under the ROC curve of `scores` for `labels` (1 positive, 0 negative): the
  probability that a random positive scores above a random negative, ties counted half (the
  Mann-Whitney U statistic over average ranks). NaN without both classes."""
  labels, scores = np.asarray(labels, bool).ravel(), np.asarray(scores, np.float64).ravel()
  positives, negatives = int(labels.sum()), int((~labels).sum())
  if not positives or not negatives:
    return float("nan")
  order = np.argsort(scores, kind="mergesort")
  ranks = np.empty(len(scores), np.float64)
  sorted_scores = scores[order]
  # Average rank (1-based) of each run of equal scores.
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
  ends = np.r_[starts[1:], len(scores)]
  for start, end in zip(starts, ends):
    ranks[order[start:end]] = 0.5 * (start + end + 1)
  return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def detection_figures(labels: np.ndarray, logits: np.ndarray, mask: np.ndarray) -> Dict[str, float]:
  """`auc`, and the discriminator's accuracy (logit > 0: "replaced") on original and on replaced
  tokens apart, over the positions where `mask` is 1."""
  keep = np.asarray(mask, bool)
  labels, logits = np.asarray(labels)[keep] > 0.5, np.asarray(logits)[keep]
  predicted = logits > 0
  return {"auc": auc(labels, logits),
          "accuracy_original": float(np.mean(~predicted[~labels])) if (~labels).any() else float("nan"),
          "accuracy_replaced": float(np.mean(predicted[labels])) if labels.any() else float("nan")}


def generator_figures(masked_lm_ids, masked_lm_weights, mlm_logits, sampled_ids) -> Dict[str, float]:
  """The generator's MLM accuracy (argmax) and the fraction of masked positions whose sample
  differs from the original, over the real predictions (`[batch, predictions]`; logits
  `[batch, predictions, vocab]`)."""
  weights = np.asarray(masked_lm_weights) > 0
  ids = np.asarray(masked_lm_ids)
  return {"mlm_accuracy": float(np.mean(np.argmax(mlm_logits, -1)[weights] == ids[weights])),
          "replaced_fraction": float(np.mean(np.asarray(sampled_ids)[weights] != ids[weights]))}
