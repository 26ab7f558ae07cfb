"""Inverted dropout from 16-bit uniforms: half the random bits of Keras's, applied in one pass."""
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

  Keras draws a 32-bit Philox output per element (a float uniform), compares it with the rate and
  applies the mask with a select, whose gradient is a second select. Here every 32-bit draw gives
  two 16-bit uniforms u; an element is kept when u ≥ round(rate · 65536), so the drop probability
  p is that count / 65536 (rate 0.1 → p = 0.1000061), and kept elements are scaled by 1 / (1 − p),
  which keeps E[y] = x exactly. The draw is applied by one XLA-fused pass (`ops.fused.dropout`:
  compare, scale and multiply), also its gradient. Forward + backward of a `[32, 4, 128, 128]`
  attention map on the 2-core CPU we develop on (`benchmarks/step_ops.py`): 8.4 ms against
  Keras's 14.0 ms in bfloat16, 8.3 against 11.3 ms in float32, with the mask applied by separate
  ops; applying it fused then halved the application's share (4.6 → 2.3 ms in bfloat16 on an
  Intel Xeon with AMX, the draw excluded; benchmarks/results/speed.md).

  Fresh masks come from a stateless draw whose seed is drawn by a stateful op each call, so
  `tf.random.set_seed` (and the layer's `seed`) make runs repeatable as with Keras's layer. Inside
  `step_seeded(seed)` (a `[2]` int64 tensor, e.g. (trial seed, step)) the seed of the k-th dropout
  call traced in that block is fold_in(seed, k) instead: the masks are a function of the step, so
  a training loop resumed from a checkpoint draws the masks the uninterrupted run drew.
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
        training, lambda: fused.dropout(inputs, self.uniform16(inputs), self.drop_count,
                                        _LEVELS / (_LEVELS - self.drop_count)),
        lambda: tf.identity(inputs))

  def uniform16(self, inputs: tf.Tensor) -> tf.Tensor:
    """The draw: a uint16 uniform per element of `inputs`, `inputs`' shape; an element is kept
    where it is ≥ `drop_count`."""
    shape = tf.shape(inputs)
    size = tf.size(inputs)
    if _step_seed.stack:
      base, index = _step_seed.stack[-1]
      _step_seed.stack[-1][1] += 1
      seed = tf.random.experimental.stateless_fold_in(base, index)
    else:
      seed = tf.random.uniform([2], maxval=tf.int64.max, dtype=tf.int64, seed=self.seed)
    bits = tf.random.stateless_uniform([(size + 1) // 2], seed, dtype=tf.uint32, minval=None,
                                       maxval=None)
    return tf.reshape(tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:size], shape)
