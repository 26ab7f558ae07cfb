"""Linear-chain conditional random field (Lafferty et al., 2001), written in TF because
`tensorflow-addons` (which had `tfa.text.crf_*`) is dead.

A tag path y_1..y_n of a sequence with emissions E `[seq_len, num_tags]` and transitions A
`[num_tags, num_tags]` (A[i, j]: score of tag j right after tag i) scores
  s(y) = Σ_t E[t, y_t] + Σ_{t>1} A[y_{t−1}, y_t],   p(y) = exp s(y) / Σ_y' exp s(y').
Sequences are left-aligned: positions at or after `lengths` are padding and take no part.
"""
import numpy as np
import tensorflow as tf


def path_score(emissions, transitions, tags, lengths) -> tf.Tensor:
  """s(y) of the given paths.

  Args:
    emissions: `[batch, seq_len, num_tags]` float.
    transitions: `[num_tags, num_tags]` float.
    tags: `[batch, seq_len]` int.
    lengths: `[batch]` int, the real length of each sequence.
  Returns:
    `[batch]` float.
  """
  transitions = tf.convert_to_tensor(transitions)  # a variable's value (XLA gathers tensors)
  tags = tf.cast(tags, tf.int32)
  mask = tf.sequence_mask(lengths, tf.shape(tags)[1], emissions.dtype)
  unary = tf.reduce_sum(tf.gather(emissions, tags, axis=2, batch_dims=2) * mask, axis=1)
  pairs = tf.stack([tags[:, :-1], tags[:, 1:]], axis=-1)  # [batch, seq_len - 1, 2]
  binary = tf.reduce_sum(tf.gather_nd(transitions, pairs) * mask[:, 1:], axis=1)
  return unary + binary


def log_partition(emissions, transitions, lengths) -> tf.Tensor:
  """log Σ_y exp s(y) by the forward algorithm in log space, `[batch]` (0 for length 0).

  α_1 = E[1];  α_t[j] = logsumexp_i(α_{t−1}[i] + A[i, j]) + E[t, j];  log Z = logsumexp_j α_n[j].
  """
  transitions = tf.convert_to_tensor(transitions)
  time_major = tf.transpose(emissions, [1, 0, 2])  # [seq_len, batch, num_tags]
  steps = tf.range(1, tf.shape(emissions)[1])

  def step(alpha, inputs):
    emission, t = inputs
    new = tf.reduce_logsumexp(alpha[:, :, None] + transitions[None], axis=1) + emission
    return tf.where((t < lengths)[:, None], new, alpha)

  alpha = tf.foldl(step, (time_major[1:], steps), initializer=time_major[0])
  return tf.where(lengths > 0, tf.reduce_logsumexp(alpha, axis=1), tf.zeros_like(alpha[:, 0]))


def log_likelihood(emissions, transitions, tags, lengths) -> tf.Tensor:
  """log p(y) = s(y) − log Z, `[batch]`."""
  return path_score(emissions, transitions, tags, lengths) - log_partition(
      emissions, transitions, lengths)


def viterbi_decode(emissions: np.ndarray, transitions: np.ndarray) -> np.ndarray:
  """argmax_y s(y) of one sequence (host-side numpy, run after the device's forward pass).

  Args:
    emissions: `[length, num_tags]` of the real positions only.
    transitions: `[num_tags, num_tags]`.
  Returns:
    `[length]` int tags.
  """
  length = len(emissions)
  if length == 0:
    return np.zeros([0], np.int64)
  score = emissions[0].astype(np.float64)
  backpointers = []
  for t in range(1, length):
    candidates = score[:, None] + transitions  # [previous tag, tag]
    backpointers.append(candidates.argmax(0))
    score = candidates.max(0) + emissions[t]
  path = [int(score.argmax())]
  for pointer in reversed(backpointers):
    path.append(int(pointer[path[-1]]))
  return np.array(path[::-1], np.int64)
