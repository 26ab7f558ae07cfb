"""The replaced-token-detection figures both sides of `electra_crosscheck.py` report, in numpy
only (the PyTorch side never imports TensorFlow), so each figure has one definition: the
discriminator's are the library's own (`official_rtd.utils.detection`, TensorFlow-free), the
generator's are here.

All arrays are `[batch, seq_len]` unless said otherwise; `mask` is 1 at the positions scored (the
non-pad ones).
"""
from typing import Dict

import numpy as np

from official_rtd.utils import detection

auc = detection.roc_auc


def detection_figures(labels: np.ndarray, logits: np.ndarray, mask: np.ndarray) -> Dict[str, float]:
  """`auc`, and the discriminator's accuracy (logit > 0: "replaced") on original and on replaced
  tokens apart, over the positions where `mask` is 1."""
  keep = np.asarray(mask, bool)
  figures = detection.detection_figures(np.asarray(labels)[keep] > 0.5, np.asarray(logits)[keep])
  return {k: figures[k] for k in ("auc", "accuracy_original", "accuracy_replaced")}


HELDOUT_KEYS = ("labels", "logits", "mask", "mlm_ids", "mlm_weights", "mlm_logits", "sampled",
                "noise_logits")


def heldout_figures(batches, noise_labels: np.ndarray) -> Dict[str, float]:
  """The held-out figures of both sides from each batch's arrays (`HELDOUT_KEYS`: RTD labels,
  logits and mask with the run's own generator, its MLM ids, weights, logits and samples, and the
  discriminator's logits on the fixed noise, whose labels are `noise_labels`)."""
  cat = {k: np.concatenate([np.asarray(b[k]) for b in batches]) for k in HELDOUT_KEYS}
  figures = {f"heldout_rtd_{k}": v for k, v in detection_figures(
      cat["labels"], cat["logits"], cat["mask"]).items()}
  figures.update({f"heldout_{k}": v for k, v in generator_figures(
      cat["mlm_ids"], cat["mlm_weights"], cat["mlm_logits"], cat["sampled"]).items()})
  real = cat["mask"] > 0
  figures["heldout_fixed_noise_auc"] = auc(
      noise_labels.reshape(cat["noise_logits"].shape)[real], cat["noise_logits"][real])
  return figures


def generator_figures(masked_lm_ids, masked_lm_weights, mlm_logits, sampled_ids) -> Dict[str, float]:
  """The generator's MLM accuracy (argmax) and the fraction of masked positions whose sample
  differs from the original, over the real predictions (`[batch, predictions]`; logits
  `[batch, predictions, vocab]`)."""
  weights = np.asarray(masked_lm_weights) > 0
  ids = np.asarray(masked_lm_ids)
  return {"mlm_accuracy": float(np.mean(np.argmax(mlm_logits, -1)[weights] == ids[weights])),
          "replaced_fraction": float(np.mean(np.asarray(sampled_ids)[weights] != ids[weights]))}
