"""Keras's LayerNormalization computed by one fused pass each way (`ops.fused.layer_norm`)."""
import tf_keras

from official_rtd.ops import fused


class LayerNorm(tf_keras.layers.LayerNormalization):
  """`tf_keras.layers.LayerNormalization` over the last axis (same weights, names, config and
  math; statistics in float32) whose forward and gradient are each one XLA-fused pass. Its input
  is not cast to the layer's dtype first: a bfloat16 input is read as is and normalised in float32
  inside the fused pass, with no float32 copy of it. Other axes fall back to Keras's layer."""

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    self._autocast = False

  def call(self, inputs):
    if self.axis != [inputs.shape.rank - 1] or not (self.center and self.scale):
      return super().call(inputs)
    return fused.layer_norm(inputs, self.gamma, self.beta, self.epsilon, self.compute_dtype)
