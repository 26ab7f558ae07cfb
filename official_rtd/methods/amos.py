"""AMOS: adversarial mixture of training signal generators (Meng et al., ICLR 2022).

One generator of depth d_K with an MLM head (shared parameters) after each layer d ∈ 𝒟 =
{d_1 < … < d_K}; the gradient stops between blocks at each d < d_K, so block k trains only on its
own head's loss:

  (eq. 2)  p_MLM(x_t | h_i^(d)) = softmax(E h_i^(d)),
           L_GEN = E[ Σ_{i∈m} Σ_{d∈𝒟} −log p_MLM(x_i | h_i^(d)) ]
  (eq. 3)  γ_i^(d) = softmax_d(vᵀ f_i^(d)),  h̄_i = Σ_d γ_i^(d) h_i^(d),
           p_MLM(x_t | h̄_i) = softmax(E h̄_i)
  (eq. 4)  θ_GEN, v ← argmin L_GEN − λ L_DISC;   θ_DISC ← argmin L_DISC

f^(d) is layer d's output, h^(d) the MLM head's projection of it. Because the output layer is
affine and Σ_d γ^(d) = 1, E h̄ + b = Σ_d γ^(d) (E h^(d) + b): the mixture is taken over the heads'
logits, which eq. 2 needs anyway. Replacements are drawn with Gumbel-softmax at temperature τ
(straight-through: the discriminator sees the hard sample's embedding, built differentiably from
the one-hot), and the discriminator's gradient reaches γ through a gradient reversal layer, so v
and the generator body under f^(d) ascend L_DISC while the h^(d) (and the MLM head's parameters)
get none of it (`adversarial_mlm_scale` > 0 lets a reversed, scaled share reach them: Table 4's
"+ adv. MLM"). The generator runs without dropout; the discriminator is ELECTRA's (RTD, λ = 50).

Losses: `generator_loss` is eq. 2's Σ_d (what is minimised, with `mlm_loss_layer_<d>` each term);
`mlm_loss` is the cross-entropy of the mixture p_MLM(x_t | h̄) the replacements are drawn from (the
figure comparable with ELECTRA's generator loss, and what `mlm_perplexity` and `mlm_accuracy`
describe); it is reported, not trained.

Table 4 ablations: `mixture="random_layer"` (one head per position, uniformly), `"layer_switch"`
(d_1 → d_2 → … at `layer_switch_steps` optimizer steps, read from the trainer's optimizer),
`"average"` (γ uniform, no adversarial training);
`stop_gradient_between_blocks=False`; a single head (`mlm_layers=(4,)`) is the single-generator
baseline. Table 4's "separate MLM generators" variant is not implemented. The paper's T5 relative
positions are an encoder option (`EncoderConfig.position_embedding = "t5_relative"`, on in
gin/tasks/amos.gin).
"""
import dataclasses
from typing import Dict, Sequence

import gin
import tensorflow as tf
import tf_keras

from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.ops import gradient_reversal
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.ops.losses import Loss

MIXTURES = ("adversarial", "average", "random_layer", "layer_switch")
LAYER_SALT = 1  # random_layer's choice is independent of the Gumbel noise


