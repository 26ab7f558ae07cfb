"""Token-tagging head with a linear-chain CRF over the words (`ops/crf.py`): the dense layer of
google-research/electra's tagging head plus the transition scores. Without a CRF the head is
`heads.dense` alone."""
import tensorflow as tf
import tf_keras

from official_rtd.finetune import heads


class CrfHead(tf_keras.layers.Layer):
  """`call(hidden)`: `[..., num_tags]` emission scores (`dense`); `transitions` `[num_tags,
  num_tags]`: A[i, j], the score of tag j right after tag i."""

  def __init__(self, encoder, num_tags: int, **kwargs):
    super().__init__(**kwargs)
    self.dense = heads.dense(encoder, num_tags, "tagger")
    self.transitions = self.add_weight("transitions", [num_tags, num_tags], tf.float32,
                                       initializer="zeros")

  def call(self, hidden):
    return self.dense(hidden)
