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
* `probe_*`: a logistic-regression probe on frozen mean-pooled encoder features of a small GLUE
  task (train.tsv subset → dev.tsv accuracy);
* `train_flops`: section 5.2.2 FLOPs consumed by training so far.
"""
import dataclasses
import json
import math
import os
from typing import Dict, List, Optional

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import pretrain_dataloader
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.finetune import glue
from official_rtd.finetune import glue_data
from official_rtd.ops import sampling

RESULTS_NAME = "eval_results.jsonl"


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
  probe_task: str = "sst-2"
  probe_data_dir: str = ""  # empty: no probe
  probe_max_train_examples: int = 2000
  probe_max_seq_length: int = 64


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
  """Area under the ROC curve = P(score of a random positive > a random negative), ties 1/2."""
  labels, scores = np.asarray(labels, bool), np.asarray(scores, np.float64)
  n_pos, n_neg = labels.sum(), (~labels).sum()
  if n_pos == 0 or n_neg == 0:
    return float("nan")
  order = np.argsort(scores, kind="mergesort")
  ranks = np.empty(len(scores))
  sorted_scores = scores[order]
  start = 0
  for end in range(1, len(scores) + 1):  # average ranks over ties
    if end == len(scores) or sorted_scores[end] != sorted_scores[start]:
      ranks[order[start:end]] = (start + end + 1) / 2.0
      start = end
  return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def detection_figures(labels: np.ndarray, logits: np.ndarray, prefix: str) -> Dict[str, float]:
  """Accuracy, precision, recall (threshold 0) and AUC of "replaced" over the given positions."""
  labels = np.asarray(labels, bool)
  predicted = np.asarray(logits) > 0
  tp = float((predicted & labels).sum())
  return {f"{prefix}accuracy": float((predicted == labels).mean()),
          f"{prefix}precision": tp / predicted.sum() if predicted.sum() else 0.0,
          f"{prefix}recall": tp / labels.sum() if labels.sum() else 0.0,
          f"{prefix}auc": roc_auc(labels, logits), f"{prefix}replaced_fraction": float(labels.mean())}


class Evaluator:
  """Evaluates a `Trainer`'s model on held-out records (see the module docstring)."""

  def __init__(self, trainer, eval_input: str, config: Optional[EvalConfig] = None):
    self.trainer = trainer
    self.config = config or EvalConfig()
    self.model = trainer.model
    self.vocab = trainer.vocab
    self.input_config = dataclasses.replace(
        trainer.input_config, input_path=eval_input, is_training=False,
        global_batch_size=self.config.eval_batch_size, seed=self.config.seed, skip_batches=0)
    pretrain_dataloader.resolve_records(self.input_config)  # fails early on a bad --eval_input
    self._probe = None

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
    if self.config.probe_data_dir:
      figures.update(self._probe_figures())
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
      # Losses are means over masked / non-pad positions: re-weight them by those counts.
      counts = {"mlm_loss": float(tf.reduce_sum(batch["masked_lm_weights"])),
                "rtd_loss": float(tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32)))}
      rows = float(tf.shape(batch["input_word_ids"])[0])
      for name, value in losses.items():
        weight = counts.get(name, rows)
        sums[name] = sums.get(name, 0.0) + float(value) * weight
        weights[name] = weights.get(name, 0.0) + weight
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
      originals.append(sampling.unmask(batch).numpy() if "masked_lm_ids" in batch
                       else batch["input_word_ids"].numpy())
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
    return detection_figures(np.concatenate(labels), np.concatenate(logits), "fixed_noise_")

  # --- pseudo-log-likelihood swap test -----------------------------------------------------------
  def _pll_swap_accuracy(self) -> Optional[float]:
    """Word order test: PLL(sentence) > PLL(sentence with two adjacent words swapped)?"""
    cfg = self.config
    cont, special = self.vocab.is_continuation(), self.vocab.is_special()
    originals, swapped = [], []
    rng = np.random.default_rng(cfg.seed)
    for batch in self._batches():
      for row in (sampling.unmask(batch).numpy() if "masked_lm_ids" in batch
                  else batch["input_word_ids"].numpy()):
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

  # --- linear probe ------------------------------------------------------------------------------
  def _probe_figures(self) -> Dict[str, float]:
    cfg = self.config
    if self._probe is None:
      task = glue_data.get_task(cfg.probe_task)
      train = glue_data.load_split(cfg.probe_data_dir, task, "train")[0][1]
      rng = np.random.default_rng(cfg.seed)
      keep = sorted(rng.permutation(len(train))[:cfg.probe_max_train_examples])
      dev = glue_data.load_split(cfg.probe_data_dir, task, "dev")[0][1]
      tokenizer = tokenizer_lib.WordPieceTokenizer(self.vocab, self.trainer.do_lower_case)
      self._probe = (task, [train[i] for i in keep], dev, tokenizer)
    task, train, dev, tokenizer = self._probe
    if task.is_regression:
      raise ValueError(f"the linear probe needs a classification task, not {task.name}")
    encoder = self.model.exported_encoder

    def features(examples):
      encoded = glue.encode(examples, tokenizer, cfg.probe_max_seq_length)
      out = []
      for start in range(0, len(examples), 128):
        batch = {k: v[start:start + 128] for k, v in encoded.items()}
        sequence = encoder(batch, training=False)["sequence_output"]
        mask = tf.cast(batch["input_mask"], tf.float32)[..., tf.newaxis]
        out.append((tf.reduce_sum(sequence * mask, 1) / tf.reduce_sum(mask, 1)).numpy())
      return np.concatenate(out)

    x_train, x_dev = features(train), features(dev)
    y_train = np.array(glue_data.labels_of(train), np.int32)
    y_dev = np.array(glue_data.labels_of(dev), np.int32)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    accuracy = logistic_regression_accuracy((x_train - mean) / std, y_train, (x_dev - mean) / std,
                                            y_dev, task.num_classes, seed=cfg.seed)
    return {f"probe_{task.name}_accuracy": accuracy}


def logistic_regression_accuracy(x_train, y_train, x_test, y_test, num_classes: int,
                                 l2: float = 1e-3, steps: int = 300, seed: int = 0) -> float:
  """Full-batch multinomial logistic regression (Adam, L2), then test accuracy."""
  tf.random.set_seed(seed)
  w = tf.Variable(tf.zeros([x_train.shape[1], num_classes]))
  b = tf.Variable(tf.zeros([num_classes]))
  optimizer = tf_keras.optimizers.Adam(0.05)
  x, y = tf.constant(x_train, tf.float32), tf.constant(y_train)

  @tf.function
  def step():
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=y, logits=x @ w + b)) + l2 * tf.reduce_sum(w * w)
    optimizer.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))

  for _ in range(steps):
    step()
  predictions = np.argmax(x_test @ w.numpy() + b.numpy(), axis=1)
  return float(np.mean(predictions == y_test))


def append_result(model_dir: str, row: dict) -> None:
  """Appends one JSON row to `<model_dir>/eval_results.jsonl` (flushed and fsynced)."""
  os.makedirs(model_dir, exist_ok=True)
  with open(os.path.join(model_dir, RESULTS_NAME), "a", encoding="utf-8") as f:
    f.write(json.dumps(row, sort_keys=True) + "\n")
    f.flush()
    os.fsync(f.fileno())


def read_results(model_dir: str) -> List[dict]:
  path = os.path.join(model_dir, RESULTS_NAME)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{model_dir} has no {RESULTS_NAME} (run with --mode=eval or "
                            "--mode=train_and_eval first)")
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]
