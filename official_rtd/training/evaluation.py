"""Held-out evaluation of a pre-training run: the method's own figures and method-agnostic ones.

Deterministic by construction: the held-out records are read in order (static masks written with a
fixed seed, or dynamic masks from a fixed seed), dropout is off, and the generator's samples use
stateless noise seeded by the batch index, so the same checkpoint always gets the same figures.

Figures (prefix `eval/` in TensorBoard, one JSON row per evaluation in `eval_results.jsonl`):
* the method's own losses and metrics on the held-out set (ELECTRA: MLM loss/accuracy/perplexity;
  discriminator loss, accuracy, precision, recall, AUC, fraction replaced);
* `fixed_noise_*`: replaced-token detection of a fixed corruption (15% of the non-special tokens
  replaced by draws from the held-out set's own unigram distribution, fixed seed), scored by the
  method's detector (`replaced_token_logits`), so methods are compared on the same noise;
* `pll_swap_accuracy`: how often the model's pseudo-log-likelihood prefers a held-out sentence to
  the same sentence with two adjacent words swapped (models that can score text);
* `probe_*`: whatever the `probe` given to the evaluator reports on the frozen exported encoder
  (`finetune.probe.LinearProbe`: logistic regression on mean-pooled features of a small GLUE task,
  train.tsv subset → dev.tsv accuracy; built from `EvalConfig.probe_*` by `run_pretraining`);
* `train_flops`: section 5.2.2 FLOPs consumed by training so far.
"""
import dataclasses
import math
from typing import Callable, Dict, Optional

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import pretrain_dataloader
from official_rtd.ops import sampling
from official_rtd.utils import detection


@gin.configurable
@dataclasses.dataclass(frozen=True)
class EvalConfig:
  """`eval_every_steps` applies to `--mode=train_and_eval`; `max_eval_batches=0`: the whole set."""
  eval_every_steps: int = 1000
  eval_batch_size: int = 64
  max_eval_batches: int = 0
  seed: int = 1234
  fixed_noise_prob: float = 0.15
  pll_sentences: int = 64
  pll_max_tokens: int = 24
  # The linear probe `run_pretraining` gives the evaluator (finetune.probe.LinearProbe).
  probe_task: str = "sst-2"
  probe_data_dir: str = ""  # empty: no probe
  probe_max_train_examples: int = 2000
  probe_max_seq_length: int = 64


