"""SCRIPT: self-critic pre-training (Nijkamp et al.): one model is its own generator and critic.

A single encoder with a softmax output layer (tied to the token embeddings, no extra parameters):

  MLM pass on x̂ (15% masked, 80/10/10):  π_t = p_θ(x_t | x̂),
      L_MLM = E[−log π_t(x_t)] over masked t
  sampling (eq. 3): x̄_t = argmax_v (log π_tv + g_v), g ~ Gumbel(0, 1), at masked positions only
  critic pass on x̄ with the same weights, logits s_t = W e_t over the vocabulary (eq. 4–5):
      p(t⁻ | x̄) = 1 / (Σ_v exp(s_tv) + 1) = σ(−LSE(s_t)),   p(t⁺ | x̄) = σ(LSE(s_t))
  L_Disc = E[ −1(x̄_t = x_t) log p(t⁺|x̄) − 1(x̄_t ≠ x_t) log p(t⁻|x̄) ] over non-pad t   (eq. 6)
  min L_MLM + α·L_Disc, α = 50; two forward passes, one backward pass.
  (Not the paper's: with `critic_start_step` > 0, α = 0 before that step, a masked-LM warm-up as
  the ELECTRA family's; the two passes still run.)

A position is negative iff its sample differs from the *original* token x_t (not from the masked
input): a masked position whose sample equals x_t is positive. The samples are discrete inputs
under stop-gradient: L_Disc reaches θ through the critic pass only, never back through the
sampling into the MLM pass. The critic is computed in log space: log p(t⁺) = −softplus(−LSE),
log p(t⁻) = −softplus(LSE).

Reading eq. 3. It writes the Gumbel-softmax relaxation y = softmax((log π + g)/τ) of Jang et al.
(2016) and says the replacement is "sampled from a Gumbel-Softmax distribution". Two readings:
(A) the token is the relaxation's discrete value argmax_v y_v = argmax_v (log π_v + g_v) (Jang et
al.'s hard / straight-through sample), an exact draw from π for every τ; (B) a second categorical
draw from y, which is a draw from π only as τ → 0 and is flattened towards uniform as τ grows (at
τ = 1 on a Zipf π whose top token has p = 0.94, the top token is drawn 72% of the time and the mass
beyond rank 100 grows from 1.5% to 10%). We implement (A), because: the paper's §3 defines x̄_t as
"a token sampled from p_θ(x_t | x̂)", which only (A) satisfies at any τ; SCRIPT's samples are
discrete inputs under stop-gradient, so the relaxation itself is never used and τ cannot matter,
consistent with τ appearing in none of the paper's hyper-parameter tables (Table 4); and ELECTRA,
which SCRIPT compares against, samples with Gumbel-max at temperature 1. The authors' code is not in
any public source we could search (the search tool's code and issue indexes, 2026-11), so this
rests on the paper's text. `temperature` is therefore the ordinary sampling temperature of
ELECTRA (x̄_t ~ softmax(log π_t / T)); 1.0, the default, is the paper's p_θ.
"""
from typing import Dict

import gin
from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.ops.losses import Loss


def critic_log_probabilities(logits: tf.Tensor):
  """(log p(t⁺), log p(t⁻)) from `[..., vocab]` logits, stable for large logits (eq. 4–5)."""
  lse = tf.reduce_logsumexp(tf.cast(logits, tf.float32), axis=-1)
  return -tf.nn.softplus(-lse), -tf.nn.softplus(lse)


