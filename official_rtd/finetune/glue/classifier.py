"""ELECTRA's GLUE heads: dropout + linear on the `[CLS]` position (one output for regression)."""
import tensorflow as tf
import tf_keras

from official_rtd.finetune import heads


class SequenceClassifier(tf_keras.Model):
  """`call` returns `{"logits": [batch, num_classes]}`, or `{"predictions": [batch]}` for
  regression (`num_classes == 1`): wᵀc (ELECTRA, BERT), or with `regression_scale` S > 0,
  S·sigmoid(wᵀc) (BAM §3.1: sigmoid on labels normalised to [0, 1])."""

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1,
               regression_scale: float = 0.0, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.num_classes = num_classes
    self.regression_scale = regression_scale
    self.dropout, self.head = heads.dropout_and_dense(encoder, num_classes, "classifier",
                                                      dropout_rate)

  def call(self, inputs, training=None):
    cls = self.encoder(inputs, training=training)["sequence_output"][:, 0]
    out = tf.cast(self.head(self.dropout(cls, training=training)), tf.float32)
    if self.num_classes == 1:
      out = tf.squeeze(out, -1)
      if self.regression_scale:
        out = self.regression_scale * tf.sigmoid(out)
      return {"predictions": out}
    return {"logits": out}


def loss(outputs, labels, regression_scale: float = 0.0) -> tf.Tensor:
  """Mean softmax cross-entropy, or mean squared error for regression (on values and labels
  divided by `regression_scale` when it is set: BAM's loss on labels normalised to [0, 1])."""
  if "predictions" in outputs:
    error = outputs["predictions"] - tf.cast(labels, tf.float32)
    return tf.reduce_mean(tf.square(error / (regression_scale or 1.0)))
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=outputs["logits"]))
