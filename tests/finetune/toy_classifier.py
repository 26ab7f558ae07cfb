"""A fine-tuning model for tests of the training loop and the optimizer: the encoder, dropout and
a dense layer on `[CLS]` (GLUE's head), with the mean softmax cross-entropy."""
import tensorflow as tf
import tf_keras

from official_rtd.finetune import heads
from official_rtd.modeling.layers.dropout import Dropout


class Classifier(tf_keras.Model):
  """`call` returns `[batch, num_classes]` logits."""

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1):
    super().__init__()
    self.encoder = encoder
    self.dropout = Dropout(dropout_rate)
    self.head = heads.dense(encoder, num_classes, "classifier")

  def call(self, inputs, training=None):
    cls = self.encoder(inputs, training=training)["sequence_output"][:, 0]
    return tf.cast(self.head(self.dropout(cls, training=training)), tf.float32)


def loss(logits, labels) -> tf.Tensor:
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=logits))
