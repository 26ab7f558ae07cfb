"""ELECTRA's GLUE heads: dropout + linear on the `[CLS]` position (one output for regression)."""
import tensorflow as tf
import tf_keras

from official_rtd.modeling.networks import transformer_encoder
from official_rtd.modeling.layers.dropout import Dropout


class SequenceClassifier(tf_keras.Model):
  """`call` returns `{"logits": [batch, num_classes]}`, or `{"predictions": [batch]}` for
  regression (`num_classes == 1`)."""

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.num_classes = num_classes
    self.dropout = Dropout(dropout_rate)
    self.head = tf_keras.layers.Dense(
        num_classes, kernel_initializer=transformer_encoder.initializer(encoder.config),
        name="classifier")

  def call(self, inputs, training=None):
    cls = self.encoder(inputs, training=training)["sequence_output"][:, 0]
    out = tf.cast(self.head(self.dropout(cls, training=training)), tf.float32)
    if self.num_classes == 1:
      return {"predictions": tf.squeeze(out, -1)}
    return {"logits": out}


def loss(outputs, labels) -> tf.Tensor:
  """Mean softmax cross-entropy, or mean squared error for regression."""
  if "predictions" in outputs:
    return tf.reduce_mean(tf.square(outputs["predictions"] - tf.cast(labels, tf.float32)))
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=outputs["logits"]))
