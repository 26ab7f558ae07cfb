"""One pre-training step as each replica runs it: forward, backward (loss-scaled under float16),
all-reduce of the gradients, metric updates, global-norm clipping, the optimizer's update. The
trainer and the benchmarks run this same step."""
import tensorflow as tf

from official_rtd.training import precision


class TrainStep:
  """`step(batch)` trains on this replica's batch and returns the method's losses.

  Args:
    model: a `PretrainingModel`.
    optimizer: its optimizer (a `LossScaleOptimizer` under float16).
    clip_norm: global-norm clipping of the summed gradients (0: none).
    metrics: the model's metrics (`model.build_metrics()`), updated every step.
    jit_compile: XLA-compile the forward and backward pass.
  """

  def __init__(self, model, optimizer, clip_norm: float, metrics, jit_compile: bool = False):
    self.model = model
    self.optimizer = optimizer
    self.clip_norm = clip_norm
    self.metrics = metrics
    self._forward_backward = (tf.function(self.forward_backward, jit_compile=True)
                              if jit_compile else self.forward_backward)

  def forward_backward(self, batch):
    """(outputs, losses, this replica's gradients of its share of the global-batch loss)."""
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
      outputs = self.model(batch, training=True)
      losses = self.model.compute_losses(batch, outputs)
      loss = precision.scaled(self.optimizer, losses["total_loss"].value)
    grads = precision.unscaled(self.optimizer, tape.gradient(loss, variables))
    grads = [tf.convert_to_tensor(g) if g is not None else tf.zeros_like(v)
             for g, v in zip(grads, variables)]
    return outputs, losses, grads

  def replica_gradients(self, batch):
    """Forward and backward on this replica's batch; returns (losses, gradients summed over
    replicas, i.e. of the global-batch loss)."""
    outputs, losses, grads = self._forward_backward(batch)
    grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)
    self.model.update_metrics(self.metrics, batch, outputs, losses)
    return losses, grads

  def __call__(self, batch):
    losses, grads = self.replica_gradients(batch)
    if self.clip_norm > 0:
      grads, _ = tf.clip_by_global_norm(grads, self.clip_norm)
    self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables),
                                   experimental_aggregate_gradients=False)
    return losses