class Evaluator:
  """Evaluates a pre-training model on held-out records (see the module docstring).

  Args:
    model: the run's `PretrainingModel`.
    vocab: its `Vocab`.
    input_config: the run's training input configuration (the held-out records are read alike).
    eval_input: held-out records directories.
    config: an `EvalConfig`.
    probe: optional callable `exported encoder -> {figure: value}` run at every evaluation.
  """

  def __init__(self, model, vocab, input_config, eval_input: str,
               config: Optional[EvalConfig] = None,
               probe: Optional[Callable[[tf_keras.layers.Layer], Dict[str, float]]] = None):
    self.config = config or EvalConfig()
    self.model, self.vocab = model, vocab
    self.probe = probe
    self.input_config = dataclasses.replace(
        input_config, input_path=eval_input, is_training=False,
        global_batch_size=self.config.eval_batch_size, seed=self.config.seed, skip_batches=0)
    pretrain_dataloader.resolve_records(self.input_config)  # fails early on a bad --eval_input

  def _batches(self):
    dataset = pretrain_dataloader.load_pretraining_dataset(self.input_config)
    if self.config.max_eval_batches:
      dataset = dataset.take(self.config.max_eval_batches)
    return dataset

  def evaluate(self) -> Dict[str, float]:
    figures = self._method_figures()
    figures.update(self._fixed_noise_figures())
    pll = self._pll_swap_accuracy()
    if pll is not None:
      figures["pll_swap_accuracy"] = pll
    if self.probe is not None:
      figures.update(self.probe(self.model.exported_encoder))
    return figures

  # --- the method's own figures ------------------------------------------------------------------
  def _method_figures(self) -> Dict[str, float]:
    metrics = self.model.build_metrics()
    sums: Dict[str, float] = {}
    weights: Dict[str, float] = {}
    for index, batch in enumerate(self._batches()):
      batch = dict(batch, sampling_seed=tf.constant([self.config.seed, index], tf.int64))
      outputs = self.model(batch, training=False)
      losses = self.model.compute_losses(batch, outputs)
      self.model.update_metrics(metrics, batch, outputs, {})
      # Each loss is a mean over its own count (masked positions, tokens, rows): re-weight.
      for name, loss in losses.items():
        sums[name] = sums.get(name, 0.0) + float(loss.value) * float(loss.weight)
        weights[name] = weights.get(name, 0.0) + float(loss.weight)
    figures = {name: sums[name] / max(weights[name], 1e-9) for name in sums}
    for name, metric in metrics.items():
      if name not in figures:
        figures[name] = float(metric.result())
    if "mlm_loss" in figures:
      figures["mlm_perplexity"] = math.exp(min(figures["mlm_loss"], 50.0))
    return figures

  # --- fixed-noise replaced-token detection ------------------------------------------------------
  def _fixed_noise_figures(self) -> Dict[str, float]:
    originals, masks, types = [], [], []
    for batch in self._batches():  # one pass over the held-out set
      originals.append(sampling.original_ids(batch).numpy())
      masks.append(batch["input_mask"].numpy())
      types.append(batch["input_type_ids"].numpy())
    special = self.vocab.is_special()
    counts = np.bincount(np.concatenate([o[~special[o]] for o in originals]),
                         minlength=self.vocab.size).astype(np.float64)
    unigram = counts / counts.sum()
    rng = np.random.default_rng(self.config.seed)
    labels, logits = [], []
    for ids, mask, type_ids in zip(originals, masks, types):
      candidates = ~special[ids]
      replace = candidates & (rng.random(ids.shape) < self.config.fixed_noise_prob)
      noisy = np.where(replace, rng.choice(self.vocab.size, size=ids.shape, p=unigram), ids)
      scores = self.model.replaced_token_logits(
          {"input_word_ids": tf.constant(noisy, tf.int32), "input_mask": tf.constant(mask),
           "input_type_ids": tf.constant(type_ids)})
      if scores is None:
        return {}
      labels.append((noisy != ids)[candidates])
      logits.append(scores.numpy()[candidates])
    return detection.detection_figures(np.concatenate(labels), np.concatenate(logits),
                                       "fixed_noise_")

  # --- pseudo-log-likelihood swap test -----------------------------------------------------------
  def _pll_swap_accuracy(self) -> Optional[float]:
    """Word order test: PLL(sentence) > PLL(sentence with two adjacent words swapped)?"""
    cfg = self.config
    cont, special = self.vocab.is_continuation(), self.vocab.is_special()
    originals, swapped = [], []
    rng = np.random.default_rng(cfg.seed)
    for batch in self._batches():
      for row in sampling.original_ids(batch).numpy():
        pieces = [t for t in row[1:] if not special[t]][:cfg.pll_max_tokens]
        while pieces and cont[pieces[-1]]:
          pieces.pop()  # end at a word boundary
        words = []
        for t in pieces:
          if cont[t] and words:
            words[-1].append(int(t))
          else:
            words.append([int(t)])
        if len(words) < 4:
          continue
        i = int(rng.integers(0, len(words) - 1))
        if words[i] == words[i + 1]:
          continue
        other = words[:i] + [words[i + 1], words[i]] + words[i + 2:]
        originals.append(sum(words, []))
        swapped.append(sum(other, []))
        if len(originals) >= cfg.pll_sentences:
          break
      if len(originals) >= cfg.pll_sentences:
        break
    if not originals:
      return None
    scores = []
    for sentences in (originals, swapped):
      seq_len = max(len(s) for s in sentences) + 2
      ids = np.full([len(sentences), seq_len], self.vocab.pad_id, np.int32)
      for r, s in enumerate(sentences):
        ids[r, :len(s) + 2] = [self.vocab.cls_id, *s, self.vocab.sep_id]
      mask = (ids != self.vocab.pad_id).astype(np.int32)
      pll = []
      for start in range(0, len(sentences), 8):
        out = self.model.pseudo_log_likelihood(
            tf.constant(ids[start:start + 8]), tf.constant(mask[start:start + 8]),
            tf.zeros_like(tf.constant(ids[start:start + 8])), self.vocab.mask_id)
        if out is None:
          return None
        pll.append(out.numpy())
      scores.append(np.concatenate(pll))
    return float(np.mean(scores[0] > scores[1]))
