"""ELECTRA's replaced-token-detection head: dense + activation, then one logit per position."""
import tensorflow as tf
import tf_keras


class ReplacedTokenDetectionHead(tf_keras.layers.Layer):
  """`[batch, seq_len, hidden]` -> `[batch, seq_len]` logits (float32) that a token was replaced."""

  def __init__(self, hidden_size: int, activation, initializer, **kwargs):
    super().__init__(**kwargs)
    self.dense = tf_keras.layers.Dense(hidden_size, activation=activation,
                                       kernel_initializer=initializer, name="dense")
    self.logit = tf_keras.layers.Dense(1, kernel_initializer=tf_keras.initializers.get(
        initializer.__class__.from_config(initializer.get_config())), name="logit")

  def call(self, sequence_output):
    return tf.cast(tf.squeeze(self.logit(self.dense(sequence_output)), -1), tf.float32)
