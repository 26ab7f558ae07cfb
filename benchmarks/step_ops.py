r"""The ops the pre-training step fixes replaced, each timed against what it replaced, at
ELECTRA-Small batch-32 shapes (forward + backward where a gradient flows):

1. the E→H embedding projection's kernel gradient, `...x,xy->...y` (Model Garden's) vs
   `btx,xy->bty` (ours), `[32, 128, 128] × [128, 256]`;
2. Keras's `Dropout` vs ours (16-bit uniforms of a counter-based hash, drawn in the pass that
   applies them) on a `[32, 4, 128, 128]` attention map, and the fraction each drops;
3. Gumbel-max sampling vs the multinomial sampler on `[32, 19, 30522]` logits;
4. Keras's tanh GELU vs `ops.fused.gelu` on `[32, 128, 1024]` (float32 and, as Model Garden runs
   it under mixed_bfloat16, a bfloat16 input cast to float32 vs ours on the bfloat16 input);
5. Keras's `LayerNormalization` (ε = 1e-12, so not its fused-batch-norm path) vs `LayerNorm` on
   `[32, 128, 256]`;
6. Keras's attention (`MultiHeadAttention._compute_attention`: einsums) vs ours (batched matmuls
   over `[batch, heads, seq_len, head_size]`), 4 heads of 64, with a padding mask, no dropout;
7. Keras's `EinsumDense` vs ours (bias added by `tf.nn.bias_add`) for the FFN's 256→1024 layer and
   a `[256, 4, 64]` attention projection of `[32, 128, 256]`.

  python benchmarks/step_ops.py [--repeats=20]

Results are recorded in benchmarks/RESULTS.md.
"""

from absl import app
from absl import flags
import tensorflow as tf
import tf_keras

import common
from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.layers.einsum_dense import EinsumDense
from official_rtd.modeling.layers.layer_norm import LayerNorm
from official_rtd.modeling.layers.transformer_block import Attention
from official_rtd.ops import fused
from official_rtd.ops import sampling

flags.DEFINE_integer("repeats", 20, "Timed calls per op (after two warm-up calls).",
                     lower_bound=1)
FLAGS = flags.FLAGS
SIGMA = (0.1 * 0.9 / (1 << 24)) ** 0.5  # of a Bernoulli(0.1) fraction over 2^24 draws


def milliseconds(fn, *args):
  """The median of `--repeats` calls after two warm-up calls, each waiting for its values."""
  return common.timed(lambda: fn(*args), warmup=2, repeats=FLAGS.repeats,
                      finish=lambda r: tf.nest.map_structure(lambda t: t.numpy(), r)).median * 1e3


def projection_kernel_gradient(equation):
  x = tf.random.normal([32, 128, 128])
  kernel = tf.Variable(tf.random.normal([128, 256]))

  @tf.function
  def gradient(x):
    with tf.GradientTape() as tape:
      y = tf.einsum(equation, x, kernel)
    return tape.gradient(y, kernel)
  return milliseconds(gradient, x)


def dropout_forward_backward(layer, dtype):
  x = tf.cast(tf.random.normal([32, 4, 128, 128]), dtype)
  upstream = tf.cast(tf.random.normal([32, 4, 128, 128]), dtype)

  @tf.function
  def forward_backward(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x, training=True)
    return y, tape.gradient(y, x, output_gradients=upstream)
  return milliseconds(forward_backward, x)


def forward_backward_step(fn, *inputs):
  """A `tf.function` of `inputs`: the gradients of Σ fn(inputs)·u (u random) to every input and
  weight fn uses."""
  y = fn(*inputs)
  upstream = tf.cast(tf.random.normal(tf.shape(y)), y.dtype)

  @tf.function
  def step(*inputs):
    with tf.GradientTape() as tape:
      tape.watch(inputs)
      y = fn(*inputs)
    return tape.gradient(y, list(inputs) + list(tape.watched_variables()),
                         output_gradients=upstream)
  return step


def forward_backward_ms(fn, *inputs):
  """Milliseconds per forward + backward of fn (`forward_backward_step`)."""
  return milliseconds(forward_backward_step(fn, *inputs), *inputs)


