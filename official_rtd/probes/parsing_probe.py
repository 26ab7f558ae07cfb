"""A frozen-feature dependency parsing probe: which word is the head of which, from an encoder's
vectors alone.

Each sentence of a CoNLL-U treebank is encoded whole (`parsing_data.EncodedTreebank`: sentences
longer than the window are left out and counted); a word's vector is the encoder's sequence
output at its first piece, ROOT's is the `[CLS]` output. The probe is a low-rank bilinear head
selector trained on these frozen, standardised vectors (the encoder never changes):

  s(h, d) = (A x_h)ᵀ (B x_d) + uᵀ x_h,   p(head of d = h) = softmax_h s(h, d)

(A, B: `[hidden, rank]`; the head term u a word's prior of being a head), cross-entropy over each
word's candidate heads, Adam; dev UAS with each word's highest-scoring head (`ops.mst.argmax_heads`
semantics: never itself), punctuation included (CoNLL 2018). The probe's rank and steps are ours.
"""
from typing import Dict

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import conllu
from official_rtd.data import parsing_data
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.probes import probe
from official_rtd.utils import subsets


class ParsingProbe:
  """`probe(encoder) -> {"probe_ud_uas": dev UAS}` on a UD treebank folder (`*-ud-train.conllu`,
  `*-ud-dev.conllu`); the data is read and tokenised once."""

  def __init__(self, data_dir: str, vocab, do_lower_case: bool, max_train_sentences: int = 2000,
               max_seq_length: int = 128, seed: int = 0, rank: int = 128, steps: int = 400,
               batch_sentences: int = 64, all_layers: bool = False):
    train_path, dev_path = (parsing_data.treebank_file(data_dir, split)
                            for split in ("train", "dev"))
    train = conllu.read_conllu(train_path)
    train = subsets.random_subset(train, max_train_sentences, seed)
    tokenizer = tokenizer_lib.for_vocab(vocab, do_lower_case)
    self.train = parsing_data.EncodedTreebank(train, tokenizer, max_seq_length)
    self.dev = parsing_data.EncodedTreebank(conllu.read_conllu(dev_path), tokenizer,
                                            max_seq_length)
    self.seed, self.rank, self.steps, self.batch = seed, rank, steps, batch_sentences
    self.all_layers = all_layers

  def __call__(self, encoder) -> Dict[str, float]:
    layers_train = treebank_features(self.train, encoder, self.all_layers)
    layers_dev = treebank_features(self.dev, encoder, self.all_layers)
    return dict(probe.layer_figures("probe_ud_uas", [
        self.uas(x_train, x_dev) for x_train, x_dev in zip(layers_train, layers_dev)]),
                probe_ud_skipped_sentences=float(self.dev.skipped))

  def uas(self, x_train: np.ndarray, x_dev: np.ndarray) -> float:
    """Dev UAS of a head selector trained on one layer's vectors (`[S, N, hidden]` each)."""
    real = np.arange(x_train.shape[1])[None, :] < self.train.nodes[:, None]
    mean, std = x_train[real].mean(0), x_train[real].std(0) + 1e-6
    standardise = lambda x, nodes: ((x - mean) / std) * (
        np.arange(x.shape[1])[None, :] < nodes[:, None])[..., None]
    x_train = standardise(x_train, self.train.nodes)
    x_dev = standardise(x_dev, self.dev.nodes)
    weights = train_head_selector(x_train, self.train.heads, self.train.nodes, self.rank,
                                  self.steps, self.batch, self.seed)
    predicted = predict_heads(weights, x_dev, self.dev.nodes)
    gold = self.dev.heads[:, 1:]
    scored = gold >= 0
    return float((predicted[:, 1:] == gold)[scored].mean())


def treebank_features(treebank: parsing_data.EncodedTreebank, encoder, all_layers: bool,
                      batch_size: int = 64) -> np.ndarray:
  """`[layers, S, N, hidden]` vectors of ROOT (`[CLS]`) and each word's first piece (0 past the
  end), of every block with `all_layers`, else of the last."""
  out = []
  for start in range(0, len(treebank), batch_size):
    window = slice(start, start + batch_size)
    inputs = {"input_word_ids": treebank.input_word_ids[window],
              "input_mask": treebank.input_mask[window],
              "input_type_ids": np.zeros_like(treebank.input_word_ids[window])}
    positions = treebank.positions[window][None, ..., None]
    sequences = np.stack([x.numpy() for x in probe.layer_outputs(encoder, inputs, all_layers)])
    out.append(np.take_along_axis(sequences, positions, axis=2))
  features = np.concatenate(out, axis=1)
  real = np.arange(features.shape[2])[None, :] < treebank.nodes[:, None]
  return features * real[None, ..., None]


def arc_scores(weights, x: tf.Tensor) -> tf.Tensor:
  """`[S, N, N]` scores s[b, h, d] of `x` (`[S, N, hidden]`)."""
  a, b, u = weights
  heads, dependents = x @ a, x @ b
  return tf.einsum("shr,sdr->shd", heads, dependents) + x @ u  # [S, N, 1]: per head h


def train_head_selector(x: np.ndarray, heads: np.ndarray, nodes: np.ndarray, rank: int,
                        steps: int, batch: int, seed: int):
  """Adam on the mean cross-entropy of each word's gold head; returns (A, B, u) as numpy."""
  rng = np.random.default_rng(seed)
  hidden = x.shape[-1]
  init = tf_keras.initializers.GlorotUniform(seed=seed)
  weights = [tf.Variable(init([hidden, rank])), tf.Variable(init([hidden, rank])),
             tf.Variable(tf.zeros([hidden, 1]))]
  optimizer = tf_keras.optimizers.Adam(1e-3)

  @tf.function(autograph=False)
  def step(xb, hb, allowed):
    with tf.GradientTape() as tape:
      scores = tf.transpose(arc_scores(weights, xb), [0, 2, 1])  # [S, dependent, head]
      scores = tf.where(tf.transpose(allowed, [0, 2, 1]), scores, -1e9)
      words = hb >= 0
      loss = tf.reduce_mean(tf.boolean_mask(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.maximum(hb, 0), logits=scores), words))
    optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights))
    return loss

  allowed = parsing_data.candidates(nodes, x.shape[1])
  for _ in range(steps):
    pick = rng.choice(len(x), size=min(batch, len(x)), replace=False)
    step(tf.constant(x[pick], tf.float32), tf.constant(heads[pick]), tf.constant(allowed[pick]))
  return [w.numpy() for w in weights]


def predict_heads(weights, x: np.ndarray, nodes: np.ndarray) -> np.ndarray:
  """`[S, N]` each word's highest-scoring allowed head (-1 at ROOT and padding)."""
  out = []
  for start in range(0, len(x), 256):
    xb = x[start:start + 256]
    scores = arc_scores([tf.constant(w) for w in weights], tf.constant(xb, tf.float32)).numpy()
    allowed = parsing_data.candidates(nodes[start:start + 256], x.shape[1])
    scores = np.where(allowed, scores, -np.inf)
    best = scores.argmax(axis=1)  # over heads
    best[~allowed.any(axis=1)] = -1
    out.append(best)
  return np.concatenate(out)
