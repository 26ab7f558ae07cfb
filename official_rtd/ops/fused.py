"""BERT's tanh GELU, LayerNorm, dropout's mask and softmax cross-entropy as one XLA-compiled pass
each way, with hand-written gradients.

TensorFlow runs every element-wise op as its own pass over memory, and autodiff adds more: BERT's
GELU is 7 ops forward and about 12 backward over a `[batch, seq_len, intermediate]` tensor, a
LayerNorm about 10 and 20. On a CPU those passes, not the matmuls, are a third of an ELECTRA step
(`benchmarks/train_throughput.py`'s op breakdown). Here each op's forward and its gradient is one
`tf.function(jit_compile=True)`, which XLA fuses into one loop (on GPU/TPU, where the whole step
is usually compiled, the functions are simply inlined). Statistics and arithmetic are float32
whatever the input dtype (cast inside the fused loop, no float32 copy of the activation). The math
is that of `tf_keras.activations.gelu(approximate=True)` and `tf_keras.layers.LayerNormalization`:
`tests/ops/test_fused.py` compares values and gradients with them. The dropout pass draws its
16-bit uniforms from a counter-based hash and applies them (`modeling/layers/dropout.py`), and
the cross-entropy is that of `tf.nn.sparse_softmax_cross_entropy_with_logits`, each compared with
an independent computation in the same tests.
"""
import math

import tensorflow as tf

_C = math.sqrt(2.0 / math.pi)
_A = 0.044715


@tf.function(jit_compile=True, autograph=False)
def _gelu_forward(x):
  x32 = tf.cast(x, tf.float32)
  t = tf.tanh(_C * (x32 + _A * x32 * x32 * x32))
  return tf.cast(0.5 * x32 * (1.0 + t), x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _gelu_backward(x, dy):
  x32 = tf.cast(x, tf.float32)
  t = tf.tanh(_C * (x32 + _A * x32 * x32 * x32))
  # d/dx 0.5·x·(1 + t) = 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3a·x²)
  slope = 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * _C * (1.0 + 3.0 * _A * x32 * x32)
  return tf.cast(tf.cast(dy, tf.float32) * slope, x.dtype)


@tf.custom_gradient
def gelu(x):
  """BERT's GELU, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), any shape and float dtype."""
  return _gelu_forward(x), lambda dy: _gelu_backward(x, dy)


@tf.function(jit_compile=True, autograph=False)
def _bias_gelu_forward(x, bias):
  return _gelu_forward(x + tf.cast(bias, x.dtype))


@tf.function(jit_compile=True, autograph=False)
def _bias_gelu_backward(x, bias, dy):
  dx = _gelu_backward(x + tf.cast(bias, x.dtype), dy)
  # dbias = Σ_rows dx, as a ones-vector matmul (as LayerNorm's dγ, dβ below).
  rows = tf.reshape(tf.cast(dx, tf.float32), [-1, x.shape[-1]])
  d_bias = tf.matmul(tf.ones([1, tf.shape(rows)[0]]), rows)[0]
  return dx, tf.cast(d_bias, bias.dtype)


def bias_gelu(x, bias):
  """gelu(x + bias) for `x` `[..., width]` and `bias` `[width]` (added in `x`'s dtype, as
  `tf.nn.bias_add` would), one pass each way: the bias's add and its gradient's sum over rows
  are inside the GELU's passes instead of two passes of their own."""

  @tf.custom_gradient
  def activate(x, bias):
    return _bias_gelu_forward(x, bias), lambda dy: _bias_gelu_backward(x, bias, dy)

  return activate(x, tf.convert_to_tensor(bias))


@tf.function(jit_compile=True, autograph=False)
def _normalized(x, epsilon: float):
  """(x̂ = (x − μ)/√(σ² + ε), 1/√(σ² + ε)) over the last axis, float32."""
  x32 = tf.cast(x, tf.float32)
  mean = tf.reduce_mean(x32, axis=-1, keepdims=True)
  centered = x32 - mean
  rstd = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True) + epsilon)
  return centered * rstd, rstd


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_forward(x, gamma, beta, epsilon, dtype):
  x_hat, _ = _normalized(x, epsilon)
  return tf.cast(x_hat * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32), dtype)


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_backward(x, gamma, epsilon, dy):
  x_hat, rstd = _normalized(x, epsilon)
  dy32 = tf.cast(dy, tf.float32)
  # dγ = Σ_rows dy·x̂, dβ = Σ_rows dy, as one ones-vector matmul: on a CPU the backward pass is
  # 1.24–1.31× faster than with XLA's sums over rows (`benchmarks/step_alternatives.py`).
  hidden = x.shape[-1]
  columns = tf.reshape(tf.concat([dy32 * x_hat, dy32], axis=-1), [-1, 2 * hidden])
  sums = tf.matmul(tf.ones([1, tf.shape(columns)[0]]), columns)[0]
  d_gamma, d_beta = sums[:hidden], sums[hidden:]
  g = dy32 * tf.cast(gamma, tf.float32)
  # dx = (g − mean(g) − x̂·mean(g·x̂)) / √(σ² + ε)
  dx = rstd * (g - tf.reduce_mean(g, axis=-1, keepdims=True)
               - x_hat * tf.reduce_mean(g * x_hat, axis=-1, keepdims=True))
  return tf.cast(dx, x.dtype), tf.cast(d_gamma, gamma.dtype), tf.cast(d_beta, gamma.dtype)


