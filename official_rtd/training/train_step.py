"""One pre-training step as each replica runs it: forward, backward (loss-scaled under float16) of
one batch or of k micro-batches (gradient accumulation), all-reduce of the gradients, metric
updates, global-norm clipping, and the optimizer's update, skipped when a loss or the gradient norm
is not finite. The trainer and the benchmarks run this same step."""
import contextlib
from typing import List, Optional

import tensorflow as tf
import tf_keras

from official_rtd.modeling.layers import dropout
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.training import precision

# `[2]` ints per batch: its generator samples and (salted) dropout masks are stateless functions
# of it, so a resumed run draws what the uninterrupted one drew.
SAMPLING_SEED = "sampling_seed"
DROPOUT_SALT = 0x0D0D


class TrainStep:
  """`step(batch)` trains on this replica's batch and returns the method's losses.

  A step whose losses or gradient norm are not finite changes no weight and no optimizer slot: it
  only advances the optimizer's step (as Keras' loss-scale optimizer does when it skips), so the
  schedule and the input position stay in line, and it is counted in `skipped_steps`
  (`consecutive_skips` since the last applied step; `nonfinite_step`, `nonfinite_losses`: the last
  skipped step and which of `loss_names` were not finite there). What the run does next is the
  trainer's policy (`TrainConfig.on_nonfinite`).

  Args:
    model: a `PretrainingModel`.
    optimizer: its optimizer (a `LossScaleOptimizer` under float16).
    clip_norm: global-norm clipping of the summed gradients (0: none).
    metrics: the model's metrics (`model.build_metrics()`), updated every step.
    jit_compile: XLA-compile the forward and backward pass.
    accumulation_steps: k: each replica's batch is split into k micro-batches, run one after
      another, whose gradients sum to those of the whole batch (every loss normalised over the
      whole batch: `ops.losses`).
    weight_average: an `ema.WeightAverage` updated after every applied step, or None.
  Build it under the strategy's scope (it creates the skip counters).
  """

  def __init__(self, model, optimizer, clip_norm: float, metrics, jit_compile: bool = False,
               accumulation_steps: int = 1, weight_average=None):
    self.model = model
    self.optimizer = optimizer
    self.clip_norm = clip_norm
    self.metrics = metrics
    self.accumulation_steps = accumulation_steps
    self.weight_average = weight_average
    self.loss_names = [name for name in metrics if name.endswith("loss")]
    counter = lambda name, value=0: tf.Variable(value, dtype=tf.int64, trainable=False, name=name)
    self.skipped_steps = counter("skipped_steps")
    self.consecutive_skips = counter("consecutive_skips")
    self.nonfinite_step = counter("nonfinite_step", -1)
    self.nonfinite_losses = tf.Variable(tf.zeros([len(self.loss_names)], tf.bool),
                                        trainable=False, name="nonfinite_losses")
    self._forward_backward = (tf.function(self.forward_backward, jit_compile=True, autograph=False)
                              if jit_compile else self.forward_backward)

  def state(self) -> tf.train.Checkpoint:
    """The counters a checkpoint keeps."""
    return tf.train.Checkpoint(skipped_steps=self.skipped_steps,
                               consecutive_skips=self.consecutive_skips,
                               nonfinite_step=self.nonfinite_step)

  def forward_backward(self, batch, totals: Optional[List[tf.Tensor]] = None):
    """(outputs, losses, this replica's gradients of its share of the global-batch loss, the
    local counts of the loss reductions). Dropout masks are drawn from the batch's
    `sampling_seed`, if it has one. With `totals` (accumulating), each loss divides by its
    total count over all replicas and micro-batches (`ops.losses.fixed_denominators`)."""
    variables = self.model.trainable_variables
    seed = batch.get(SAMPLING_SEED)
    with tf.GradientTape() as tape, (
        dropout.step_seeded(sampling.salted(seed, DROPOUT_SALT)) if seed is not None
        else contextlib.nullcontext()):
      outputs = self.model(batch, training=True)
      if totals is None:
        losses, counts = self.model.compute_losses(batch, outputs), []
      else:
        with losses_lib.fixed_denominators(totals) as counts:
          losses = self.model.compute_losses(batch, outputs)
      loss = precision.scaled(self.optimizer, losses["total_loss"].value)
    grads = precision.unscaled(self.optimizer, tape.gradient(loss, variables))
    grads = [tf.convert_to_tensor(g) if g is not None else tf.zeros_like(v)
             for g, v in zip(grads, variables)]
    return outputs, losses, grads, counts

  def replica_gradients(self, batch):
    """Forward and backward on this replica's batch; returns (losses, gradients summed over
    replicas, i.e. of the global-batch loss)."""
    if self.accumulation_steps == 1:
      outputs, losses, grads, _ = self._forward_backward(batch)
      self._update_metrics(batch, outputs, losses)
    else:
      losses, grads = self._accumulated_gradients(batch)
    grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)
    return losses, grads

  def _update_metrics(self, batch, outputs, losses):
    """Metrics of a batch whose losses are all finite (a skipped step's are left out)."""
    finite = tf.reduce_all([tf.math.is_finite(loss.value) for loss in losses.values()])
    tf.cond(finite, lambda: self.model.update_metrics(self.metrics, batch, outputs, losses) or
            tf.constant(True), lambda: tf.constant(False))

  def _accumulated_gradients(self, batch):
    k = self.accumulation_steps
    seed = batch.get(SAMPLING_SEED)
    micro = tf.nest.map_structure(
        lambda t: tf.reshape(t, tf.concat([[k, tf.shape(t)[0] // k], tf.shape(t)[1:]], 0)),
        {name: t for name, t in batch.items() if name != SAMPLING_SEED})

    def take(i):
      """Micro-batch i (its own sampling seed, if the batch has one)."""
      part = tf.nest.map_structure(lambda t: t[i], micro)
      if seed is not None:
        part[SAMPLING_SEED] = sampling.salted(seed, tf.cast(i, tf.int64))
      return part
    local_totals = self._count_denominators(take, k)
    totals = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM,
                                                            local_totals)
    with losses_lib.micro_batches(k):
      # Micro-batch 0 outside the loop gives the accumulators their structure.
      first = take(0)
      outputs, losses, grads, counts = self._forward_backward(first, totals)
      self._update_metrics(first, outputs, losses)
      values = {name: loss.value for name, loss in losses.items()}

      def body(i, grads, values, counts):
        part = take(i)
        outputs, losses, new_grads, new_counts = self._forward_backward(part, totals)
        self._update_metrics(part, outputs, losses)
        return (i + 1, [a + b for a, b in zip(grads, new_grads)],
                {name: values[name] + loss.value for name, loss in losses.items()},
                [a + b for a, b in zip(counts, new_counts)])

      _, grads, values, counts = tf.while_loop(
          lambda i, *_: i < k, body, (tf.constant(1), grads, values, counts),
          parallel_iterations=1)  # one micro-batch's activations in memory at a time
    # The counts totalled beforehand must be the ones the losses used: a method whose loss
    # denominators depend on its outputs (not only its inputs) cannot be accumulated exactly.
    tf.debugging.assert_near(tf.stack(counts), tf.stack(local_totals), message=(
        "gradient accumulation: a loss's count differs from the one totalled before the "
        "micro-batches (it depends on the model's outputs)"))
    return {name: losses_lib.Loss(values[name], losses[name].weight) for name in losses}, grads

  def _count_denominators(self, take, k: int) -> List[tf.Tensor]:
    """The local count of every loss reduction, summed over the k micro-batches: the losses are
    computed on all-zero outputs, since counts depend only on the inputs (checked afterwards)."""
    forward = tf.function(lambda b: self.model(b, training=True), autograph=False)
    spec = forward.get_concrete_function(
        tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), take(0))
    ).structured_outputs
    zeros = tf.nest.map_structure(lambda t: tf.zeros(t.shape, t.dtype), spec)

    def count(i):
      with losses_lib.counting_denominators() as counts:
        self.model.compute_losses(take(i), zeros)
      return counts

    return tf.while_loop(lambda i, _: i < k,
                         lambda i, totals: (i + 1, [a + b for a, b in zip(totals, count(i))]),
                         (tf.constant(1), count(0)))[1]

  # Not converted by autograph (its control flow is tf.cond and tf.while_loop): converting every
  # layer's `call` cost about 2 s of CPU at each tool's start (194 conversions for a tiny ELECTRA).
  @tf.autograph.experimental.do_not_convert
  def __call__(self, batch):
    losses, grads = self.replica_gradients(batch)
    norm = tf.linalg.global_norm(grads)
    if self.clip_norm > 0:
      grads, _ = tf.clip_by_global_norm(grads, self.clip_norm, use_norm=norm)
    nonfinite = tf.stack([tf.logical_not(tf.math.is_finite(losses[name].value))
                          if name in losses else tf.constant(False) for name in self.loss_names])
    tf.distribute.get_replica_context().merge_call(self._apply_or_skip,
                                                   args=(grads, norm, nonfinite))
    return losses

  def _apply_or_skip(self, strategy, grads, norm, nonfinite):
    """Cross-replica: applies the (identical, all-reduced) gradients on every replica, or skips
    the step when the norm or a replica's loss is not finite."""
    local = strategy.experimental_local_results
    nonfinite = tf.reduce_any(tf.stack(local(nonfinite)), axis=0)
    # Under float16 the loss-scale optimizer itself skips overflowing gradients (and lowers its
    # scale): only non-finite losses count as skipped then.
    loss_scaled = isinstance(self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    finite = tf.logical_not(tf.reduce_any(nonfinite))
    if not loss_scaled:
      finite = tf.logical_and(finite, tf.reduce_all([tf.math.is_finite(n) for n in local(norm)]))

    def apply():
      strategy.extended.call_for_each_replica(
          lambda g: self.optimizer.apply_gradients(zip(g, self.model.trainable_variables),
                                                   experimental_aggregate_gradients=False),
          args=(grads,))
      if self.weight_average is not None:
        self.weight_average.update()
      self.consecutive_skips.assign(0)
      return tf.constant(True)

    def skip():
      if loss_scaled:
        apply()
      else:
        self.optimizer.iterations.assign_add(1)
      self.skipped_steps.assign_add(1)
      self.consecutive_skips.assign_add(1)
      self.nonfinite_step.assign(tf.cast(self.optimizer.iterations, tf.int64))
      self.nonfinite_losses.assign(nonfinite)
      return tf.constant(False)

    return tf.cond(finite, apply, skip)
