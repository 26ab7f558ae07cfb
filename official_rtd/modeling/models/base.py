"""The interface every pre-training method implements, so one trainer runs them all."""
from typing import Dict, Optional

import tensorflow as tf
import tf_keras

from official_rtd.modeling.encoder_config import EncoderConfig


class PretrainingModel(tf_keras.Model):
  """A Keras model whose `call(inputs, training)` returns a dict of named outputs.

  Subclasses implement the method's loss (`compute_losses`, returning at least `total_loss`),
  its metrics, and name the encoder that is exported for fine-tuning.

  Under a mixed-precision policy the encoders compute in half precision, but the model's own
  inputs are never cast (`autocast=False`): masks, weights and Gumbel noise stay float32.
  """

  def __init__(self, *args, **kwargs):
    kwargs.setdefault("autocast", False)
    super().__init__(*args, **kwargs)

  def compute_losses(self, inputs: Dict[str, tf.Tensor],
                     outputs: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    raise NotImplementedError

  def build_metrics(self) -> Dict[str, tf_keras.metrics.Metric]:
    raise NotImplementedError

  def update_metrics(self, metrics, inputs, outputs, losses) -> None:
    raise NotImplementedError

  @property
  def exported_encoder(self) -> tf_keras.layers.Layer:
    raise NotImplementedError

  def train_flops_per_example(self, seq_len: int, num_predictions: int) -> float:
    """Section 5.2.2 FLOPs of one training example (forward + backward)."""
    raise NotImplementedError

  def replaced_token_logits(self, inputs: Dict[str, tf.Tensor]) -> Optional[tf.Tensor]:
    """`[batch, seq_len]` logits that each input token was replaced (> 0: replaced), for
    method-agnostic fixed-noise detection; None for methods without a detector."""
    return None

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id: int
                            ) -> Optional[tf.Tensor]:
    """`[batch]` pseudo-log-likelihoods Σ_t log p(x_t | x∖t) over non-special positions, for models
    that can score text; None otherwise."""
    return None

  @property
  def exported_encoder_config(self) -> EncoderConfig:
    return self.exported_encoder.config


def update_loss_metrics(metrics, losses):
  """Feeds loss values into `tf_keras.metrics.Mean`s of the same name.

  Losses from `ops.losses.global_weighted_mean` are each replica's share of the global value;
  Mean metrics average over replicas, so the share is scaled back by the replica count.
  """
  context = tf.distribute.get_replica_context()
  replicas = context.num_replicas_in_sync if context is not None else 1
  for name, value in losses.items():
    if name in metrics:
      metrics[name].update_state(value * replicas)


def inner_positions(input_mask: tf.Tensor) -> tf.Tensor:
  """`[batch, seq_len]` bool: the positions a pseudo-log-likelihood scores, 1..n−2 of each row
  (everything but `[CLS]`, the final `[SEP]` and padding)."""
  length = tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=1, keepdims=True)
  position = tf.range(tf.shape(input_mask)[1])[tf.newaxis]
  return (position >= 1) & (position < length - 1)


def sum_inner_positions(per_token: tf.Tensor, input_mask: tf.Tensor) -> tf.Tensor:
  """`[batch]` Σ of `[batch, seq_len]` per-token scores over `inner_positions`."""
  return tf.reduce_sum(tf.where(inner_positions(input_mask), per_token, 0.0), axis=1)
