"""Layer-wise learning-rate decay for fine-tuning (ELECTRA's `layerwise_lr_decay`).

With L Transformer layers and decay d, a variable at depth k (embeddings and their projection: 0,
layer i (0-based): i + 1, everything above the encoder, i.e. the task head: L + 1) is trained with

  convention "electra" (default, reproduces the papers): encoder variables lr · d^(L + 2 − k), the
      head lr: top layer lr·d², layer i lr·d^(L+1−i), embeddings lr·d^(L+2). This is the original
      code's off-by-one (every encoder variable gets one power more than intended); the papers'
      numbers were produced with it.
  convention "corrected": encoder variables lr · d^(L + 1 − k), the head lr: top layer lr·d,
      embeddings lr·d^(L+1).

Adam's update does not scale with the gradient, so the decay multiplies each variable's *learning
rate* (inside the optimizer), not its gradient.
"""
from typing import Dict

from official.modeling.optimization import legacy_adamw

CONVENTIONS = ("electra", "corrected")


def learning_rate_multipliers(model, encoder, decay: float,
                              convention: str = "electra") -> Dict[str, float]:
  """`{variable name: multiplier}` for every trainable variable of `model`."""
  if convention not in CONVENTIONS:
    raise ValueError(
        f"layer-wise decay convention must be one of {CONVENTIONS}, got {convention!r}")
  num_layers = len(encoder.transformer_layers)
  depth = {}
  below = [encoder.embeddings] + ([encoder.embedding_projection]
                                  if encoder.embedding_projection is not None else [])
  for layer in below:
    for v in layer.trainable_variables:
      depth[v.name] = 0
  for i, layer in enumerate(encoder.transformer_layers):
    for v in layer.trainable_variables:
      depth[v.name] = max(depth.get(v.name, 0), i + 1)  # a shared block counts at its top use
  extra = 1 if convention == "electra" else 0
  multipliers = {}
  for v in model.trainable_variables:
    if v.name in multipliers:
      raise ValueError(f"two trainable variables are named {v.name}; cannot assign learning rates")
    if v.name in depth:
      multipliers[v.name] = decay ** (num_layers + 1 + extra - depth[v.name])
    else:
      multipliers[v.name] = 1.0
  return multipliers


def _base_name(name: str) -> str:
  """Mirrored replicas' copies are named `.../replica_1:0`; they share the first copy's rate."""
  head, _, tail = name.rpartition("/replica_")
  return f"{head}:0" if head and tail.split(":")[0].isdigit() else name


class LayerwiseAdamWeightDecay(legacy_adamw.AdamWeightDecay):
  """Model Garden's AdamW with a per-variable learning-rate multiplier (by variable name)."""

  def __init__(self, multipliers: Dict[str, float], **kwargs):
    super().__init__(**kwargs)
    self._multipliers = dict(multipliers)

  def _scaled_state(self, var, apply_state):
    multiplier = self._multipliers.get(_base_name(var.name), 1.0)
    key = (var.device, var.dtype.base_dtype)
    coefficients = dict((apply_state or {}).get(key) or self._fallback_apply_state(*key))
    coefficients["lr_t"] = coefficients["lr_t"] * multiplier
    if "lr" in coefficients:
      coefficients["lr"] = coefficients["lr"] * multiplier
    scaled = dict(apply_state or {})
    scaled[key] = coefficients
    return scaled

  def _resource_apply_dense(self, grad, var, apply_state=None):
    return super()._resource_apply_dense(grad, var,
                                         apply_state=self._scaled_state(var, apply_state))

  def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
    return super()._resource_apply_sparse(grad, var, indices,
                                          apply_state=self._scaled_state(var, apply_state))

