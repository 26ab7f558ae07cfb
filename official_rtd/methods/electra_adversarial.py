"""ELECTRA with an adversarially trained generator (dissertation §5.3.4).

The generator q is trained with REINFORCE to *maximize* the discriminator loss, under the
simplifying assumption that D's prediction at t depends only on x̂_t and the unreplaced tokens, so
the reward decomposes over the masked positions:

  R(x̂_t, x) = −log D(x̂_t | x^masked)        if x̂_t = x_t   (t ∉ ℛ)
              −log(1 − D(x̂_t | x^masked))   if x̂_t ≠ x_t   (t ∈ ℛ)
  ∇_θq L ≈ Σ_{t∈m} ∇_θq log q(x̂_t | x^masked) [R(x̂_t, x) − b(x^masked, t)]      (one sample)
  b(x^masked, t) = −log sigmoid(wᵀ h_q(x^masked)_t),  trained by cross-entropy to match R

D is the probability of "original" (1 − σ(rtd_logit)), so R is the discriminator's own loss at t.
The baseline's cross-entropy uses the target probability exp(−R): it is minimised where
sigmoid(wᵀh) = exp(−R), i.e. b = R. Losses (each averaged over the real masked positions):

  L = w_adv · L_policy + w_MLE · L_MLM + L_baseline + λ L_Disc,
  L_policy = −log q(x̂_t) · stop_gradient(R − b)

`mle_weight` > 0 mixes in the maximum-likelihood objective (0: purely adversarial).
"""
from typing import Dict, Optional

import gin
import tensorflow as tf
import tf_keras

from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.ops import losses as losses_lib


class AdversarialElectraPretrainer(objectives.GeneratorDiscriminator):
  """ELECTRA's outputs plus `baseline_logits` (`[batch, P]`, wᵀh_q at the masked positions)."""
  # The generator's reward is the discriminator's loss, which the warm-up switches off: not
  # composed.
  supports_warmup = False

  def __init__(self, generator, discriminator, adversarial_weight: float = 1.0,
               mle_weight: float = 0.0, **kwargs):
    super().__init__(generator, discriminator, **kwargs)
    self.adversarial_weight = adversarial_weight
    self.mle_weight = mle_weight
    self.baseline_head = tf_keras.layers.Dense(
        1, kernel_initializer=transformer_encoder.initializer(generator.config),
        name="generator_baseline")  # w

  def generator_logits(self, inputs, original_ids, training=None) -> Dict[str, tf.Tensor]:
    del original_ids
    sequence = self.generator(inputs, training=training)["sequence_output"]
    positions = inputs["masked_lm_positions"]
    h_q = tf.gather(sequence, positions, batch_dims=1)                        # [batch, P, H]
    return {"mlm_logits": tf.cast(self.masked_lm(sequence, positions), tf.float32),
            "baseline_logits": tf.cast(tf.squeeze(self.baseline_head(h_q), -1), tf.float32)}

  def compute_losses(self, inputs, outputs) -> Dict[str, tf.Tensor]:
    losses = objectives.mlm_and_rtd_losses(inputs, outputs, self.rtd_weight)
    weights = inputs["masked_lm_weights"]
    positions = inputs["masked_lm_positions"]
    rtd_logits = tf.gather(outputs["rtd_logits"], positions, batch_dims=1)   # [batch, P]
    replaced = tf.gather(outputs["rtd_labels"], positions, batch_dims=1)
    # R: −log D = softplus(logit) if kept, −log(1 − D) = softplus(−logit) if replaced.
    reward = tf.stop_gradient(tf.where(replaced > 0, tf.nn.softplus(-rtd_logits),
                                       tf.nn.softplus(rtd_logits)))
    z = outputs["baseline_logits"]
    baseline = tf.nn.softplus(-z)                                             # −log sigmoid(z)
    log_q = tf.gather(tf.nn.log_softmax(outputs["mlm_logits"] / self.temperature),
                      outputs["sampled_ids"], batch_dims=2)                   # log q(x̂_t)
    policy = losses_lib.weighted_mean_loss(-log_q * tf.stop_gradient(reward - baseline), weights)
    baseline_loss = losses_lib.weighted_mean_loss(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.exp(-reward), logits=z), weights)
    total = (self.adversarial_weight * policy.value + self.mle_weight * losses["mlm_loss"].value
             + baseline_loss.value + self.rtd_weight * losses["rtd_loss"].value)
    losses.update(total_loss=losses_lib.combined_loss(total, inputs), policy_loss=policy,
                  baseline_loss=baseline_loss,
                  mean_reward=losses_lib.weighted_mean_loss(reward, weights))
    return losses

  def build_metrics(self):
    metrics = objectives.mlm_and_rtd_metrics()
    for name in ("policy_loss", "baseline_loss", "mean_reward"):
      metrics[name] = tf_keras.metrics.Mean(name)
    return metrics


@registry.register("electra_adversarial")
@gin.configurable
def build_adversarial_electra_pretrainer(
    encoder_config: EncoderConfig, generator_size: float = 0.25, generator_layers: float = 1.0,
    embedding_sharing: Optional[str] = None, tie_embeddings: Optional[bool] = None,
    temperature: float = 1.0, rtd_weight: float = 50.0,
    adversarial_weight: float = 1.0, mle_weight: float = 0.0) -> AdversarialElectraPretrainer:
  """ELECTRA's encoders (see `objectives.build_encoders`) with a REINFORCE-trained
  generator; `mle_weight` mixes in its maximum-likelihood loss. `tie_embeddings`: the older
  spelling of `embedding_sharing` "shared" / "none"."""
  generator, discriminator = objectives.build_encoders(
      encoder_config, generator_size, generator_layers,
      objectives.embedding_sharing_mode(embedding_sharing, tie_embeddings))
  return AdversarialElectraPretrainer(
      generator, discriminator, adversarial_weight=adversarial_weight, mle_weight=mle_weight,
      rtd_weight=rtd_weight, temperature=temperature, name="electra_adversarial",
      **objectives.masked_lm_warmup())
