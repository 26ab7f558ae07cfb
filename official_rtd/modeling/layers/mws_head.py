"""TEAMS's multi-word selection output: scores of each masked position's candidate tokens."""
import tensorflow as tf
import tf_keras


class MultiWordSelectionHead(tf_keras.layers.Layer):
  """logit(c) = e(c)ᵀ·f(h_t) + b_c for the candidates c of each masked position t (eq. 7), with
  f a dense layer to the embedding width + activation + LayerNorm (as BERT's MLM transform) and e
  the (tied) token embeddings: `[batch, seq_len, hidden]`, positions `[batch, P]`, candidates
  `[batch, P, C]` -> `[batch, P, C]` float32 logits."""

  def __init__(self, embedding_table, activation, initializer, **kwargs):
    super().__init__(**kwargs)
    self.embedding_table = embedding_table
    self.dense = tf_keras.layers.Dense(embedding_table.shape[-1], activation=activation,
                                       kernel_initializer=initializer, name="transform")
    self.layer_norm = tf_keras.layers.LayerNormalization(axis=-1, epsilon=1e-12, name="layer_norm")

  def build(self, input_shape):
    self.bias = self.add_weight("output_bias", shape=[self.embedding_table.shape[0]],
                                initializer="zeros")
    super().build(input_shape)

  def call(self, sequence_output, positions, candidates):
    hidden = tf.gather(sequence_output, positions, batch_dims=1)           # [batch, P, hidden]
    hidden = self.layer_norm(self.dense(hidden))                           # [batch, P, E]
    embeddings = tf.gather(self.embedding_table, candidates)               # [batch, P, C, E]
    logits = tf.einsum("bpe,bpce->bpc", hidden, tf.cast(embeddings, hidden.dtype))
    return tf.cast(logits + tf.gather(self.bias, candidates), tf.float32)
