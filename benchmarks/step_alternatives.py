r"""Other ways to write the step's remaining non-matmul work, each pair timed side by side at
ELECTRA-Small batch-32 shapes, forward + backward (issue 42's list of what to try):

1. a dense layer as `tf.einsum` + add (Keras's `EinsumDense`) vs a 2-D `MatMul` + `BiasAdd` (the
   pattern grappler's remapper fuses into `_FusedMatMul`; it does not fuse `Einsum`), for the
   FFN's two layers and an attention projection: not taken (no consistent gain);
2. the bias gradient: `Sum` over batch and positions (autodiff of an add) vs `BiasAddGrad`
   (taken: `modeling/layers/einsum_dense.py`);
3. query, key and value as three `[256, 4, 64]` projections vs one `[256, 768]` projection of the
   concatenated kernels: not taken (no gain);
4. `ops.fused.layer_norm`'s backward pass with the γ and β gradients as sums over rows in the XLA
   cluster (the previous code) vs as a ones-vector matmul (taken: `ops/fused.py`).

Each pair is timed in alternation (`--rounds` rounds of `--repeats` calls each, after two warm-up
calls, as `step_ops.py` times); the table shows the median per call and the range over rounds:
the machine's speed drifts between runs.

  python benchmarks/step_alternatives.py [--rounds=5 --repeats=20]

Results are recorded in benchmarks/RESULTS.md.
"""

from absl import app
from absl import flags
import tensorflow as tf

import common
from official_rtd.ops import fused
import step_ops  # benchmarks/step_ops.py: its timing helpers and --repeats

flags.DEFINE_integer("rounds", 5, "Alternating rounds per pair.", lower_bound=1)
FLAGS = flags.FLAGS
BATCH, SEQ = 32, 128


def compare(table, name, first, second, *args):
  """A row `name | first ms (range) | second ms (range) | first / second` of `table`, each
  function timed by `step_ops.milliseconds` in `--rounds` alternating rounds."""
  times = {first: [], second: []}
  for _ in range(FLAGS.rounds):
    for fn, runs in times.items():
      runs.append(step_ops.milliseconds(fn, *args))
  first_ms, second_ms = (common.spread(r) for r in times.values())
  table.row(name, *[f"{t.median:.2f} ({t.min:.2f}–{t.max:.2f})" for t in (first_ms, second_ms)],
            f"{first_ms.median / second_ms.median:.2f}×")


def dense_rows(table):
  for width, units in ((256, 1024), (1024, 256), (256, 256)):
    x = tf.random.normal([BATCH, SEQ, width])
    kernel = tf.Variable(tf.random.normal([width, units]) * 0.05)
    bias = tf.Variable(tf.zeros([units]))
    einsum_add = lambda x, k=kernel, b=bias: tf.einsum("abc,cd->abd", x, k) + b
    matmul_bias_add = lambda x, k=kernel, b=bias, w=width, u=units: tf.reshape(
        tf.nn.bias_add(tf.matmul(tf.reshape(x, [-1, w]), k), b), [BATCH, SEQ, u])
    compare(table, f"dense {width}→{units}: einsum + add → 2-D MatMul + BiasAdd",
            step_ops.forward_backward_step(einsum_add, x),
            step_ops.forward_backward_step(matmul_bias_add, x), x)
  for units in (1024, 256):
    dy = tf.random.normal([BATCH, SEQ, units])
    compare(table, f"bias gradient [{BATCH}, {SEQ}, {units}]: Sum → BiasAddGrad (taken)",
            tf.function(lambda d: tf.reduce_sum(d, [0, 1])),
            tf.function(lambda d: tf.raw_ops.BiasAddGrad(out_backprop=d)), dy)


def qkv_row(table):
  kernels = [tf.Variable(tf.random.normal([256, 4, 64]) * 0.05) for _ in range(3)]
  biases = [tf.Variable(tf.zeros([4, 64])) for _ in range(3)]
  x = tf.random.normal([BATCH, SEQ, 256])

  def three(x):
    return tf.stack([tf.einsum("abc,cde->abde", x, k) + b for k, b in zip(kernels, biases)])

  def one(x):
    kernel = tf.concat([tf.reshape(k, [256, 256]) for k in kernels], axis=1)
    bias = tf.concat([tf.reshape(b, [256]) for b in biases], axis=0)
    y = tf.nn.bias_add(tf.einsum("abc,cd->abd", x, kernel), bias)
    return tf.stack([tf.reshape(p, [BATCH, SEQ, 4, 64]) for p in tf.split(y, 3, axis=-1)])
  compare(table, "query, key, value: three [256, 4, 64] projections → one [256, 768]",
          step_ops.forward_backward_step(three, x), step_ops.forward_backward_step(one, x), x)


def layer_norm_row(table):
  x, dy = tf.random.normal([BATCH, SEQ, 256]), tf.random.normal([BATCH, SEQ, 256])
  gamma = tf.random.normal([256])
  epsilon = 1e-12

  @tf.function(jit_compile=True)
  def row_sums_in_xla(x, dy):  # the previous `fused._layer_norm_backward`
    x_hat, rstd = fused._normalized(x, epsilon)  # pylint: disable=protected-access
    d_gamma, d_beta = tf.reduce_sum(dy * x_hat, axis=[0, 1]), tf.reduce_sum(dy, axis=[0, 1])
    g = dy * gamma
    dx = rstd * (g - tf.reduce_mean(g, axis=-1, keepdims=True)
                 - x_hat * tf.reduce_mean(g * x_hat, axis=-1, keepdims=True))
    return dx, d_gamma, d_beta
  compare(table, f"LayerNorm backward [{BATCH}, {SEQ}, 256]: γ, β row sums in XLA → as a matmul (taken)",
          row_sums_in_xla,
          lambda x, dy: fused._layer_norm_backward(x, gamma, epsilon, dy),  # pylint: disable=protected-access
          x, dy)


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  print(f"median ms per call over {FLAGS.rounds} alternating rounds of {FLAGS.repeats} calls")
  table = common.TableWriter(["forward + backward: first → second", "first ms (range)",
                              "second ms (range)", "first / second"])
  dense_rows(table)
  qkv_row(table)
  layer_norm_row(table)


if __name__ == "__main__":
  app.run(main)
