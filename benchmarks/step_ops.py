r"""The three ops the pre-training step fixes replaced, each timed against what it replaced, at
ELECTRA-Small batch-32 shapes (forward + backward where a gradient flows):

1. the E→H embedding projection's kernel gradient, `...x,xy->...y` (Model Garden's) vs
   `btx,xy->bty` (ours), `[32, 128, 128] × [128, 256]`;
2. Keras's `Dropout` vs ours (16-bit uniforms) on a `[32, 4, 128, 128]` attention map, and the
   fraction each drops;
3. Gumbel-max sampling vs the multinomial sampler on `[32, 19, 30522]` logits.

  python benchmarks/step_ops.py [--repeats=20]

Results are recorded in benchmarks/RESULTS.md.
"""
import time

from absl import app
from absl import flags
import tensorflow as tf
import tf_keras

from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.ops import sampling

flags.DEFINE_integer("repeats", 20, "Timed calls per op (after two warm-up calls).",
                     lower_bound=1)
FLAGS = flags.FLAGS
SIGMA = (0.1 * 0.9 / (1 << 24)) ** 0.5  # of a Bernoulli(0.1) fraction over 2^24 draws


def milliseconds(fn, *args):
  fn(*args), fn(*args)
  start = time.perf_counter()
  for _ in range(FLAGS.repeats):
    result = fn(*args)
  tf.nest.map_structure(lambda t: t.numpy(), result)
  return (time.perf_counter() - start) / FLAGS.repeats * 1e3


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


def main(_):
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  print(precision.cpu_summary())  # figures from different CPUs are not comparable
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


if __name__ == "__main__":
  app.run(main)
