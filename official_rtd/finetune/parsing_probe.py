"""A frozen-feature dependency parsing probe: which word is the head of which, from an encoder's
vectors alone.

Each sentence of a CoNLL-U treebank is encoded whole (`[CLS] pieces [SEP]`; sentences longer than
the window are left out and counted); a word's vector is the encoder's sequence output at its first
piece, ROOT's is the `[CLS]` output. The probe is a low-rank bilinear head selector trained on
these frozen, standardised vectors (the encoder never changes):

  s(h, d) = (A x_h)ᵀ (B x_d) + uᵀ x_h,   p(head of d = h) = softmax_h s(h, d)

(A, B: `[hidden, rank]`; the head term u a word's prior of being a head), cross-entropy over each
word's candidate heads, Adam; dev UAS with each word's highest-scoring head (`ops.mst.argmax_heads`
semantics: never itself), punctuation included (CoNLL 2018). The probe's rank and steps are ours.
"""
import glob
import os
from typing import Dict, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.finetune import conllu


class EncodedTreebank:
  """Sentences that fit `max_seq_length`: `[S, L]` ids, `[S, N]` first-piece positions (0 for
  ROOT, then each word's), `[S, N]` gold heads (-1: no word) and the number left out."""

  def __init__(self, sentences: Sequence[conllu.Sentence], tokenizer, max_seq_length: int):
    vocab = tokenizer.vocab
    flat = [w for s in sentences for w in s.words]
    pieces = [p or [vocab.unk_id] for p in tokenizer.tokenize_to_lists(flat)]
    ids, positions, heads, cursor, self.skipped = [], [], [], 0, 0
    for sentence in sentences:
      word_pieces = pieces[cursor:cursor + len(sentence)]
      cursor += len(sentence)
      if sum(map(len, word_pieces)) + 2 > max_seq_length:
        self.skipped += 1
        continue
      row, first = [vocab.cls_id], [0]
      for p in word_pieces:
        first.append(len(row))
        row.extend(p)
      row.append(vocab.sep_id)
      ids.append(row)
      positions.append(first)
      heads.append([-1] + list(sentence.heads))
    width = max(map(len, ids))
    words = max(map(len, positions))
    self.input_word_ids = np.full([len(ids), width], vocab.pad_id, np.int32)
    self.input_mask = np.zeros([len(ids), width], np.int32)
    self.positions = np.zeros([len(ids), words], np.int32)
    self.heads = np.full([len(ids), words], -1, np.int32)
    for i, (row, first, head) in enumerate(zip(ids, positions, heads)):
      self.input_word_ids[i, :len(row)] = row
      self.input_mask[i, :len(row)] = 1
      self.positions[i, :len(first)] = first
      self.heads[i, :len(head)] = head
    self.nodes = np.array([len(p) for p in positions], np.int32)  # ROOT + words

  def __len__(self):
    return len(self.input_word_ids)

  def features(self, encoder, batch_size: int = 64) -> np.ndarray:
    """`[S, N, hidden]` vectors of ROOT ([CLS]) and each word's first piece (0 past the end)."""
    out = []
    for start in range(0, len(self), batch_size):
      window = slice(start, start + batch_size)
      inputs = {"input_word_ids": self.input_word_ids[window],
                "input_mask": self.input_mask[window],
                "input_type_ids": np.zeros_like(self.input_word_ids[window])}
      sequence = tf.cast(encoder(inputs, training=False)["sequence_output"], tf.float32).numpy()
      out.append(np.take_along_axis(sequence, self.positions[window][..., None], axis=1))
    features = np.concatenate(out)
    real = np.arange(features.shape[1])[None, :] < self.nodes[:, None]
    return features * real[..., None]


