"""Electric: an energy-based cloze model trained with NCE (dissertation §5.1, Algorithm 2).

The discriminator assigns each position an energy E(x)_t = wᵀh(x)_t; p̂(x_t | x∖t) = exp(−E(x)_t)
is an unnormalized cloze probability. The noise distribution q is a two-tower cloze model (see
`networks/two_tower.py`) trained by maximum likelihood on every position. Per sequence of n tokens,
the k positions R chosen by the input pipeline's masking (k = ⌈0.15·n⌉ over the non-special
tokens with electric.gin's dynamic masking; round() in statically masked records) are replaced
*simultaneously* by samples from q, and

  D(x)_t = (n−k)·p̂ / ((n−k)·p̂ + k·q(x_t|x∖t)) = σ(−E(x)_t − log q(x_t|x∖t) + log((n−k)/k))

  L_NCE = E[ Σ_{t∉R} −log D(x^noised)_t + Σ_{t∈R} −log(1 − D(x^noised)_t) ] / n
  L_q   = E[ Σ_t −log q(x_t | x∖t) ] / n                         (two-tower MLE)
  min L_q + λ·L_NCE   (λ = 50 as ELECTRA's discriminator weight; the dissertation gives none)

Sign conventions, all here: D and `nce_logits` are the probability / logit of "data"; `energy` is
E (low = likely); log q enters D as a stop-gradient input. A position in R is a noise sample even
when the sample equals the original token (unlike ELECTRA's labels). The dissertation's Algorithm 2
step 4 and its §5.1.5 formula write D as the probability of *noise* (with n instead of n−k); we
follow Algorithm 2 step 1's D with the data/noise losses assigned consistently.
"""
from typing import Dict

import gin
import tensorflow as tf
import tf_keras

from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.modeling.networks.two_tower import TwoTowerClozeModel
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.ops.losses import Loss


