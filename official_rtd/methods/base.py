"""The interface every pre-training method implements, so one trainer, one evaluator and one
exporter serve them all."""
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import tensorflow as tf
import tf_keras

from official_rtd.ops import losses as losses_lib
from official_rtd.ops.losses import Loss


class ExportedHeads(NamedTuple):
  """What `interop/` exports next to `exported_encoder` (None: the method has no such part).

  rtd_head: a replaced-token-detection head on `exported_encoder`'s sequence output.
  generator: a masked-LM generator encoder (a `TransformerEncoder`), with `masked_lm` its head.
  """
  rtd_head: Optional[tf_keras.layers.Layer] = None
  generator: Optional[tf_keras.layers.Layer] = None
  masked_lm: Optional[tf_keras.layers.Layer] = None


class PretrainingModel(tf_keras.Model):
  """A Keras model whose `call(inputs, training)` returns a dict of named outputs.

  Subclasses implement the method's losses (`compute_losses`: each a `Loss` with the count it
  averages over, at least `total_loss`), its metrics, the encoder exported for fine-tuning and the
  heads exported with it. Schedules that depend on training progress read `training_step()`, the
  optimizer's step, which the trainer binds (`bind_step`); it is 0 when unbound.

  Under a mixed-precision policy the encoders compute in half precision, but the model's own
  inputs are never cast (`autocast=False`): masks, weights and Gumbel noise stay float32.
  """

  def __init__(self, *args, **kwargs):
    kwargs.setdefault("autocast", False)
    super().__init__(*args, **kwargs)
    self._step_fn: Callable[[], tf.Tensor] = lambda: tf.constant(0, tf.int64)

  def compute_losses(self, inputs: Dict[str, tf.Tensor],
                     outputs: Dict[str, tf.Tensor]) -> Dict[str, Loss]:
    raise NotImplementedError

  def bind_step(self, step_fn: Callable[[], tf.Tensor]) -> None:
    """Gives the model the optimizer's step (a callable, so Keras does not track it as a weight)."""
    self._step_fn = step_fn

  def training_step(self) -> tf.Tensor:
    """The number of optimizer steps taken so far (int64)."""
    return tf.cast(self._step_fn(), tf.int64)

  def exported_heads(self) -> ExportedHeads:
    return ExportedHeads()

  def build_metrics(self) -> Dict[str, tf_keras.metrics.Metric]:
    raise NotImplementedError

  def update_metrics(self, metrics, inputs, outputs, losses) -> None:
    raise NotImplementedError

  @property
  def exported_encoder(self) -> tf_keras.layers.Layer:
    raise NotImplementedError

  def train_flops_per_example(self, seq_len: int, num_predictions: int) -> float:
    """Section 5.2.2 FLOPs of one training example (forward + backward) at step 0."""
    raise NotImplementedError

  def flops_change_steps(self) -> Tuple[int, ...]:
    """The steps from which `train_flops_per_example_at` changes (e.g. a head that stops being
    run); () when every step costs the same."""
    return ()

  def train_flops_per_example_at(self, step: int, seq_len: int, num_predictions: int) -> float:
    """Section 5.2.2 FLOPs of one example of training step `step` (0-based)."""
    del step  # the same at every step unless a method's `flops_change_steps` says otherwise
    return self.train_flops_per_example(seq_len, num_predictions)

  def detection_start_step(self) -> int:
    """The step from which a replaced-token detector's loss counts (0: from the start); before it
    a collapse of its predictions means nothing."""
    return 0

  def detection_start_setting(self) -> str:
    """The gin binding that sets `detection_start_step`, as the run's checks name it."""
    return "masked_lm_warmup.rtd_start_step"

  def detection_weight(self, weight: float) -> tf.Tensor:
    """A detection loss's weight at this step: 0 before `detection_start_step` (λ_t), `weight`
    from it on."""
    start = self.detection_start_step()
    if not start:
      return tf.constant(weight, tf.float32)
    return tf.where(self.training_step() >= start, weight, 0.0)

  def replaced_token_logits(self, inputs: Dict[str, tf.Tensor]) -> Optional[tf.Tensor]:
    """`[batch, seq_len]` logits that each input token was replaced (> 0: replaced), for
    method-agnostic fixed-noise detection; None for methods without a detector."""
    return None

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id: int
                            ) -> Optional[tf.Tensor]:
    """`[batch]` pseudo-log-likelihoods Σ_t log p(x_t | x∖t) over non-special positions, for models
    that can score text; None otherwise."""
    return None

  def masked_language_model(self) -> Optional[Tuple[tf_keras.layers.Layer, tf_keras.layers.Layer]]:
    """(encoder, masked-LM head) of the masked LM the method trains (BERT's encoder, ELECTRA's
    generator), for scorers that mask their own copies of a sentence (PLL-word-l2r); None for
    methods without one."""
    return None


def dummy_inputs(seq_length: int, max_predictions_per_seq: int, batch_size: int = 1
                 ) -> Dict[str, tf.Tensor]:
  """A batch of the inputs a pre-training model takes (the records' features as the input pipeline
  decodes them, `data/records.py`: int32 ids, float32 weights) that builds a model's variables:
  all-zero ids, every token real, no real prediction."""
  ids = tf.zeros([batch_size, seq_length], tf.int32)
  predictions = tf.zeros([batch_size, max_predictions_per_seq], tf.int32)
  return {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids,
          "masked_lm_positions": predictions, "masked_lm_ids": predictions,
          "masked_lm_weights": tf.zeros([batch_size, max_predictions_per_seq], tf.float32)}


def update_loss_metrics(metrics, losses: Dict[str, Loss]):
  """Feeds loss values into `tf_keras.metrics.Mean`s of the same name.

  Losses from `ops.losses.weighted_mean_loss` are each replica's (and, accumulating gradients,
  each micro-batch's) share of the global value; Mean metrics average over the shares, so each is
  scaled back by their number. Each step's value is weighted by its global count, so a log
  interval's figure is per position.
  """
  shares = losses_lib.shares()
  for name, loss in losses.items():
    if name in metrics:
      metrics[name].update_state(loss.value * shares, sample_weight=loss.weight)


def inner_positions(input_mask: tf.Tensor) -> tf.Tensor:
  """`[batch, seq_len]` bool: the positions a pseudo-log-likelihood scores, 1..n−2 of each row
  (everything but `[CLS]`, the final `[SEP]` and padding)."""
  length = tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=1, keepdims=True)
  position = tf.range(tf.shape(input_mask)[1])[tf.newaxis]
  return (position >= 1) & (position < length - 1)


def sum_inner_positions(per_token: tf.Tensor, input_mask: tf.Tensor) -> tf.Tensor:
  """`[batch]` Σ of `[batch, seq_len]` per-token scores over `inner_positions`."""
  return tf.reduce_sum(tf.where(inner_positions(input_mask), per_token, 0.0), axis=1)
