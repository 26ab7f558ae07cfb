"""Token-tagging head: dropout + linear on each word's first piece (google-research/electra's
tagging head), optionally followed by a linear-chain CRF over the words (`ops/crf.py`)."""
import tensorflow as tf
import tf_keras

from official_rtd.finetune import heads
from official_rtd.ops import crf as crf_lib


class TokenTagger(tf_keras.Model):
  """`call(inputs)` with the encoder's inputs plus `word_positions` `[batch, seq_len]` returns
  `{"word_logits": [batch, seq_len, num_tags]}`: the head's scores at each owned word's first
  piece, left-aligned (rows past `word_lengths` are padding)."""

  def __init__(self, encoder, num_tags: int, crf: bool = False, dropout_rate: float = 0.1,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.num_tags = num_tags
    self.crf = crf
    self.dropout, self.head = heads.dropout_and_dense(encoder, num_tags, "tagger", dropout_rate)
    # A[i, j]: score of tag j right after tag i.
    self.transitions = (self.add_weight("transitions", [num_tags, num_tags], tf.float32,
                                        initializer="zeros") if crf else None)

  def call(self, inputs, training=None):
    sequence = self.encoder(inputs, training=training)["sequence_output"]
    logits = tf.cast(self.head(self.dropout(sequence, training=training)), tf.float32)
    return {"word_logits": tf.gather(logits, inputs["word_positions"], batch_dims=1)}


def loss(model: TokenTagger, outputs, labels, lengths) -> tf.Tensor:
  """Per-word mean of the cross-entropy, or of the CRF's −log p(y) (summed over each window's
  words, divided by the number of words).

  Args:
    outputs: `call`'s outputs.
    labels: `[batch, seq_len]` tag ids of the owned words, left-aligned.
    lengths: `[batch]` owned words per window.
  """
  labels = tf.maximum(tf.cast(labels, tf.int32), 0)
  logits = outputs["word_logits"]
  num_words = tf.maximum(tf.cast(tf.reduce_sum(lengths), tf.float32), 1.0)
  if model.crf:
    return -tf.reduce_sum(crf_lib.log_likelihood(logits, model.transitions, labels,
                                                 lengths)) / num_words
  mask = tf.sequence_mask(lengths, tf.shape(labels)[1], tf.float32)
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  return tf.reduce_sum(losses * mask) / num_words