class ParsingProbe:
  """`probe(encoder) -> {"probe_ud_uas": dev UAS}` on a UD treebank folder (`*-ud-train.conllu`,
  `*-ud-dev.conllu`); the data is read and tokenised once."""

  def __init__(self, data_dir: str, vocab, do_lower_case: bool, max_train_sentences: int = 2000,
               max_seq_length: int = 128, seed: int = 0, rank: int = 128, steps: int = 400,
               batch_sentences: int = 64):
    train_path, dev_path = (treebank_file(data_dir, split) for split in ("train", "dev"))
    train = conllu.read_conllu(train_path)
    if max_train_sentences:
      keep = np.random.default_rng(seed).permutation(len(train))[:max_train_sentences]
      train = [train[i] for i in sorted(keep)]
    tokenizer = tokenizer_lib.for_vocab(vocab, do_lower_case)
    self.train = EncodedTreebank(train, tokenizer, max_seq_length)
    self.dev = EncodedTreebank(conllu.read_conllu(dev_path), tokenizer, max_seq_length)
    self.seed, self.rank, self.steps, self.batch = seed, rank, steps, batch_sentences

  def __call__(self, encoder) -> Dict[str, float]:
    x_train, x_dev = self.train.features(encoder), self.dev.features(encoder)
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
    return {"probe_ud_uas": float((predicted[:, 1:] == gold)[scored].mean()),
            "probe_ud_skipped_sentences": float(self.dev.skipped)}


def treebank_file(data_dir: str, split: str) -> str:
  """The one `*-ud-<split>.conllu` file of a UD treebank folder."""
  found = sorted(glob.glob(os.path.join(data_dir, f"*-ud-{split}.conllu")))
  if len(found) != 1:
    raise FileNotFoundError(f"{data_dir}: expected one *-ud-{split}.conllu file, found "
                            f"{len(found)}")
  return found[0]


def arc_scores(weights, x: tf.Tensor) -> tf.Tensor:
  """`[S, N, N]` scores s[b, h, d] of `x` (`[S, N, hidden]`)."""
  a, b, u = weights
  heads, dependents = x @ a, x @ b
  return tf.einsum("shr,sdr->shd", heads, dependents) + x @ u  # [S, N, 1]: per head h


def _candidates(nodes: np.ndarray, size: int) -> np.ndarray:
  """`[S, N, N]` bool: h is a possible head of d (both real nodes, h != d, d not ROOT)."""
  real = np.arange(size)[None, :] < nodes[:, None]
  allowed = real[:, :, None] & real[:, None, :] & ~np.eye(size, dtype=bool)[None]
  allowed[:, :, 0] = False
  return allowed


def train_head_selector(x: np.ndarray, heads: np.ndarray, nodes: np.ndarray, rank: int,
                        steps: int, batch: int, seed: int):
  """Adam on the mean cross-entropy of each word's gold head; returns (A, B, u) as numpy."""
  rng = np.random.default_rng(seed)
  hidden = x.shape[-1]
  init = tf_keras.initializers.GlorotUniform(seed=seed)
  weights = [tf.Variable(init([hidden, rank])), tf.Variable(init([hidden, rank])),
             tf.Variable(tf.zeros([hidden, 1]))]
  optimizer = tf_keras.optimizers.Adam(1e-3)

  @tf.function
  def step(xb, hb, allowed):
    with tf.GradientTape() as tape:
      scores = tf.transpose(arc_scores(weights, xb), [0, 2, 1])  # [S, dependent, head]
      scores = tf.where(tf.transpose(allowed, [0, 2, 1]), scores, -1e9)
      words = hb >= 0
      loss = tf.reduce_mean(tf.boolean_mask(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.maximum(hb, 0), logits=scores), words))
    optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights))
    return loss

  allowed = _candidates(nodes, x.shape[1])
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
    allowed = _candidates(nodes[start:start + 256], x.shape[1])
    scores = np.where(allowed, scores, -np.inf)
    best = scores.argmax(axis=1)  # over heads
    best[~allowed.any(axis=1)] = -1
    out.append(best)
  return np.concatenate(out)
