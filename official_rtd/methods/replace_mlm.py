"""Replace MLM and All-Tokens MLM, the ELECTRA study's bridges between BERT and ELECTRA
(dissertation §5.4.3, Table 5.7). Both reuse ELECTRA's generator and sampling: the masked-out
tokens are replaced by generator samples instead of `[MASK]`, then

* Replace MLM: the model predicts the original tokens at the masked positions,
    L = L_MLM(generator) + E[ Σ_{t∈m} −log p(x_t | x^corrupt) ] / |m|;
* All-Tokens MLM: the model predicts the identity of *every* token with an explicit copy
  mechanism: a sigmoid copy probability D_t and p(x | x^corrupt)_t = D_t·1[x = x^corrupt_t]
  + (1 − D_t)·softmax(W h_t)_x, L = L_MLM(generator) + E[ Σ_t −log p(x_t | x^corrupt)_t ] / n.
"""
from typing import Optional

import gin
from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.ops import losses as losses_lib


class ReplaceMlmPretrainer(objectives.GeneratorDiscriminator):
  """ELECTRA's generator outputs plus `replace_mlm_logits` (`[batch, P, vocab]`), or with
  `all_tokens` `all_tokens_log_probs` (`[batch, seq_len]` log p of the original tokens) and
  `copy_logits` (`[batch, seq_len]`)."""
  # No detector to warm up: its discriminator is a masked LM throughout.
  supports_warmup = False

  def __init__(self, generator, discriminator, all_tokens: bool = False, **kwargs):
    super().__init__(generator, discriminator, **kwargs)
    config = discriminator.config
    self.all_tokens = all_tokens
    self.model_lm = layers.MaskedLM(
        embedding_table=discriminator.get_embedding_table(), activation=transformer_encoder.gelu,
        initializer=transformer_encoder.initializer(config), output="logits", name="model_lm")
    self.copy_head = tf_keras.layers.Dense(
        1, kernel_initializer=transformer_encoder.initializer(config), name="copy")

  def discriminator_heads(self, discriminator_output, inputs, outputs, training=None):
    sequence = discriminator_output["sequence_output"]
    if not self.all_tokens:
      return {"replace_mlm_logits": tf.cast(
          self.model_lm(sequence, inputs["masked_lm_positions"]), tf.float32)}
    seq_len = tf.shape(sequence)[1]
    positions = tf.tile(tf.range(seq_len)[tf.newaxis], [tf.shape(sequence)[0], 1])
    log_softmax = tf.nn.log_softmax(tf.cast(self.model_lm(sequence, positions), tf.float32), -1)
    copy_logits = tf.cast(tf.squeeze(self.copy_head(sequence), -1), tf.float32)
    log_d, log_not_d = -tf.nn.softplus(-copy_logits), -tf.nn.softplus(copy_logits)
    generated = log_not_d + tf.gather(log_softmax, outputs["original_ids"], batch_dims=2)
    copied = tf.equal(outputs["corrupted_ids"], outputs["original_ids"])
    log_p = tf.where(copied, tf.math.reduce_logsumexp(tf.stack([log_d, generated]), 0), generated)
    return {"all_tokens_log_probs": log_p, "copy_logits": copy_logits}

  def compute_losses(self, inputs, outputs):
    generator = objectives.mlm_loss(inputs, outputs["mlm_logits"])
    if self.all_tokens:
      model = losses_lib.weighted_mean_loss(-outputs["all_tokens_log_probs"],
                                            inputs["input_mask"])
    else:
      model = objectives.mlm_loss(inputs, outputs["replace_mlm_logits"])
    return {"total_loss": losses_lib.combined_loss(generator.value + model.value, inputs),
            "mlm_loss": generator, "model_loss": model}

  def build_metrics(self):
    m = tf_keras.metrics
    return {"total_loss": m.Mean("total_loss"), "mlm_loss": m.Mean("mlm_loss"),
            "model_loss": m.Mean("model_loss"),
            "mlm_accuracy": m.SparseCategoricalAccuracy("mlm_accuracy")}

  def update_metrics(self, metrics, inputs, outputs, losses):
    base.update_loss_metrics(metrics, losses)
    metrics["mlm_accuracy"].update_state(inputs["masked_lm_ids"], outputs["mlm_logits"],
                                         sample_weight=inputs["masked_lm_weights"])

  def replaced_token_logits(self, inputs):
    return None

  def exported_heads(self):
    return super().exported_heads()._replace(rtd_head=None)  # no replaced-token detector

  def train_flops_per_example(self, seq_len, num_predictions):
    disc = self.discriminator.config
    predicted = seq_len if self.all_tokens else num_predictions
    head = 2 * disc.hidden_size * disc.embedding_size + 2 * disc.embedding_size * disc.vocab_size
    return (super().train_flops_per_example(seq_len, num_predictions)
            + 2.0 * predicted * head)


@registry.register("replace_mlm")
@gin.configurable
def build_replace_mlm_pretrainer(encoder_config: EncoderConfig, all_tokens: bool = False,
                                 generator_size: float = 0.25,
                                 embedding_sharing: Optional[str] = None,
                                 tie_embeddings: Optional[bool] = None,
                                 temperature: float = 1.0) -> ReplaceMlmPretrainer:
  """`embedding_sharing`: see `objectives.build_encoders` (`tie_embeddings`: its older
  spelling)."""
  generator, discriminator = objectives.build_encoders(
      encoder_config, generator_size,
      embedding_sharing=objectives.embedding_sharing_mode(embedding_sharing, tie_embeddings))
  return ReplaceMlmPretrainer(generator, discriminator, all_tokens=all_tokens,
                              temperature=temperature,
                              name="all_tokens_mlm" if all_tokens else "replace_mlm",
                              **objectives.masked_lm_warmup())