def layer_norm(x, gamma, beta, epsilon: float, dtype=tf.float32):
  """γ·(x − μ)/√(σ² + ε) + β over the last axis of `x` (`[..., hidden]`, any float dtype), with
  float32 statistics; returns `dtype`. `gamma`, `beta`: `[hidden]` (variables or tensors)."""
  dtype = tf.as_dtype(dtype)

  @tf.custom_gradient
  def normalize(x, gamma, beta):
    def grad(dy):
      return _layer_norm_backward(x, gamma, epsilon, dy)
    return _layer_norm_forward(x, gamma, beta, epsilon, dtype), grad

  return normalize(x, tf.convert_to_tensor(gamma), tf.convert_to_tensor(beta))


def _lowbias32(h: tf.Tensor) -> tf.Tensor:
  """C. Wellons' `lowbias32` integer hash of uint32 `h` (a bijection with low avalanche bias):
  h ^= h >> 16; h *= 0x7feb352d; h ^= h >> 15; h *= 0x846ca68b; h ^= h >> 16."""
  h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))
  h = h * tf.constant(0x7FEB352D, tf.uint32)
  h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 15))
  h = h * tf.constant(0x846CA68B, tf.uint32)
  return tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))


def dropout_uniform16(shape, key: tf.Tensor) -> tf.Tensor:
  """The dropout draw of a tensor of `shape`: a 16-bit uniform per element, the top half of
  lowbias32(lowbias32(i ⊕ k₀) + k₁) for its flat index i and the `[2]` uint32 `key` (a
  counter-based generator: any element's draw is computed where it is needed, in the pass that
  applies it, forward and backward alike; int32 `[shape]`, values 0 .. 65,535)."""
  index = tf.bitcast(tf.reshape(tf.range(tf.reduce_prod(shape)), shape), tf.uint32)
  hashed = _lowbias32(_lowbias32(tf.bitwise.bitwise_xor(index, key[0])) + key[1])
  return tf.bitcast(tf.bitwise.right_shift(hashed, 16), tf.int32)


@tf.function(jit_compile=True, autograph=False)
def _apply_keep_mask(x, key, drop_count, scale):
  keep = dropout_uniform16(tf.shape(x), key) >= drop_count
  return tf.where(keep, x * tf.cast(scale, x.dtype), tf.zeros([], x.dtype))


def dropout(x, key: tf.Tensor, drop_count: int, scale: float):
  """Inverted dropout of `x`: y = x · scale where `dropout_uniform16(x.shape, key)` ≥ `drop_count`,
  else 0 (`key`: `[2]` uint32; the gradient is the same mask on dy). One pass each way draws the
  mask and applies it: no mask is stored between the forward and backward passes."""

  @tf.custom_gradient
  def apply(x):
    return (_apply_keep_mask(x, key, drop_count, scale),
            lambda dy: _apply_keep_mask(dy, key, drop_count, scale))

  return apply(x)


@tf.function(jit_compile=True, autograph=False)
def _softmax_cross_entropy(logits, labels):
  """(−log softmax(logits)[label] `[rows]` float32, its gradient softmax − one-hot `[rows, classes]`
  in `logits`' dtype) for `[rows, classes]` logits and int `[rows]` labels."""
  z = tf.cast(logits, tf.float32)
  shifted = z - tf.reduce_max(z, axis=-1, keepdims=True)
  exp = tf.exp(shifted)
  total = tf.reduce_sum(exp, axis=-1, keepdims=True)
  loss = tf.math.log(total[:, 0]) - tf.gather(shifted, labels, batch_dims=1)
  grad = exp / total - tf.one_hot(labels, tf.shape(z)[-1], dtype=tf.float32)
  return loss, tf.cast(grad, logits.dtype)


@tf.function(jit_compile=True, autograph=False)
def _scale_rows(grad, dy):
  return grad * tf.cast(dy, grad.dtype)[:, tf.newaxis]


def sparse_softmax_cross_entropy(labels, logits):
  """`tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)`: −log softmax(logits)[label],
  float32, for `logits` `[..., classes]` (any float dtype, read in float32) and int `labels`
  `[...]` in [0, classes) (unchecked: out-of-range labels give an undefined loss). The loss and
  its gradient are one pass over the logits; the backward pass scales the kept gradient."""
  shape = tf.shape(labels)
  classes = tf.shape(logits)[-1]
  rows = tf.reshape(logits, [-1, classes])

  @tf.custom_gradient
  def cross_entropy(rows):
    loss, grad = _softmax_cross_entropy(rows, tf.reshape(tf.cast(labels, tf.int32), [-1]))
    return loss, lambda dy: _scale_rows(grad, dy)

  return tf.reshape(cross_entropy(rows), shape)
