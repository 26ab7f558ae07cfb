"""Inverted dropout from 16-bit uniforms of a counter-based hash, drawn and applied in one pass."""
import contextlib
import threading

import tensorflow as tf
import tf_keras

from official_rtd.ops import fused

_LEVELS = 1 << 16  # a 16-bit uniform takes one of 65,536 values


class _StepSeeds(threading.local):
  """Per thread (each replica of a MirroredStrategy traces its step in its own thread): the
  [seed tensor, dropout calls traced so far] of the enclosing `step_seeded` blocks."""
  stack: list

  def __init__(self):
    super().__init__()
    self.stack = []


_step_seed = _StepSeeds()


@contextlib.contextmanager
def step_seeded(seed: tf.Tensor):
  """Dropout masks drawn inside this block (while a step function is traced or run eagerly) are
  stateless functions of `seed` (`[2]` int64) and the order of the dropout calls."""
  _step_seed.stack.append([tf.cast(seed, tf.int64), 0])
  try:
    yield
  finally:
    _step_seed.stack.pop()


class Dropout(tf_keras.layers.Dropout):
  """y = x · m / (1 − p), m ~ Bernoulli(1 − p) per element, in training; y = x otherwise.

  Keras draws a 32-bit Philox output per element (a float uniform), stores the mask, compares it
  with the rate and applies it with a select, whose gradient is a second select. Here each
  element's draw is a 16-bit uniform u from a counter-based hash of its index and a per-call key
  (`ops.fused.dropout_uniform16`: two rounds of the lowbias32 integer hash); an element is kept
  when u ≥ round(rate · 65536), so the drop probability p is that count / 65536 (rate 0.1 →
  p = 0.1000061), and kept elements are scaled by 1 / (1 − p), which keeps E[y] = x exactly. One
  XLA-fused pass computes the draw, compares, scales and multiplies (`ops.fused.dropout`), and its
  gradient computes the same draw again: no random tensor is generated or stored. Forward +
  backward of a `[32, 4, 128, 128]` bfloat16 attention map on an AMD EPYC (AVX512_BF16), quiet:
  2.4–2.8 ms, against 4.8–5.8 ms with TensorFlow's Philox draw of 16-bit uniforms applied by the
  same fused pass (`benchmarks/results/speed.md`). The hash's statistics (drop fraction, uniformity,
  independence of neighbours and of keys) are tested in `tests/modeling/test_dropout.py`.

  Fresh masks come from a key drawn by a stateful op each call, so `tf.random.set_seed` (and the
  layer's `seed`) make runs repeatable as with Keras's layer. Inside `step_seeded(seed)` (a `[2]`
  int64 tensor, e.g. (trial seed, step)) the key of the k-th dropout call traced in that block is
  fold_in(seed, k) instead: the masks are a function of the step, so a training loop resumed from
  a checkpoint draws the masks the uninterrupted run drew.
  """

  def __init__(self, rate: float, seed=None, **kwargs):
    if not 0 <= rate < 1:
      raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
    if kwargs.get("noise_shape") is not None:
      raise ValueError("this Dropout draws a mask per element; noise_shape is not supported")
    super().__init__(rate, seed=seed, **kwargs)
    self.drop_count = round(rate * _LEVELS)  # 16-bit values below this are dropped

  def call(self, inputs, training=None):
    if self.drop_count == 0:
      return tf.identity(inputs)
    if training is None:
      training = tf_keras.backend.learning_phase()
    return tf.__internal__.smart_cond.smart_cond(
        training, lambda: fused.dropout(inputs, self.key(), self.drop_count,
                                        _LEVELS / (_LEVELS - self.drop_count)),
        lambda: tf.identity(inputs))

  def key(self) -> tf.Tensor:
    """This call's `[2]` uint32 key of the draw (`ops.fused.dropout_uniform16`)."""
    if _step_seed.stack:
      base, index = _step_seed.stack[-1]
      _step_seed.stack[-1][1] += 1
      seed = tf.random.experimental.stateless_fold_in(base, index)
    else:
      seed = tf.random.uniform([2], maxval=tf.int64.max, dtype=tf.int64, seed=self.seed)
    halves = tf.bitcast(tf.cast(seed, tf.int64), tf.uint32)  # [2, 2]: each word to 32 bits
    return tf.bitwise.bitwise_xor(halves[:, 0], halves[:, 1])
