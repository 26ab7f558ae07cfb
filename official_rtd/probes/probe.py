"""Linear probes of a frozen encoder: logistic regression on its features, dev accuracy.

* `LinearProbe`: mean-pooled features of a small GLUE classification task (a train.tsv subset →
  dev.tsv accuracy). Held-out pre-training evaluation (`training.evaluation.Evaluator`) runs it at
  every evaluation when `EvalConfig.probe_data_dir` is set.
* `TokenProbe`: a tagging task's words (PTB POS: each word's first word piece, in windows of the
  sentence as `run_tagging` reads them) → dev token accuracy.

With `all_layers` a probe reads every block's output (one encoder pass), fits one classifier per
block and reports the last block's figure under its usual name, the best block's as
`<name>_best_layer` and which block that is as `<name>_best_layer_index` (1: the first).
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import glue_data
from official_rtd.data import tagging_data
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.utils import subsets


def layer_outputs(encoder, batch, all_layers: bool) -> List[tf.Tensor]:
  """The `[batch, seq_len, hidden]` float32 outputs a probe reads: every block's
  (`encoder_outputs`, whose last is `sequence_output`) or the last only."""
  outputs = encoder(batch, training=False)
  layers = outputs["encoder_outputs"] if all_layers else [outputs["sequence_output"]]
  return [tf.cast(x, tf.float32) for x in layers]


def layer_figures(key: str, figures: Sequence[float]) -> Dict[str, float]:
  """`{key: the last layer's}`, and with several layers the best one's (`<key>_best_layer`) and
  its block (`<key>_best_layer_index`, 1: the first block; the first of equals)."""
  out = {key: float(figures[-1])}
  if len(figures) > 1:
    best = int(np.argmax(figures))
    out.update({f"{key}_best_layer": float(figures[best]), f"{key}_best_layer_index": best + 1})
  return out


def standardised_accuracy(x_train, y_train, x_dev, y_dev, num_classes: int, seed: int) -> float:
  """`logistic_regression_accuracy` on features standardised by the training set's statistics."""
  mean, std = x_train.mean(0), x_train.std(0) + 1e-6
  return logistic_regression_accuracy((x_train - mean) / std, y_train, (x_dev - mean) / std,
                                      y_dev, num_classes, seed=seed)


class LinearProbe:
  """`probe(encoder) -> {"probe_<task>_accuracy": dev accuracy}`; the data is read once."""

  def __init__(self, task_name: str, data_dir: str, vocab, do_lower_case: bool,
               max_train_examples: int = 2000, max_seq_length: int = 64, seed: int = 0,
               all_layers: bool = False):
    self.task = glue_data.get_task(task_name)
    if self.task.is_regression:
      raise ValueError(f"the linear probe needs a classification task, not {self.task.name}")
    train = glue_data.load_split(data_dir, self.task, "train")[0][1]
    self.train = subsets.random_subset(train, max_train_examples, seed)
    self.dev = glue_data.load_split(data_dir, self.task, "dev")[0][1]
    self.tokenizer = tokenizer_lib.for_vocab(vocab, do_lower_case)
    self.max_seq_length = max_seq_length
    self.seed, self.all_layers = seed, all_layers

  def features(self, encoder, examples) -> np.ndarray:
    """`[layers, examples, hidden]` mean of each layer's output over the real tokens."""
    encoded = glue_data.encode(examples, self.tokenizer, self.max_seq_length)
    out = []
    for start in range(0, len(examples), 128):
      batch = {k: v[start:start + 128] for k, v in encoded.items()}
      mask = tf.cast(batch["input_mask"], tf.float32)[..., tf.newaxis]
      out.append(np.stack([(tf.reduce_sum(x * mask, 1) / tf.reduce_sum(mask, 1)).numpy()
                           for x in layer_outputs(encoder, batch, self.all_layers)]))
    return np.concatenate(out, axis=1)

  def __call__(self, encoder) -> Dict[str, float]:
    x_train, x_dev = self.features(encoder, self.train), self.features(encoder, self.dev)
    y_train = np.array(glue_data.labels_of(self.train), np.int32)
    y_dev = np.array(glue_data.labels_of(self.dev), np.int32)
    return layer_figures(f"probe_{self.task.name}_accuracy", [
        standardised_accuracy(train, y_train, dev, y_dev, self.task.num_classes, self.seed)
        for train, dev in zip(x_train, x_dev)])