class AmosPretrainer(objectives.GeneratorDiscriminator):
  """`call` returns ELECTRA's outputs (`mlm_logits` are the mixture's, `[batch, P, vocab]`) plus
  `depth_mlm_logits` (`[K, batch, P, vocab]`, one per head) and `mixture_weights` γ
  (`[batch, P, K]`)."""

  def __init__(self, generator: TransformerEncoder, discriminator: TransformerEncoder,
               mlm_layers: Sequence[int], mixture: str = "adversarial",
               temperature: float = 0.3, adversarial_scale: float = 1.0,
               adversarial_mlm_scale: float = 0.0, layer_switch_steps: Sequence[int] = (),
               rtd_weight: float = 50.0, straight_through: bool = True, **kwargs):
    super().__init__(generator, discriminator, rtd_weight=rtd_weight, **kwargs)
    if mixture not in MIXTURES:
      raise ValueError(f"AMOS mixture must be one of {MIXTURES}, got {mixture!r}")
    if list(mlm_layers) != sorted(set(mlm_layers)) or not mlm_layers:
      raise ValueError(f"mlm_layers must be increasing layer numbers, got {mlm_layers}")
    if mlm_layers[0] < 1 or mlm_layers[-1] > len(generator.transformer_layers):
      raise ValueError(f"mlm_layers {tuple(mlm_layers)} must lie in 1.."
                       f"{len(generator.transformer_layers)} (the generator's depth)")
    if mixture == "layer_switch" and len(layer_switch_steps) != len(mlm_layers) - 1:
      raise ValueError(f"mixture='layer_switch' needs {len(mlm_layers) - 1} layer_switch_steps "
                       f"(the steps at which to move to the next head), got {layer_switch_steps}")
    if temperature <= 0:
      raise ValueError(f"Gumbel-softmax temperature must be > 0, got {temperature}")
    self.mlm_layers = tuple(mlm_layers)
    self.mixture = mixture
    self.temperature = temperature
    self.adversarial_scale = adversarial_scale
    self.adversarial_mlm_scale = adversarial_mlm_scale
    self.layer_switch_steps = tuple(layer_switch_steps)
    # False feeds the soft relaxation ŷ itself to the discriminator (a differentiable forward,
    # e.g. for gradient checks); True is the paper's hard sample.
    self.straight_through = straight_through
    self.mixture_scorer = tf_keras.layers.Dense(1, use_bias=False, name="mixture_v")  # v

  def mixture_weights(self, f, seed=None):
    """γ: `[batch, P, K]` from the heads' inputs f (`[K, batch, P, hidden]`), rows sum to 1."""
    k = len(self.mlm_layers)
    scores = tf.transpose(tf.cast(tf.squeeze(self.mixture_scorer(f), -1), tf.float32), [1, 2, 0])
    if self.mixture == "adversarial":
      return tf.nn.softmax(scores, axis=-1)                       # eq. 3
    if self.mixture == "average":
      return tf.ones_like(scores) / k
    if self.mixture == "random_layer":
      shape = tf.shape(scores)[:2]
      choice = (tf.random.stateless_uniform(shape, sampling.salted(seed, LAYER_SALT), maxval=k,
                                            dtype=tf.int32)
                if seed is not None else tf.random.uniform(shape, maxval=k, dtype=tf.int32))
    else:  # layer_switch: head j once training has passed j switch steps
      passed = tf.reduce_sum(tf.cast(
          self.training_step() >= tf.constant(self.layer_switch_steps, tf.int64), tf.int32))
      choice = tf.fill(tf.shape(scores)[:2], passed)
    return tf.one_hot(choice, k, dtype=tf.float32)

  def call(self, inputs, training=None):
    positions = inputs["masked_lm_positions"]
    original_ids = sampling.unmask(inputs)
    # The generator runs without dropout (AMOS follows COCO-LM); its blocks are cut by
    # stop-gradient at every head but the last (see build_amos_pretrainer).
    layer_outputs = self.generator(inputs, training=False)["encoder_outputs"]
    f = tf.stack([tf.gather(layer_outputs[d - 1], positions, batch_dims=1)
                  for d in self.mlm_layers])                                  # [K, batch, P, H]
    depth_logits = tf.stack([tf.cast(self.masked_lm(layer_outputs[d - 1], positions), tf.float32)
                             for d in self.mlm_layers])                       # [K, batch, P, V]
    seed = inputs.get("sampling_seed")
    gamma = self.mixture_weights(f, seed)                                     # [batch, P, K]
    # eq. 3 over logits; γ carries the reversed discriminator gradient, the heads none (or a
    # reversed, scaled share with adversarial_mlm_scale).
    mixed_logits = tf.einsum(
        "bpk,kbpv->bpv", gradient_reversal.reverse_gradient(gamma, self.adversarial_scale),
        gradient_reversal.reverse_gradient(depth_logits, self.adversarial_mlm_scale))
    relaxed, sampled_ids = sampling.gumbel_softmax(
        mixed_logits, self.temperature, hard=self.straight_through,
        gumbel_noise=inputs.get("gumbel_noise"), seed=seed)
    corrupted_ids = sampling.scatter_positions(original_ids, positions, sampled_ids,
                                               inputs["masked_lm_weights"])
    # The discriminator's token embeddings at the masked positions: the look-up of the sample plus
    # a zero-valued term that carries the gradient back to the relaxed one-hot (straight-through),
    # or the relaxed one-hot times the table itself.
    table = self.discriminator.get_embedding_table()
    if self.straight_through:
      masked_embeddings = tf.gather(table, sampled_ids) + tf.cast(tf.einsum(
          "bpv,ve->bpe", relaxed - tf.stop_gradient(relaxed),
          tf.cast(tf.stop_gradient(table), tf.float32)), table.dtype)
    else:
      masked_embeddings = tf.cast(tf.einsum("bpv,ve->bpe", relaxed, tf.cast(table, tf.float32)),
                                  table.dtype)
    word_embeddings = sampling.scatter_vectors(tf.gather(table, corrupted_ids), positions,
                                               masked_embeddings, inputs["masked_lm_weights"])
    discriminator_ids = self.discriminator_input_ids(inputs, corrupted_ids)
    if self.masked_warmup:  # before rtd_start_step: the masked input's own embeddings
      word_embeddings = tf.where(self.training_step() < self.rtd_start_step,
                                 tf.gather(table, discriminator_ids), word_embeddings)
    discriminator_output = self.discriminator(
        dict(inputs, input_word_ids=discriminator_ids, input_word_embeddings=word_embeddings),
        training=training)
    outputs = {"mlm_logits": mixed_logits, "depth_mlm_logits": depth_logits,
               "mixture_weights": gamma, "sampled_ids": sampled_ids,
               "original_ids": original_ids, "corrupted_ids": corrupted_ids,
               "rtd_labels": tf.cast(tf.not_equal(corrupted_ids, original_ids), tf.float32)}
    outputs.update(self.discriminator_heads(discriminator_output, inputs, outputs, training))
    outputs.update(self.discriminator_mlm_logits(discriminator_output, inputs))
    return outputs

  def compute_losses(self, inputs, outputs) -> Dict[str, Loss]:
    depth_losses = [objectives.mlm_loss(inputs, logits) for logits in
                    tf.unstack(outputs["depth_mlm_logits"], num=len(self.mlm_layers))]
    generator = Loss(tf.add_n([loss.value for loss in depth_losses]),        # eq. 2
                     depth_losses[0].weight)
    rtd = objectives.rtd_loss(inputs, outputs["rtd_logits"], outputs["rtd_labels"])
    rtd_weight = self.detection_weight(self.rtd_weight)  # λ, 0 before rtd_start_step
    losses = {"total_loss": losses_lib.combined_loss(generator.value + rtd_weight * rtd.value,
                                                     inputs),
              "generator_loss": generator, "rtd_loss": rtd,
              "mlm_loss": objectives.mlm_loss(inputs, outputs["mlm_logits"])}
    for d, loss in zip(self.mlm_layers, depth_losses):
      losses[f"mlm_loss_layer_{d}"] = loss
    return self.with_discriminator_mlm(inputs, outputs, losses)

  def build_metrics(self):
    metrics = dict(super().build_metrics(), generator_loss=tf_keras.metrics.Mean("generator_loss"))
    for d in self.mlm_layers:
      metrics[f"mlm_loss_layer_{d}"] = tf_keras.metrics.Mean(f"mlm_loss_layer_{d}")
      metrics[f"mixture_weight_layer_{d}"] = tf_keras.metrics.Mean(f"mixture_weight_layer_{d}")
    return metrics

  def update_metrics(self, metrics, inputs, outputs, losses):
    super().update_metrics(metrics, inputs, outputs, losses)
    for j, d in enumerate(self.mlm_layers):  # Figure 5(a): mean γ of each head
      metrics[f"mixture_weight_layer_{d}"].update_state(
          outputs["mixture_weights"][..., j], sample_weight=inputs["masked_lm_weights"])

  def train_flops_per_example(self, seq_len, num_predictions):
    gen, disc = self.generator.config, self.discriminator.config
    forward = (flops.encoder_forward_flops(gen, seq_len)
               + len(self.mlm_layers) * flops.mlm_head_flops(
                   gen.hidden_size, gen.embedding_size, gen.vocab_size, num_predictions)
               + flops.encoder_forward_flops(disc, seq_len)
               + flops.rtd_head_flops(disc.hidden_size, seq_len))
    return 2.0 * forward


