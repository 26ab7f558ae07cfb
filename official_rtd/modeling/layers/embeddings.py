"""Token + position + segment embeddings with LayerNorm and dropout (shareable between networks)."""
from typing import Dict, Optional

from official.modeling import tf_utils
from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.layers.layer_norm import LayerNorm

LAYER_NORM_EPSILON = 1e-12


class Embeddings(tf_keras.layers.Layer):
  """`[batch, seq_len]` ids -> `[batch, seq_len, embedding_size]` embeddings.

  One instance can be used by several encoders (ELECTRA ties the generator's and the
  discriminator's token, position and segment embeddings and the embedding LayerNorm), or two
  instances only a token table (`shared_word_embeddings`: another instance's `word_embeddings`,
  as Model Garden's `ElectraPretrainer` ties only the token embeddings). The sub-layers own the
  weights (their checkpoint names are BERT's); `embed` computes from any set of tables of their
  shapes, so `DisentangledEmbeddings` can reuse it with derived tables.
  """

  def __init__(self, vocab_size: int, embedding_size: int, max_position_embeddings: int = 512,
               type_vocab_size: int = 2, dropout_rate: float = 0.1,
               initializer: Optional[tf_keras.initializers.Initializer] = None,
               use_position_embeddings: bool = True,
               shared_word_embeddings: Optional[layers.OnDeviceEmbedding] = None, **kwargs):
    super().__init__(**kwargs)
    self.arguments = dict(vocab_size=vocab_size, embedding_size=embedding_size,
                          max_position_embeddings=max_position_embeddings,
                          type_vocab_size=type_vocab_size, dropout_rate=dropout_rate,
                          use_position_embeddings=use_position_embeddings)
    initializer = initializer or tf_keras.initializers.TruncatedNormal(stddev=0.02)
    if shared_word_embeddings is not None and (
        shared_word_embeddings.embeddings.shape != (vocab_size, embedding_size)):
      raise ValueError(f"shared_word_embeddings is {shared_word_embeddings.embeddings.shape}, "
                       f"this layer's token table is ({vocab_size}, {embedding_size})")
    self.word_embeddings = shared_word_embeddings if shared_word_embeddings is not None else (
        layers.OnDeviceEmbedding(vocab_size=vocab_size, embedding_width=embedding_size,
                                 initializer=tf_utils.clone_initializer(initializer),
                                 name="word_embeddings"))
    self.position_embeddings = layers.PositionEmbedding(
        max_length=max_position_embeddings, initializer=tf_utils.clone_initializer(initializer),
        name="position_embedding") if use_position_embeddings else None
    self.type_embeddings = layers.OnDeviceEmbedding(
        vocab_size=type_vocab_size, embedding_width=embedding_size, use_one_hot=True,
        initializer=tf_utils.clone_initializer(initializer), name="type_embeddings")
    self.layer_norm = LayerNorm(
        axis=-1, epsilon=LAYER_NORM_EPSILON, dtype=tf.float32, name="layer_norm")
    self.dropout = Dropout(rate=dropout_rate)
    # Built now (MLM output layers tie to the token table, and `tables()` may be read before any
    # call), under this layer's name: variable names are unique within an encoder.
    shape = [None, None, embedding_size]
    with tf.name_scope(self.name):
      for layer, input_shape in ((self.word_embeddings, None), (self.type_embeddings, None),
                                 (self.position_embeddings, shape), (self.layer_norm, shape)):
        if layer is not None and not layer.built:
          with tf.name_scope(layer.name):
            layer.build(input_shape)

  @property
  def embedding_table(self) -> tf.Variable:
    """`[vocab_size, embedding_size]` token embeddings (tied to MLM output layers)."""
    return self.word_embeddings.embeddings

  def tables(self) -> Dict[str, tf.Variable]:
    """The weights by role: `word` `[vocab, E]`, `type` `[types, E]`, `position` `[max_len, E]`
    (absent with relative positions), LayerNorm `gamma` and `beta` `[E]`."""
    tables = {"word": self.word_embeddings.embeddings, "type": self.type_embeddings.embeddings,
              "gamma": self.layer_norm.gamma, "beta": self.layer_norm.beta}
    if self.position_embeddings is not None:
      tables["position"] = self.position_embeddings.weights[0]
    return tables

  def embed(self, tables, input_word_ids, input_type_ids, word_embeddings=None, training=None):
    """LayerNorm(word + type + position) then dropout, from `tables` (see `tables()`).

    `word_embeddings` (`[batch, seq_len, embedding_size]`) replaces the token look-up, e.g. for
    differentiable soft inputs. The sum is in the compute dtype, the LayerNorm in float32.
    """
    if word_embeddings is None:
      word_embeddings = tf.gather(tables["word"], input_word_ids)
    dtype = word_embeddings.dtype
    one_hot_types = tf.one_hot(input_type_ids, tables["type"].shape[0], dtype=dtype)
    embeddings = word_embeddings + tf.einsum("bst,te->bse", one_hot_types,
                                             tf.cast(tables["type"], dtype))
    if "position" in tables:
      seq_len = tf.shape(word_embeddings)[1]
      embeddings += tf.cast(tables["position"], dtype)[tf.newaxis, :seq_len]
    embeddings = tf.cast(embeddings, tf.float32)
    mean, variance = tf.nn.moments(embeddings, axes=[-1], keepdims=True)
    normalized = tf.nn.batch_normalization(
        embeddings, mean, variance, offset=tf.cast(tables["beta"], tf.float32),
        scale=tf.cast(tables["gamma"], tf.float32), variance_epsilon=LAYER_NORM_EPSILON)
    return self.dropout(normalized, training=training)

  def call(self, input_word_ids, input_type_ids, word_embeddings=None, training=None):
    return self.embed(self.tables(), input_word_ids, input_type_ids, word_embeddings, training)
