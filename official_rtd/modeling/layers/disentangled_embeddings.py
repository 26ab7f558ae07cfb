"""DeBERTa-v3's gradient-disentangled embedding sharing (GDES; He et al., 2021, §3.2).

The discriminator reads E_D = sg(E_G) + E_Δ (eq. 8): the generator's tables E_G under stop-gradient
plus its own residual E_Δ, initialised to zero and trained only by the discriminator's losses. The
generator's MLM gradient alone moves E_G; the RTD gradient that would have reached a shared table
reaches E_Δ instead. Applied to every weight of the embedding layer: the token table and, as
DeBERTa-v3's code does, the position table; here also the segment table and the embedding
LayerNorm, which ELECTRA's `shared` mode shares too (DeBERTa-v3 keeps its own LayerNorm).
"""
from typing import Dict

import tensorflow as tf
import tf_keras

from official_rtd.modeling.layers.embeddings import Embeddings


class EffectiveTable:
  """sg(E_G) + E_Δ of one weight, recomputed wherever it is used as a tensor (`tf.gather`,
  `tf.matmul`, ...), so a head that keeps it at construction, as Model Garden's `MaskedLM` keeps
  an embedding table, always reads the current value and passes its gradient to E_Δ."""

  def __init__(self, generator_weight: tf.Variable, delta: tf.Variable):
    self.generator_weight = generator_weight
    self.delta = delta

  @property
  def shape(self) -> tf.TensorShape:
    return self.delta.shape

  @property
  def dtype(self) -> tf.DType:
    return self.delta.dtype

  def value(self) -> tf.Tensor:
    return tf.stop_gradient(tf.convert_to_tensor(self.generator_weight)) + self.delta  # eq. 8


def _to_tensor(table: EffectiveTable, dtype=None, name=None, as_ref=False):
  del name, as_ref
  value = table.value()
  return value if dtype is None else tf.cast(value, dtype)


tf.register_tensor_conversion_function(EffectiveTable, _to_tensor)


class DisentangledEmbeddings(tf_keras.layers.Layer):
  """The discriminator's embeddings over the generator's `Embeddings` (`source`): the same
  computation from E_D = sg(E_G) + E_Δ, with E_Δ (`delta`, an `Embeddings` of the same sizes)
  starting at zero, so at step 0 the outputs equal those of shared embeddings."""

  def __init__(self, source: Embeddings, **kwargs):
    super().__init__(**kwargs)
    self.source = source
    self.delta = Embeddings(**source.arguments, initializer=tf_keras.initializers.Zeros(),
                            name="embeddings_delta")
    # The delta LayerNorm's gamma starts at 0 too: E_D's gamma is then E_G's.
    self.delta.layer_norm.gamma.assign(tf.zeros_like(self.delta.layer_norm.gamma))

  @property
  def arguments(self) -> dict:
    return self.source.arguments

  @property
  def embedding_table(self) -> EffectiveTable:
    """`[vocab_size, embedding_size]` effective token table (see `EffectiveTable`)."""
    return self.tables()["word"]

  def tables(self) -> Dict[str, EffectiveTable]:
    source = self.source.tables()
    return {role: EffectiveTable(source[role], delta)
            for role, delta in self.delta.tables().items()}

  def call(self, input_word_ids, input_type_ids, word_embeddings=None, training=None):
    tables = {role: table.value() for role, table in self.tables().items()}
    return self.delta.embed(tables, input_word_ids, input_type_ids, word_embeddings, training)

  def materialize(self, name: str = "embeddings") -> Embeddings:
    """A plain `Embeddings` holding E_G + E_Δ (what the discriminator exports)."""
    plain = Embeddings(**self.arguments, name=name)
    effective = self.tables()
    for role, variable in plain.tables().items():
      variable.assign(effective[role].value())
    return plain