class TokenProbe:
  """`probe(encoder) -> {"probe_<task>_accuracy": dev word accuracy}` of a tagging task (POS):
  logistic regression on the encoder's sequence output at each word's first piece. Dev tags never
  seen in training count as errors. The data is read and encoded once."""

  def __init__(self, task_name: str, data_dir: str, vocab, do_lower_case: bool,
               max_train_sentences: int = 0, max_seq_length: int = 128, seed: int = 0,
               all_layers: bool = False):
    self.task = tagging_data.get_task(task_name)
    train, dev = tagging_data.load_task(self.task, data_dir)
    train = subsets.random_subset(train, max_train_sentences, seed)
    self.labels = sorted({t for s in train for t in s.tags})
    label_ids = {t: i for i, t in enumerate(self.labels)}
    tokenizer = tokenizer_lib.for_vocab(vocab, do_lower_case)
    self.train = tagging_data.encode(train, tokenizer, max_seq_length, label_ids)
    self.dev = tagging_data.encode(dev, tokenizer, max_seq_length, label_ids)
    self.seed, self.all_layers = seed, all_layers

  @staticmethod
  def features(encoder, windows, all_layers: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """(`[layers, words, hidden]` first-piece features of every owned word, `[words]` label
    ids)."""
    features, labels = [], []
    inputs = windows.inputs
    for start in range(0, len(windows), 128):
      batch = {k: inputs[k][start:start + 128]
               for k in ("input_word_ids", "input_mask", "input_type_ids")}
      sequences = np.stack([x.numpy() for x in layer_outputs(encoder, batch, all_layers)])
      for row, length in enumerate(inputs["word_lengths"][start:start + 128]):
        positions = inputs["word_positions"][start + row, :length]
        features.append(sequences[:, row, positions])
        labels.append(windows.word_labels[start + row, :length])
    return np.concatenate(features, axis=1), np.concatenate(labels)

  def __call__(self, encoder) -> Dict[str, float]:
    x_train, y_train = self.features(encoder, self.train, self.all_layers)
    x_dev, y_dev = self.features(encoder, self.dev, self.all_layers)
    return layer_figures(f"probe_{self.task.name}_accuracy", [
        standardised_accuracy(train, y_train, dev, y_dev, len(self.labels), self.seed)
        for train, dev in zip(x_train, x_dev)])


def from_eval_config(config, vocab, do_lower_case: bool) -> Optional[LinearProbe]:
  """The probe an `EvalConfig` asks for (its `probe_*` fields), or None without a data dir."""
  if not config.probe_data_dir:
    return None
  return LinearProbe(config.probe_task, config.probe_data_dir, vocab, do_lower_case,
                     config.probe_max_train_examples, config.probe_max_seq_length, config.seed)


def logistic_regression_accuracy(x_train, y_train, x_test, y_test, num_classes: int,
                                 l2: float = 1e-3, steps: int = 300, seed: int = 0) -> float:
  """Full-batch multinomial logistic regression (Adam, L2), then test accuracy."""
  tf.random.set_seed(seed)
  w = tf.Variable(tf.zeros([x_train.shape[1], num_classes]))
  b = tf.Variable(tf.zeros([num_classes]))
  optimizer = tf_keras.optimizers.Adam(0.05)
  x, y = tf.constant(x_train, tf.float32), tf.constant(y_train)

  @tf.function(autograph=False)
  def step():
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=y, logits=x @ w + b)) + l2 * tf.reduce_sum(w * w)
    optimizer.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))

  for _ in range(steps):
    step()
  predictions = np.argmax(x_test @ w.numpy() + b.numpy(), axis=1)
  return float(np.mean(predictions == y_test))
