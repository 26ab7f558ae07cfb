"""Token + position + segment embeddings with LayerNorm and dropout (shareable between networks)."""
from typing import Optional

import tensorflow as tf
import tf_keras
from official.modeling import tf_utils
from official.nlp.modeling import layers

from official_rtd.modeling.layers.dropout import Dropout


class Embeddings(tf_keras.layers.Layer):
  """`[batch, seq_len]` ids -> `[batch, seq_len, embedding_size]` embeddings.

  One instance can be used by several encoders (ELECTRA ties the generator's and the
  discriminator's token, position and segment embeddings and the embedding LayerNorm).
  """

  def __init__(self, vocab_size: int, embedding_size: int, max_position_embeddings: int = 512,
               type_vocab_size: int = 2, dropout_rate: float = 0.1,
               initializer: Optional[tf_keras.initializers.Initializer] = None,
               use_position_embeddings: bool = True, **kwargs):
    super().__init__(**kwargs)
    initializer = initializer or tf_keras.initializers.TruncatedNormal(stddev=0.02)
    self.word_embeddings = layers.OnDeviceEmbedding(
        vocab_size=vocab_size, embedding_width=embedding_size,
        initializer=tf_utils.clone_initializer(initializer), name="word_embeddings")
    # Built now so that MLM output layers can tie to the table before the first call.
    self.word_embeddings.build(None)
    self.position_embeddings = layers.PositionEmbedding(
        max_length=max_position_embeddings, initializer=tf_utils.clone_initializer(initializer),
        name="position_embedding") if use_position_embeddings else None
    self.type_embeddings = layers.OnDeviceEmbedding(
        vocab_size=type_vocab_size, embedding_width=embedding_size, use_one_hot=True,
        initializer=tf_utils.clone_initializer(initializer), name="type_embeddings")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        axis=-1, epsilon=1e-12, dtype=tf.float32, name="layer_norm")
    self.dropout = Dropout(rate=dropout_rate)

  @property
  def embedding_table(self) -> tf.Variable:
    """`[vocab_size, embedding_size]` token embeddings (tied to MLM output layers)."""
    return self.word_embeddings.embeddings

  def call(self, input_word_ids, input_type_ids, word_embeddings=None, training=None):
    """`word_embeddings` (`[batch, seq_len, embedding_size]`) replaces the token look-up, e.g. for
    differentiable soft inputs."""
    if word_embeddings is None:
      word_embeddings = self.word_embeddings(input_word_ids)
    embeddings = word_embeddings + self.type_embeddings(input_type_ids)
    if self.position_embeddings is not None:
      embeddings += self.position_embeddings(word_embeddings)
    return self.dropout(self.layer_norm(embeddings), training=training)
