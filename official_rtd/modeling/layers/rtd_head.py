"""ELECTRA's replaced-token-detection head: dense + activation, then one logit per position."""
import math

import tensorflow as tf
import tf_keras


class ReplacedTokenDetectionHead(tf_keras.layers.Layer):
  """`[batch, seq_len, hidden]` -> `[batch, seq_len]` logits (float32) that a token was replaced.

  `prior`: the logit's bias starts at log(prior / (1 − prior)), so the untrained head already
  predicts that fraction of replaced tokens (0.5: bias 0, ELECTRA's initialisation)."""

  def __init__(self, hidden_size: int, activation, initializer, prior: float = 0.5, **kwargs):
    super().__init__(**kwargs)
    if not 0.0 < prior < 1.0:
      raise ValueError(f"the replaced-token prior must be in (0, 1), got {prior!r}")
    self.dense = tf_keras.layers.Dense(hidden_size, activation=activation,
                                       kernel_initializer=initializer, name="dense")
    self.logit = tf_keras.layers.Dense(1, kernel_initializer=tf_keras.initializers.get(
        initializer.__class__.from_config(initializer.get_config())),
        bias_initializer=tf_keras.initializers.Constant(math.log(prior / (1.0 - prior))),
        name="logit")

  def call(self, sequence_output):
    return tf.cast(tf.squeeze(self.logit(self.dense(sequence_output)), -1), tf.float32)
