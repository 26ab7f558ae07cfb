"""ELECTRA-TT: ELECTRA with Electric's two-tower cloze generator (dissertation §5.4.5).

The generator q is a two-tower cloze model run on the *unmasked* input, trained by maximum
likelihood on every position (L_q, as Electric's); replacements at the masked positions are drawn
from q and the discriminator is ELECTRA's sigmoid RTD head (negative sampling, labels by token
inequality). Loss L_q + λ·L_Disc. Because q is available at every position, ELECTRA-TT can score
text in one pass (§5.4.5): with D = P(original) = σ(−rtd_logit),

  log p(x_t | x∖t) ≈ log(k·q(x_t|x∖t)·D / (n·(1 − D))) = log q(x_t|x∖t) − rtd_logit_t + log(k/n)

with k/n the masking rate (`mask_prob`).
"""
import math
from typing import Dict

import gin
import tensorflow as tf
import tf_keras

from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.modeling.networks.two_tower import TwoTowerClozeModel
from official_rtd.ops import losses as losses_lib


class ElectraTTPretrainer(objectives.GeneratorDiscriminator):
  """ELECTRA's outputs plus `log_q_data` (`[batch, seq_len]` log q of the original tokens)."""

  def __init__(self, generator: TwoTowerClozeModel, discriminator: TransformerEncoder,
               mask_prob: float = 0.15, **kwargs):
    super().__init__(generator, discriminator, **kwargs)
    self.mask_prob = mask_prob

  def generator_logits(self, inputs, original_ids, training=None) -> Dict[str, tf.Tensor]:
    logits = self.generator(dict(inputs, input_word_ids=original_ids), training=training)["logits"]
    log_q = tf.nn.log_softmax(logits, axis=-1)
    return {"mlm_logits": tf.gather(logits, inputs["masked_lm_positions"], batch_dims=1),
            "log_q_data": tf.gather(log_q, original_ids, batch_dims=2)}

  def compute_losses(self, inputs, outputs):
    cloze = losses_lib.weighted_mean_loss(-outputs["log_q_data"], inputs["input_mask"])
    rtd = objectives.rtd_loss(inputs, outputs["rtd_logits"], outputs["rtd_labels"])
    total = cloze.value + self.detection_weight(self.rtd_weight) * rtd.value
    # `mlm_loss` is the generator's loss at the masked positions, comparable with ELECTRA's.
    return self.with_discriminator_mlm(inputs, outputs, {
        "total_loss": losses_lib.combined_loss(total, inputs), "cloze_loss": cloze,
        "rtd_loss": rtd, "mlm_loss": objectives.mlm_loss(inputs, outputs["mlm_logits"])})

  def build_metrics(self):
    return dict(super().build_metrics(),
                cloze_loss=tf_keras.metrics.Mean("cloze_loss"))

  def train_flops_per_example(self, seq_len, num_predictions):
    gen, disc = self.generator.config, self.discriminator.config
    embedding_lookup = seq_len * 2 * gen.embedding_size * (
        gen.vocab_size + gen.max_position_embeddings + gen.type_vocab_size)
    forward = (2 * flops.encoder_forward_flops(gen, seq_len) - embedding_lookup
               + flops.mlm_head_flops(2 * gen.hidden_size, gen.embedding_size, gen.vocab_size,
                                      seq_len)
               + flops.encoder_forward_flops(disc, seq_len)
               + flops.rtd_head_flops(disc.hidden_size, seq_len))
    return 2.0 * forward

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id):
    """One-pass PLL: Σ_t [log q(x_t|x∖t) − rtd_logit_t + log(k/n)] over positions 1..n−2."""
    del mask_id
    inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask,
              "input_type_ids": input_type_ids}
    log_q = tf.nn.log_softmax(self.generator(inputs, training=False)["logits"], axis=-1)
    log_q_data = tf.gather(log_q, tf.convert_to_tensor(input_word_ids), batch_dims=2)
    rtd_logits = self.replaced_token_logits(inputs)
    per_token = log_q_data - rtd_logits + math.log(self.mask_prob)
    return base.sum_inner_positions(per_token, input_mask)


@registry.register("electra_tt")
@gin.configurable
def build_electra_tt_pretrainer(encoder_config: EncoderConfig, generator_size: float = 0.25,
                                generator_layers: float = 1.0, tie_embeddings: bool = True,
                                temperature: float = 1.0, rtd_weight: float = 50.0,
                                mask_prob: float = 0.15) -> ElectraTTPretrainer:
  discriminator = TransformerEncoder(encoder_config, name="discriminator")
  generator = TwoTowerClozeModel(
      encoder_config.scaled(generator_size, generator_layers),
      embeddings=discriminator.embeddings if tie_embeddings else None, name="two_tower")
  return ElectraTTPretrainer(generator, discriminator, mask_prob=mask_prob,
                             rtd_weight=rtd_weight, temperature=temperature, name="electra_tt",
                             **objectives.masked_lm_warmup())
