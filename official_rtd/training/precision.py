"""Mixed precision and XLA options shared by pre-training and fine-tuning.

`bfloat16` and `float16` compute in half precision with float32 variables (Keras mixed policies);
the models keep logits, softmax, sampling and losses in float32. `float16` also scales the loss
(dynamic loss scaling) so small gradients do not underflow; `bfloat16` has float32's range and
needs none.
"""
import contextlib

import tf_keras

PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def check(precision: str):
  if precision not in PRECISIONS:
    raise ValueError(f"--mixed_precision must be one of {sorted(PRECISIONS)}, got {precision!r}")


@contextlib.contextmanager
def policy(precision: str):
  """Builds the layers created inside under `precision`'s Keras policy, then restores the old one
  (layers keep the policy they were created with)."""
  check(precision)
  previous = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy(PRECISIONS[precision])
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(previous)


def wrap_optimizer(optimizer, precision: str):
  """float16: a dynamic loss-scale optimizer around `optimizer`; otherwise `optimizer`."""
  if precision == "float16":
    return tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer


def scaled(optimizer, loss):
  """The loss to differentiate (scaled under float16)."""
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    return optimizer.get_scaled_loss(loss)
  return loss


def unscaled(optimizer, grads):
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    return optimizer.get_unscaled_gradients(grads)
  return grads