def elementwise_rows():
  """(name, replaced ms, ours ms) of GELU and LayerNorm."""
  x = tf.random.normal([32, 128, 1024])
  keras_gelu = lambda v: tf_keras.activations.gelu(tf.cast(v, tf.float32), approximate=True)
  rows = [("GELU [32, 128, 1024] float32", forward_backward_ms(keras_gelu, x),
           forward_backward_ms(fused.gelu, x)),
          ("GELU [32, 128, 1024] bfloat16 input", forward_backward_ms(keras_gelu, tf.cast(
              x, tf.bfloat16)), forward_backward_ms(fused.gelu, tf.cast(x, tf.bfloat16)))]
  h = tf.random.normal([32, 128, 256])
  for dtype in (tf.float32, tf.bfloat16):
    keras_norm = tf_keras.layers.LayerNormalization(epsilon=1e-12, dtype=tf.float32)
    ours_norm = LayerNorm(epsilon=1e-12, dtype=tf.float32)
    rows.append((f"LayerNorm [32, 128, 256] {dtype.name} input",
                 forward_backward_ms(keras_norm, tf.cast(h, dtype)),
                 forward_backward_ms(ours_norm, tf.cast(h, dtype))))
  return rows


def attention_row():
  """(name, replaced ms, ours ms) of the attention core."""
  query, key, value = (tf.random.normal([32, 128, 4, 64]) for _ in range(3))
  lengths = tf.random.uniform([32], 64, 129, tf.int32)
  mask = tf.sequence_mask(lengths, 128, tf.float32)[:, None, :] * tf.ones([32, 128, 1])
  times = []
  for layer_class in (tf_keras.layers.MultiHeadAttention, Attention):
    layer = layer_class(num_heads=4, key_dim=64)
    layer(tf.zeros([1, 2, 256]), tf.zeros([1, 2, 256]))  # builds the attention
    times.append(forward_backward_ms(
        lambda q, k, v, layer=layer: layer._compute_attention(q, k, v, mask)[0],  # pylint: disable=protected-access
        query, key, value))
  return [("attention core [32, 4 heads, 128, 64] float32", *times)]


def dense_rows():
  """(name, replaced ms, ours ms) of the FFN's first layer and a query projection."""
  x = tf.random.normal([32, 128, 256])
  rows = []
  for name, equation, output_shape, bias_axes in (
      ("dense 256→1024", "abc,cd->abd", (None, 1024), "d"),
      ("projection 256→[4, 64]", "abc,cde->abde", (None, 4, 64), "de")):
    keras = tf_keras.layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)
    keras(x)
    ours = EinsumDense.from_config(keras.get_config())
    ours(x)
    rows.append((f"{name} [32, 128, 256] float32 (Keras's EinsumDense → ours)",
                 forward_backward_ms(keras, x), forward_backward_ms(ours, x)))
  return rows


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  for equation in ("...x,xy->...y", "btx,xy->bty"):
    print(f"projection kernel gradient {equation}: "
          f"{projection_kernel_gradient(equation):.1f} ms")
  for dtype in (tf.bfloat16, tf.float32):
    for name, layer_class in (("Keras", tf_keras.layers.Dropout), ("ours", Dropout)):
      layer = layer_class(0.1, dtype=dtype)
      ms = dropout_forward_backward(layer, dtype)
      dropped = tf.reduce_mean(tf.cast(layer(tf.ones([1 << 24], dtype), training=True) == 0,
                                       tf.float64))
      print(f"dropout {name} {dtype.name} forward + backward: {ms:.1f} ms; drops "
            f"{float(dropped):.4%} of 2^24 elements at rate 0.1 (1σ = {SIGMA:.4%})")
  logits = tf.random.normal([32, 19, 30522])
  gumbel_max = tf.function(lambda l: tf.argmax(l + sampling.gumbel(tf.shape(l)), axis=-1))
  print(f"sampling Gumbel-max: {milliseconds(gumbel_max, logits):.1f} ms")
  print(f"sampling multinomial (sampling.sample): "
        f"{milliseconds(tf.function(sampling.sample), logits):.1f} ms")
  print(common.markdown_table(
      ["op, forward + backward", "replaced ms", "ours ms", "speed-up"],
      [[name, f"{replaced:.1f}", f"{ours:.1f}", f"{replaced / ours:.2f}×"]
       for name, replaced, ours in elementwise_rows() + attention_row() + dense_rows()]))


if __name__ == "__main__":
  app.run(main)