class ElectricPretrainer(base.PretrainingModel):
  """`call` returns (`[batch, seq_len]` unless noted):

  * `log_q_data`: log q(x_t | x∖t) of the original tokens (the two-tower MLE targets);
  * `sampled_ids` (`[batch, num_predictions]`), `noised_ids`: samples and x^noised;
  * `is_noise`: 1.0 at the replaced positions R;
  * `energy`: E(x^noised)_t; `log_q_noised`: log q(x^noised_t | x∖t) (stop-gradient);
  * `nce_logits`: −E − log q + log((n−k)/k), the logit of "data".
  """

  def __init__(self, generator: TwoTowerClozeModel, discriminator: TransformerEncoder,
               nce_weight: float = 50.0, **kwargs):
    super().__init__(**kwargs)
    self.generator = generator
    self.discriminator = discriminator
    self.nce_weight = nce_weight
    self.energy_head = tf_keras.layers.Dense(
        1, kernel_initializer=transformer_encoder.initializer(discriminator.config), name="energy")

  def energy(self, inputs, training=None) -> tf.Tensor:
    """`[batch, seq_len]` E(x)_t."""
    sequence = self.discriminator(inputs, training=training)["sequence_output"]
    return tf.cast(tf.squeeze(self.energy_head(sequence), -1), tf.float32)

  def call(self, inputs, training=None):
    original = sampling.unmask(inputs)
    clean = dict(inputs, input_word_ids=original)
    log_q = tf.nn.log_softmax(self.generator(clean, training=training)["logits"], axis=-1)
    positions, weights = inputs["masked_lm_positions"], inputs["masked_lm_weights"]
    sampled_ids = tf.stop_gradient(sampling.sample(
        tf.gather(log_q, positions, batch_dims=1), gumbel_noise=inputs.get("gumbel_noise"),
        seed=inputs.get("sampling_seed")))
    noised_ids = sampling.scatter_positions(original, positions, sampled_ids, weights)
    is_noise = tf.cast(sampling.scatter_positions(
        tf.zeros_like(original), positions, tf.ones_like(positions), weights), tf.float32)
    log_q_data = tf.gather(log_q, original, batch_dims=2)
    log_q_noised = tf.stop_gradient(tf.gather(log_q, noised_ids, batch_dims=2))
    energy = self.energy(dict(inputs, input_word_ids=noised_ids), training=training)
    n = tf.reduce_sum(tf.cast(inputs["input_mask"], tf.float32), axis=1, keepdims=True)
    k = tf.maximum(tf.reduce_sum(weights, axis=1, keepdims=True), 1.0)
    nce_logits = -energy - log_q_noised + tf.math.log(tf.maximum(n - k, 1.0) / k)
    return {"log_q_data": log_q_data, "sampled_ids": sampled_ids, "noised_ids": noised_ids,
            "is_noise": is_noise, "energy": energy, "log_q_noised": log_q_noised,
            "nce_logits": nce_logits, "original_ids": original}

  def compute_losses(self, inputs, outputs) -> Dict[str, Loss]:
    return electric_losses(inputs, outputs, self.nce_weight)

  def build_metrics(self):
    m = tf_keras.metrics
    return {"total_loss": m.Mean("total_loss"), "cloze_loss": m.Mean("cloze_loss"),
            "nce_loss": m.Mean("nce_loss"), "nce_accuracy": m.BinaryAccuracy("nce_accuracy"),
            "nce_auc": m.AUC(name="nce_auc"),
            "replaced_fraction": m.Mean("replaced_fraction")}

  def update_metrics(self, metrics, inputs, outputs, losses):
    base.update_loss_metrics(metrics, losses)
    objectives.update_detection_metrics(metrics, "nce_", outputs["is_noise"],
                                        tf.sigmoid(-outputs["nce_logits"]), inputs)
    objectives.update_replaced_fraction(metrics, inputs, outputs["sampled_ids"])

  @property
  def exported_encoder(self):
    return self.discriminator

  def train_flops_per_example(self, seq_len, num_predictions):
    gen, disc = self.generator.config, self.discriminator.config
    tower = flops.encoder_forward_flops(gen, seq_len)
    embedding_lookup = seq_len * 2 * gen.embedding_size * (
        gen.vocab_size + gen.max_position_embeddings + gen.type_vocab_size)
    forward = (2 * tower - embedding_lookup  # two towers over one embedding look-up
               + flops.mlm_head_flops(2 * gen.hidden_size, gen.embedding_size, gen.vocab_size,
                                      seq_len)
               + flops.encoder_forward_flops(disc, seq_len) + seq_len * 2 * disc.hidden_size)
    return 2.0 * forward

  def replaced_token_logits(self, inputs):
    """Energy as the "replaced" score (q-free: ranks like −log p̂)."""
    return self.energy(inputs, training=False)

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id):
    """PLL(x) ≈ Σ_t log p̂(x_t | x∖t) = Σ_t −E(x)_t over positions 1..n−2, in one pass."""
    del mask_id
    energy = self.energy({"input_word_ids": input_word_ids, "input_mask": input_mask,
                          "input_type_ids": input_type_ids}, training=False)
    return base.sum_inner_positions(-energy, input_mask)


def electric_losses(inputs, outputs, nce_weight: float) -> Dict[str, Loss]:
  mask = inputs["input_mask"]
  cloze = losses_lib.weighted_mean_loss(-outputs["log_q_data"], mask)
  per_position = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=1.0 - outputs["is_noise"], logits=outputs["nce_logits"])
  nce = losses_lib.weighted_mean_loss(per_position, mask)
  return {"total_loss": losses_lib.combined_loss(cloze.value + nce_weight * nce.value, inputs),
          "cloze_loss": cloze, "nce_loss": nce}


@registry.register("electric")
@gin.configurable
def build_electric_pretrainer(encoder_config: EncoderConfig, generator_size: float = 0.25,
                              generator_layers: float = 1.0, tie_embeddings: bool = True,
                              nce_weight: float = 50.0) -> ElectricPretrainer:
  """Electric with a two-tower generator of `generator_size` × the discriminator's width (each
  tower `generator_layers` × its depth), sharing its embeddings when `tie_embeddings`."""
  discriminator = TransformerEncoder(encoder_config, name="discriminator")
  generator = TwoTowerClozeModel(
      encoder_config.scaled(generator_size, generator_layers),
      embeddings=discriminator.embeddings if tie_embeddings else None, name="two_tower")
  return ElectricPretrainer(generator, discriminator, nce_weight=nce_weight, name="electric")

