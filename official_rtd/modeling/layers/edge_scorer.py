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
    bilinear = self.per_relation + self.shared[tf.newaxis]  # [R, k, k]: W_r + W
    left = tf.einsum("bhk,rkl->bhrl", h, tf.cast(bilinear, h.dtype))
    return tf.einsum("bhrl,bdl->bhdr", left, d)


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
