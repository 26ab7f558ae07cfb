"""BERT masked language modeling, the baseline of the ELECTRA study (dissertation §5.4.3).

The discriminator-size encoder predicts the original tokens at the masked positions (15%; the
input pipeline's masking strategy decides [MASK]/random/kept):
  L_MLM = E[ Σ_{t∈m} −log p(x_t | x^masked) ] / |m|
No generator. The output layer is tied to the token embeddings.
"""
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


class MlmPretrainer(base.PretrainingModel):
  """`call` returns `mlm_logits` (`[batch, num_predictions, vocab]`)."""

  def __init__(self, encoder: TransformerEncoder, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.masked_lm = layers.MaskedLM(
        embedding_table=encoder.get_embedding_table(), activation=transformer_encoder.gelu,
        initializer=transformer_encoder.initializer(encoder.config), output="logits", name="mlm")

  def call(self, inputs, training=None):
    sequence = self.encoder(inputs, training=training)["sequence_output"]
    return {"mlm_logits": tf.cast(self.masked_lm(sequence, inputs["masked_lm_positions"]),
                                  tf.float32)}

  def compute_losses(self, inputs, outputs):
    loss = objectives.mlm_loss(inputs, outputs["mlm_logits"])
    return {"total_loss": loss, "mlm_loss": loss}

  def build_metrics(self):
    m = tf_keras.metrics
    return {"total_loss": m.Mean("total_loss"), "mlm_loss": m.Mean("mlm_loss"),
            "mlm_accuracy": m.SparseCategoricalAccuracy("mlm_accuracy")}

  def update_metrics(self, metrics, inputs, outputs, losses):
    base.update_loss_metrics(metrics, losses)
    metrics["mlm_accuracy"].update_state(inputs["masked_lm_ids"], outputs["mlm_logits"],
                                         sample_weight=inputs["masked_lm_weights"])

  @property
  def exported_encoder(self):
    return self.encoder

  def train_flops_per_example(self, seq_len, num_predictions):
    c = self.encoder.config
    return 2.0 * (flops.encoder_forward_flops(c, seq_len) + flops.mlm_head_flops(
        c.hidden_size, c.embedding_size, c.vocab_size, num_predictions))

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id):
    return objectives.masked_lm_pll(self.encoder, self.masked_lm, input_word_ids, input_mask,
                                 input_type_ids, mask_id)

  def masked_language_model(self):
    return self.encoder, self.masked_lm


@registry.register("mlm")
@gin.configurable
def build_mlm_pretrainer(encoder_config: EncoderConfig) -> MlmPretrainer:
  return MlmPretrainer(TransformerEncoder(encoder_config, name="encoder"), name="mlm")
