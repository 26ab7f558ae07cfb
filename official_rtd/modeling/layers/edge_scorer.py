"""The dependency edge scorer of Cross-View Training's parser (Clark et al. 2018 / the
dissertation §4.2.3), used by CVT's parsing modules and by the `run_parsing` fine-tuning head:

  s(z1, z2, r) = ReLU(W_head z1 + b_head)ᵀ (W_r + W) ReLU(W_dep z2 + b_dep)

for a candidate head z1, dependent z2 and relation r (W shared by the relations, W_r each its
own); p(h, r | d) is a softmax over every (head, relation) edge into word d.
"""
import tensorflow as tf
import tf_keras


class EdgeScorer(tf_keras.layers.Layer):
  """`call(heads, dependents)` with `heads`, `dependents` `[batch, nodes, width]` (node 0: ROOT)
  returns the scores `[batch, head, dependent, relation]`.

  Args:
    num_relations: R.
    projection_size: the size of the ReLU projections (the dissertation's parser: 512; ours
      smaller by default, a CPU setting).
  """

  def __init__(self, num_relations: int, projection_size: int = 128,
               initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    self.num_relations = num_relations
    self.projection_size = projection_size
    self.head_projection = tf_keras.layers.Dense(projection_size, activation="relu",
                                                 kernel_initializer=initializer, name="head")
    self.dependent_projection = tf_keras.layers.Dense(projection_size, activation="relu",
                                                      kernel_initializer=initializer,
                                                      name="dependent")
    self.initializer = initializer

  def build(self, input_shape):
    k = self.projection_size
    self.shared = self.add_weight("shared", [k, k], initializer=self.initializer)  # W
    self.per_relation = self.add_weight("per_relation", [self.num_relations, k, k],  # W_r
                                        initializer=self.initializer)
    super().build(input_shape)

  def call(self, heads, dependents):
    h = self.head_projection(heads)            # [batch, nodes, k]
    d = self.dependent_projection(dependents)  # [batch, nodes, k]
    bilinear = tf.cast(self.per_relation + self.shared[tf.newaxis], h.dtype)  # [R, k, k]: W_r + W
    # As matmuls (einsum's contractions are ~1.3x slower on CPU, measured): h (W_r + W) for
    # every relation at once, then its product with every dependent.
    batch, nodes, k = tf.shape(h)[0], tf.shape(h)[1], self.projection_size
    r = self.num_relations
    left = tf.matmul(tf.reshape(h, [-1, k]),
                     tf.reshape(tf.transpose(bilinear, [1, 0, 2]), [k, r * k]))
    scores = tf.matmul(tf.reshape(left, [batch, nodes * r, k]), d, transpose_b=True)
    return tf.transpose(tf.reshape(scores, [batch, nodes, r, -1]), [0, 1, 3, 2])  # [b, h, d, r]


def edge_log_probabilities(scores: tf.Tensor, allowed: tf.Tensor) -> tf.Tensor:
  """log p(h, r | d): a log-softmax over every allowed (head, relation) edge into each dependent.
  `scores` `[batch, head, dependent, relation]`; `allowed` `[batch, head, dependent]` bool."""
  scores = tf.cast(scores, tf.float32)
  masked = tf.where(allowed[..., tf.newaxis], scores, -1e9)
  shape = tf.shape(masked)
  per_dependent = tf.reshape(tf.transpose(masked, [0, 2, 1, 3]),
                             [shape[0], shape[2], shape[1] * shape[3]])  # [b, d, h·r]
  log_p = tf.nn.log_softmax(per_dependent, axis=-1)
  return tf.transpose(tf.reshape(log_p, [shape[0], shape[2], shape[1], shape[3]]), [0, 2, 1, 3])
