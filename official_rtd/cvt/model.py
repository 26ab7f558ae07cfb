"""A CVT model: the shared CNN-BiLSTM encoder (`encoder.py`) and each task's prediction modules
(`CvtTask.build_head`), as in the dissertation's multi-task CVT (§4.1.2): one encoder, a head per
task."""
from typing import Dict

import tf_keras

from official_rtd.cvt import encoder as encoder_lib


class CvtModel(tf_keras.Model):
  """`encoder(inputs, dropout_rate)` → states; `heads[task]` → that task's modules."""

  def __init__(self, config: encoder_lib.CvtConfig, num_words: int, num_chars: int,
               tasks: Dict[str, object], word_embeddings=None, **kwargs):
    super().__init__(**kwargs)
    self.config = config
    self.encoder = encoder_lib.CnnBiLstmEncoder(config, num_words, num_chars, word_embeddings,
                                                name="encoder")
    self.heads = {name: task.build_head(config) for name, task in tasks.items()}

  def call(self, inputs, dropout_rate: float = 0.0):
    return self.encoder(inputs, dropout_rate)
