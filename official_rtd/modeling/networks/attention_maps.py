"""What an encoder's attention looks at: per-layer attention probabilities and two summaries that
tell an encoder that reads word order from one that reads only a bag of words.

A uniform attention (entropy log n over n keys) averages the sequence: the output then depends on
which tokens are present but not on their order. `order_sensitivity` measures that directly.
"""
from typing import Dict, List

import numpy as np
import tensorflow as tf

from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder


def attention_maps(encoder: TransformerEncoder, inputs: Dict[str, tf.Tensor]) -> List[tf.Tensor]:
  """`[batch, heads, seq_len, seq_len]` attention probabilities of each layer (post- or
  pre-LayerNorm), at inference (no dropout). `inputs`: `input_word_ids`, `input_mask`,
  `input_type_ids`."""
  x = encoder.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
  if encoder.embedding_projection is not None:
    x = encoder.embedding_projection(x)
  mask = encoder.attention_mask_layer(x, inputs["input_mask"])
  maps = []
  for layer in encoder.transformer_layers:
    read = layer.attention_input(x)
    _, probabilities = layer.attention(
        query=read, value=read, key=read, attention_mask=mask, return_attention_scores=True,
        training=False)
    maps.append(probabilities)
    x = layer([x, mask], training=False)
  return maps


def entropy_ratio(probabilities: tf.Tensor, input_mask: tf.Tensor) -> np.ndarray:
  """`[heads]` mean over the real query positions of H(attention row) / log(real keys): 1 for
  uniform attention, 0 for attention to one key."""
  p = probabilities.numpy().astype(np.float64)
  mask = np.asarray(input_mask, bool)
  entropy = -(p * np.log(np.where(p > 0, p, 1.0))).sum(-1)          # [batch, heads, q]
  keys = mask.sum(-1).astype(np.float64)                            # [batch]
  ratio = entropy / np.log(np.maximum(keys, 2.0))[:, None, None]
  weight = mask[:, None, :].astype(np.float64)                      # real queries
  return (ratio * weight).sum((0, 2)) / (weight.sum((0, 2)) * np.ones(ratio.shape[1]))


def order_sensitivity(encoder: TransformerEncoder, ids: np.ndarray, positions_per_row: int = 4,
                      seed: int = 0) -> float:
  """1 − mean cosine between a token's last-layer vector in its row and in a copy of the row whose
  other inner tokens are shuffled (the token and its position kept): 0 for an encoder blind to
  word order (it sees the same bag of words). `ids`: `[n, seq_len]` rows `[CLS] ... [SEP]`
  without padding; `positions_per_row` tokens of each row are measured."""
  rng = np.random.default_rng(seed)
  copies, targets = [], []
  for b, row in enumerate(ids):
    inner = np.arange(1, len(row) - 1)
    for t in rng.choice(inner, size=min(positions_per_row, len(inner)), replace=False):
      others = inner[inner != t]
      copy = row.copy()
      copy[others] = row[rng.permutation(others)]
      copies.append(copy)
      targets.append((b, t))

  def last_layer(x):
    return encoder({"input_word_ids": x, "input_mask": np.ones_like(x),
                    "input_type_ids": np.zeros_like(x)}, training=False)["sequence_output"].numpy()

  original, shuffled = last_layer(ids), last_layer(np.stack(copies))
  # float64: in float32 a cosine within ~6e-8 of 1 rounds to 1 (an early encoder's order
  # sensitivity is that small, and would read as exactly 0).
  u = np.stack([original[b, t] for b, t in targets]).astype(np.float64)
  v = np.stack([shuffled[i, t] for i, (_, t) in enumerate(targets)]).astype(np.float64)
  cosine = (u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))
  return float(1.0 - cosine.mean())
