"""ELECTRA with a parameter-free generator (dissertation §5.3.2): replacements drawn from the
corpus unigram distribution (`unigram`) or uniformly over the non-special tokens (`uniform`).

There is nothing to train on the generator side, so the loss is λ·L_Disc alone; labels, sampling
and the discriminator are ELECTRA's. Unigram counts come from one counting pass over the training
records (`Trainer` hands `token_counts` to builders that ask for them).
"""
import gin
import numpy as np
import tensorflow as tf

from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.ops import losses as losses_lib

DISTRIBUTIONS = ("unigram", "uniform")


class NoiseGeneratorElectra(objectives.GeneratorDiscriminator):
  """`mlm_logits` are the fixed noise log-probabilities, broadcast to `[batch, P, vocab]`."""

  def __init__(self, discriminator: TransformerEncoder, log_probs: np.ndarray, **kwargs):
    super().__init__(None, discriminator, **kwargs)
    self.noise_log_probs = tf.constant(log_probs, tf.float32)

  def generator_logits(self, inputs, original_ids, training=None):
    del original_ids, training
    positions = inputs["masked_lm_positions"]
    shape = tf.concat([tf.shape(positions), tf.shape(self.noise_log_probs)], 0)
    return {"mlm_logits": tf.broadcast_to(self.noise_log_probs, shape)}

  def compute_losses(self, inputs, outputs):
    rtd = objectives.rtd_loss(inputs, outputs["rtd_logits"], outputs["rtd_labels"])
    total = self.detection_weight(self.rtd_weight) * rtd.value
    return self.with_discriminator_mlm(inputs, outputs, {
        "total_loss": losses_lib.combined_loss(total, inputs), "rtd_loss": rtd})

  def train_flops_per_example(self, seq_len, num_predictions):
    disc = self.discriminator.config
    return 2.0 * (flops.encoder_forward_flops(disc, seq_len)
                  + flops.rtd_head_flops(disc.hidden_size, seq_len))

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id):
    return None


def noise_log_probs(distribution: str, vocab, token_counts=None) -> np.ndarray:
  """`[vocab]` log-probabilities; special tokens get probability 0."""
  if distribution not in DISTRIBUTIONS:
    raise ValueError(f"generator distribution must be one of {DISTRIBUTIONS}, got "
                     f"{distribution!r}")
  weights = np.ones(vocab.size) if distribution == "uniform" else np.asarray(
      token_counts, np.float64)
  weights = np.where(vocab.is_special(), 0.0, weights)
  if weights.sum() <= 0:
    raise ValueError("the unigram generator needs token counts with some non-special tokens")
  with np.errstate(divide="ignore"):
    return np.log(weights / weights.sum()).astype(np.float32).clip(min=-1e4)


@registry.register("electra_noise_generator", needs=("vocab", "token_counts"))
@gin.configurable
def build_noise_generator_electra(encoder_config: EncoderConfig, vocab=None, token_counts=None,
                                  distribution: str = "unigram",
                                  rtd_weight: float = 50.0) -> NoiseGeneratorElectra:
  if vocab is None:
    raise ValueError("a unigram/uniform generator needs the vocab")
  return NoiseGeneratorElectra(
      TransformerEncoder(encoder_config, name="discriminator"),
      noise_log_probs(distribution, vocab, token_counts), rtd_weight=rtd_weight,
      name=f"electra_{distribution}_generator", **objectives.masked_lm_warmup())
