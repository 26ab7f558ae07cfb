"""T5 relative position buckets (Raffel et al.) for our Transformer blocks, as AMOS uses them.

Model Garden's `RelativePositionBias` gives a learned per-head bias for each bucket of the
(bidirectional) relative distance key − query; one instance is shared by all layers of an encoder,
as in T5. `RelativeBiasAttention` adds it to the attention scores before the masked softmax, and
`RelativePositionBlock` is Model Garden's `TransformerEncoderBlock` with that attention.
"""
import tensorflow as tf
import tf_keras
from official.nlp.modeling import layers


class RelativeBiasAttention(tf_keras.layers.MultiHeadAttention):
  """Keras multi-head attention whose scores get `position_bias(q_len, k_len)` added."""

  def __init__(self, position_bias: layers.RelativePositionBias, **kwargs):
    super().__init__(**kwargs)
    self.position_bias = position_bias

  def _masked_softmax(self, attention_scores, attention_mask=None):
    # scores: [batch, heads, query length, key length]
    q_len, k_len = tf.shape(attention_scores)[-2], tf.shape(attention_scores)[-1]
    bias = self.position_bias(tf.zeros([1, q_len, 1]), tf.zeros([1, k_len, 1]))
    return super()._masked_softmax(attention_scores + tf.cast(bias, attention_scores.dtype),
                                   attention_mask)


class RelativePositionBlock(layers.TransformerEncoderBlock):
  """Model Garden's post-LayerNorm block with T5 relative position bias in its self-attention."""

  def __init__(self, position_bias: layers.RelativePositionBias, **kwargs):
    super().__init__(**kwargs)
    self._position_bias = position_bias

  def build(self, input_shape):
    super().build(input_shape)
    # The same attention (its config, less the build shapes it records), with the bias added.
    config = {k: v for k, v in self._attention_layer.get_config().items()
              if k not in ("query_shape", "key_shape", "value_shape")}
    self._attention_layer = RelativeBiasAttention(self._position_bias, **config)
