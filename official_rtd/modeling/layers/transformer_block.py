"""Model Garden's Transformer block (post-LayerNorm, or pre- with `norm_first`) with our dropout
and optional T5 position bias.

`TransformerBlock` is Model Garden's `TransformerEncoderBlock` (same weights, names and math) whose
dropouts (attention probabilities, attention output, FFN output) are our 16-bit-uniform `Dropout`,
whose LayerNorms are `LayerNorm` (one fused pass each way), whose dense layers are `EinsumDense`
(bias added by `tf.nn.bias_add`, a faster gradient; the intermediate one's inside the fused
GELU's pass) and whose attention multiplies `[batch, heads, seq_len, head_size]` matrices
(Keras's einsums transpose more; the same math). Its attention is tracked after its other
sublayers, so `get_weights()` lists the weights in another order than Model Garden's block: match
them by name (`interop.model_garden.copy_weights_by_name`). With a `position_bias` (Model Garden's
`RelativePositionBias`: a learned per-head bias for each bucket of the bidirectional relative
distance key − query, one instance shared by all layers of an encoder, as in T5 and AMOS), its
attention adds that bias to the scores before the masked softmax.
"""
import math
from typing import Dict, Optional

from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.layers.einsum_dense import EinsumDense
from official_rtd.modeling.layers.layer_norm import LayerNorm
from official_rtd.ops import fused


class Attention(tf_keras.layers.MultiHeadAttention):
  """Keras multi-head attention with our dropout on the attention probabilities; with a
  `position_bias`, its scores get `position_bias(q_len, k_len)` added."""

  def __init__(self, position_bias: Optional[layers.RelativePositionBias] = None, **kwargs):
    super().__init__(**kwargs)
    self.position_bias = position_bias

  def _build_from_signature(self, query, value, key=None):
    super()._build_from_signature(query, value, key)
    # The same projections (configs, names) adding their biases with `tf.nn.bias_add`.
    self._query_dense, self._key_dense, self._value_dense, self._output_dense = (
        EinsumDense.from_config(layer.get_config()) for layer in (
            self._query_dense, self._key_dense, self._value_dense, self._output_dense))

  def _build_attention(self, rank):
    super()._build_attention(rank)
    self._dropout_layer = Dropout(self._dropout, dtype=self.dtype_policy)

  def _compute_attention(self, query, key, value, attention_mask=None, training=None):
    """Keras's dot-product attention (query scaled by 1/√head_size, masked softmax, dropout on
    the probabilities) as batched matmuls over `[batch, heads, seq_len, head_size]`.

    Args: query `[batch, T, heads, head_size]`, key and value `[batch, S, heads, head_size]`,
      attention_mask `[batch, T, S]`.
    Returns: (`[batch, T, heads, head_size]`, probabilities `[batch, heads, T, S]`).
    """
    if self._attention_axes != (1,):
      return super()._compute_attention(query, key, value, attention_mask, training)
    heads_first = lambda x: tf.transpose(x, [0, 2, 1, 3])
    query = tf.multiply(query, 1.0 / math.sqrt(float(self._key_dim)))
    scores = tf.matmul(heads_first(query), heads_first(key), transpose_b=True)
    probabilities = self._masked_softmax(scores, attention_mask)
    dropped = self._dropout_layer(probabilities, training=training)
    return heads_first(tf.matmul(dropped, heads_first(value))), probabilities

  def _masked_softmax(self, attention_scores, attention_mask=None):
    if self.position_bias is not None:
      # scores: [batch, heads, query length, key length]
      q_len, k_len = tf.shape(attention_scores)[-2], tf.shape(attention_scores)[-1]
      bias = self.position_bias(tf.zeros([1, q_len, 1]), tf.zeros([1, k_len, 1]))
      attention_scores += tf.cast(bias, attention_scores.dtype)
    return super()._masked_softmax(attention_scores, attention_mask)


class TransformerBlock(layers.TransformerEncoderBlock):
  """Model Garden's post-LayerNorm block with `Attention` and our `Dropout`."""

  @property
  def attention(self) -> Attention:
    """The block's self-attention layer (e.g. to read its probabilities)."""
    return self._attention_layer

  def attention_input(self, x: tf.Tensor) -> tf.Tensor:
    """What the self-attention reads from the block's input `x`: `x` itself (post-LayerNorm),
    or its LayerNorm (pre-LayerNorm, `norm_first`)."""
    return self._attention_layer_norm(x) if self._norm_first else x

  def parts(self) -> Dict[str, tf_keras.layers.Layer]:
    """The block's weight-holding sublayers by role, in BERT's order (`PARTS`): the one place
    that reads Model Garden's private attribute names (checkpoint converters map the roles)."""
    attention = self._attention_layer
    return {"query": attention._query_dense, "key": attention._key_dense,  # pylint: disable=protected-access
            "value": attention._value_dense, "attention_output": attention._output_dense,  # pylint: disable=protected-access
            "attention_norm": self._attention_layer_norm,
            "intermediate": self._intermediate_dense, "output": self._output_dense,
            "output_norm": self._output_layer_norm}

  def __init__(self, position_bias: Optional[layers.RelativePositionBias] = None, **kwargs):
    super().__init__(**kwargs)
    self._position_bias = position_bias

  def build(self, input_shape):
    super().build(input_shape)
    # The same attention (its config, less the build shapes it records) and dropout rates.
    config = {k: v for k, v in self._attention_layer.get_config().items()
              if k not in ("query_shape", "key_shape", "value_shape")}
    self._attention_layer = Attention(self._position_bias, **config)
    self._attention_dropout = Dropout(self._attention_dropout_rate, dtype=self.dtype_policy)
    self._output_dropout = Dropout(self._output_dropout_rate, dtype=self.dtype_policy)
    self._intermediate_dense = EinsumDense.from_config(self._intermediate_dense.get_config())
    self._output_dense = EinsumDense.from_config(self._output_dense.get_config())
    self._attention_layer_norm = LayerNorm(**self._attention_layer_norm.get_config())
    self._output_layer_norm = LayerNorm(**self._output_layer_norm.get_config())
    if self._inner_activation is fused.gelu:
      # Model Garden computes the activation in float32 under mixed_bfloat16 (a float32 copy of
      # its input and output); the fused GELU computes in float32 inside its pass, and adds the
      # intermediate projection's bias there too (`EinsumDense` with `activation=fused.gelu`).
      self._intermediate_dense.activation = fused.gelu
      self._intermediate_activation_layer = tf_keras.layers.Activation(
          "linear", dtype=self.dtype_policy)
