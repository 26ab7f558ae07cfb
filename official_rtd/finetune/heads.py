"""The head every fine-tuning model puts on the encoder's hidden states (google-research/electra's
heads): dropout, then a linear layer initialised as the encoder's own weights."""
from typing import Tuple

import tf_keras

from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.networks import transformer_encoder


def dense(encoder, units: int, name: str) -> tf_keras.layers.Dense:
  """A linear layer of `units` outputs named `name`, initialised as `encoder`'s weights."""
  return tf_keras.layers.Dense(
      units, kernel_initializer=transformer_encoder.initializer(encoder.config), name=name)


def dropout_and_dense(encoder, units: int, name: str, dropout_rate: float = 0.1
                      ) -> Tuple[Dropout, tf_keras.layers.Dense]:
  """`(dropout, dense)`: the two layers of a linear head on `encoder` (a model keeps them as two
  attributes, so its checkpoints name the variables as before this helper existed)."""
  return Dropout(dropout_rate), dense(encoder, units, name)