class ScriptPretrainer(base.PretrainingModel):
  """`call` returns `mlm_logits` (`[batch, num_predictions, vocab]`), `sampled_ids`,
  `original_ids`, `critic_ids` (x̄), `negative` (`[batch, seq_len]` 1.0 where x̄_t ≠ x_t) and the
  critic's `log_p_positive`, `log_p_negative` (`[batch, seq_len]`)."""

  def __init__(self, encoder: TransformerEncoder, disc_weight: float = 50.0,
               temperature: float = 1.0, critic_start_step: int = 0, **kwargs):
    super().__init__(**kwargs)
    if critic_start_step < 0:
      raise ValueError(f"build_script_pretrainer.critic_start_step = {critic_start_step} must be "
                       ">= 0")
    self.encoder = encoder
    self.disc_weight = disc_weight
    self.temperature = temperature
    self.critic_start_step = critic_start_step
    self.masked_lm = layers.MaskedLM(
        embedding_table=encoder.get_embedding_table(), activation=transformer_encoder.gelu,
        initializer=transformer_encoder.initializer(encoder.config), output="logits",
        name="mlm")

  def critic(self, inputs, training=None):
    """(log p(t⁺), log p(t⁻)) at every position of `inputs["input_word_ids"]`."""
    sequence = self.encoder(inputs, training=training)["sequence_output"]
    seq_len = tf.shape(sequence)[1]
    positions = tf.tile(tf.range(seq_len)[tf.newaxis], [tf.shape(sequence)[0], 1])
    return critic_log_probabilities(self.masked_lm(sequence, positions))

  def call(self, inputs, training=None):
    sequence = self.encoder(inputs, training=training)["sequence_output"]
    mlm_logits = tf.cast(self.masked_lm(sequence, inputs["masked_lm_positions"]), tf.float32)
    original_ids = sampling.unmask(inputs)
    # eq. 3, read as the relaxation's discrete value: x̄_t = argmax(log π_t + g) ~ π_t.
    sampled_ids = tf.stop_gradient(sampling.sample(
        mlm_logits, self.temperature, gumbel_noise=inputs.get("gumbel_noise"),
        seed=inputs.get("sampling_seed")))
    critic_ids = sampling.scatter_positions(original_ids, inputs["masked_lm_positions"],
                                            sampled_ids, inputs["masked_lm_weights"])
    negative = tf.cast(tf.not_equal(critic_ids, original_ids), tf.float32)
    log_p_positive, log_p_negative = self.critic(dict(inputs, input_word_ids=critic_ids),
                                                 training=training)
    return {"mlm_logits": mlm_logits, "sampled_ids": sampled_ids, "original_ids": original_ids,
            "critic_ids": critic_ids, "negative": negative, "log_p_positive": log_p_positive,
            "log_p_negative": log_p_negative}

  def compute_losses(self, inputs, outputs) -> Dict[str, Loss]:
    mlm = objectives.mlm_loss(inputs, outputs["mlm_logits"])
    per_position = -(outputs["negative"] * outputs["log_p_negative"]
                     + (1.0 - outputs["negative"]) * outputs["log_p_positive"])
    critic = losses_lib.weighted_mean_loss(per_position, inputs["input_mask"])   # eq. 6
    alpha = self.detection_weight(self.disc_weight)  # 0 until critic_start_step (a warm-up)
    return {"total_loss": losses_lib.combined_loss(mlm.value + alpha * critic.value, inputs),
            "mlm_loss": mlm, "critic_loss": critic}

  def detection_start_step(self) -> int:
    return self.critic_start_step

  def detection_start_setting(self) -> str:
    return "build_script_pretrainer.critic_start_step"

  def build_metrics(self):
    m = tf_keras.metrics
    return {"total_loss": m.Mean("total_loss"), "mlm_loss": m.Mean("mlm_loss"),
            "mlm_accuracy": m.SparseCategoricalAccuracy("mlm_accuracy"),
            "critic_loss": m.Mean("critic_loss"),
            "critic_accuracy": m.BinaryAccuracy("critic_accuracy"),
            "critic_auc": m.AUC(name="critic_auc"),
            # apart, as ELECTRA's: the collapse warning reads them
            "critic_accuracy_original": m.BinaryAccuracy("critic_accuracy_original"),
            "critic_accuracy_replaced": m.BinaryAccuracy("critic_accuracy_replaced"),
            "replaced_fraction": m.Mean("replaced_fraction")}

  def update_metrics(self, metrics, inputs, outputs, losses):
    base.update_loss_metrics(metrics, losses)
    metrics["mlm_accuracy"].update_state(inputs["masked_lm_ids"], outputs["mlm_logits"],
                                         sample_weight=inputs["masked_lm_weights"])
    objectives.update_detection_metrics(metrics, "critic_", outputs["negative"],
                                        tf.exp(outputs["log_p_negative"]), inputs)
    objectives.update_replaced_fraction(metrics, inputs, outputs["sampled_ids"])

  @property
  def exported_encoder(self):
    return self.encoder

  def train_flops_per_example(self, seq_len, num_predictions):
    config = self.encoder.config
    forward = (2 * flops.encoder_forward_flops(config, seq_len)
               + flops.mlm_head_flops(config.hidden_size, config.embedding_size,
                                      config.vocab_size, num_predictions + seq_len))
    return 2.0 * forward

  def replaced_token_logits(self, inputs):
    log_p_positive, log_p_negative = self.critic(inputs, training=False)
    return log_p_negative - log_p_positive

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id):
    """Self-critic PLL (eq. 7): Σ_t log p(t⁺ | x) over positions 1..n−2, one pass."""
    del mask_id
    log_p_positive, _ = self.critic({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                     "input_type_ids": input_type_ids}, training=False)
    return base.sum_inner_positions(log_p_positive, input_mask)


@registry.register("script")
@gin.configurable
def build_script_pretrainer(encoder_config: EncoderConfig, disc_weight: float = 50.0,
                            temperature: float = 1.0,
                            critic_start_step: int = 0) -> ScriptPretrainer:
  """SCRIPT; `critic_start_step` > 0 trains the masked LM alone until that step (the critic's
  weight α is 0 before it: SCRIPT's own masked-LM warm-up, `gin/recipes/script_warmup.gin`)."""
  return ScriptPretrainer(TransformerEncoder(encoder_config, name="encoder"),
                          disc_weight=disc_weight, temperature=temperature,
                          critic_start_step=critic_start_step, name="script")