@registry.register("amos")
@gin.configurable
def build_amos_pretrainer(encoder_config: EncoderConfig, mlm_layers: Sequence[int] = (4, 6, 8),
                          generator_size: float = 1.0, mixture: str = "adversarial",
                          temperature: float = 0.3, adversarial_scale: float = 1.0,
                          adversarial_mlm_scale: float = 0.0,
                          stop_gradient_between_blocks: bool = True,
                          layer_switch_steps: Sequence[int] = (),
                          rtd_weight: float = 50.0,
                          embedding_sharing: str = "shared") -> AmosPretrainer:
  """Builds AMOS.

  Args:
    encoder_config: the discriminator.
    mlm_layers: 𝒟, 1-based generator layers with an MLM head; the generator has max(𝒟) layers
      (paper: 4, 6, 8 for a 12-layer discriminator).
    generator_size: width multiplier (paper: 1.0, the discriminator's width).
    mixture: "adversarial" (AMOS), "average", "random_layer" or "layer_switch" (Table 4).
    temperature: Gumbel-softmax τ (paper: 0.3).
    adversarial_scale: multiplier of the reversed discriminator gradient into γ.
    adversarial_mlm_scale: the same into the heads' outputs ("+ adv. MLM"; paper tried 0.1).
    stop_gradient_between_blocks: False is Table 4's "− stop grad."
    layer_switch_steps: with "layer_switch", the K − 1 steps at which to move to the next head
      (paper: 1/3 and 2/3 of training).
    rtd_weight: λ (paper: 50).
    embedding_sharing: see `objectives.build_embedding_pair` (paper: "shared").
  """
  depth = mlm_layers[-1]
  config = encoder_config.scaled(generator_size)
  discriminator_embeddings, generator_embeddings = objectives.build_embedding_pair(
      encoder_config, embedding_sharing)
  discriminator = TransformerEncoder(encoder_config, embeddings=discriminator_embeddings,
                                     name="discriminator")
  generator = TransformerEncoder(
      dataclasses.replace(config, num_layers=depth), embeddings=generator_embeddings,
      stop_gradient_after=mlm_layers[:-1] if stop_gradient_between_blocks else (),
      name="generator")
  return AmosPretrainer(generator, discriminator, mlm_layers, mixture=mixture,
                        temperature=temperature, adversarial_scale=adversarial_scale,
                        adversarial_mlm_scale=adversarial_mlm_scale,
                        layer_switch_steps=layer_switch_steps, rtd_weight=rtd_weight, name="amos",
                        **objectives.masked_lm_warmup())
