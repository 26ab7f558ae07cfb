"""TEAMS: Training ELECTRA Augmented with Multi-word Selection (Shen et al., ACL Findings 2021).

ELECTRA's generator (the discriminator's width, `generator_layers` × its depth, bottom
`num_shared_generator_layers` layers *shared* with the discriminator) fills the masked positions
with one sample each (x^R, as ELECTRA) and proposes, for each masked position, a candidate set
S = {x_t} ∪ K non-original tokens drawn from P_G without replacement (`sampled`) or the K most
likely (`hardest`). The discriminator learns

  RTD (eq. 6, 4): every position, from the last (L-th) layer;
  MWS (eq. 7–8): P_D(x_t | x^R, S_t) = softmax_{c∈S_t}(e(c)ᵀ h^MWS_t), L_MWS = −log P_D(x_t | …),
      where h^MWS comes from one extra Transformer layer on the (L−1)-th layer's output
      (attention-based task heads, §3.3);
  min L_MLM + λ1·L_RTD + λ2·L_MWS, λ1 = 5, λ2 = 2                                   (eq. 9)

Sign convention as ELECTRA here: `rtd_logits` > 0 means "replaced" (eq. 6's w is its negation).
Table 3's task-head variants (`task_heads`): "attention" (the above); "attention_last" ("add task
head on 12th layer", §4.3): two separate Transformer layers on top of layer L, one feeding the RTD
head and one the MWS head, an effectively (L+1)-layer discriminator; "ffn": both heads on layer L's
output with no task layer. The export is a task branch: the MWS branch (embeddings, layers
1..L−1 or 1..L, the MWS layer; footnote 3) by default, or the RTD branch (`export_branch="rtd"`).
"Share the bottom half" is read as half of the generator's layers (`num_shared_generator_layers`
defaults to generator depth // 2); full tie shares all of them, no tie none (Table 4).
"""
import gin
import tensorflow as tf
import tf_keras

from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.mws_head import MultiWordSelectionHead
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling

TASK_HEADS = ("attention", "attention_last", "ffn")
CANDIDATE_SALT = 1  # the candidates' noise is independent of the replacement sample's


class TeamsPretrainer(objectives.GeneratorDiscriminator):
  """ELECTRA's outputs plus `candidates` (`[batch, P, K+1]`, original first) and `mws_logits`
  (`[batch, P, K+1]`)."""

  def __init__(self, generator, discriminator, excluded_ids, num_candidates: int = 5,
               candidate_mode: str = "sampled", task_heads: str = "attention",
               mws_weight: float = 2.0, export_branch: str = "mws", **kwargs):
    super().__init__(generator, discriminator, **kwargs)
    if task_heads not in TASK_HEADS:
      raise ValueError(f"task_heads must be one of {TASK_HEADS}, got {task_heads!r}")
    if export_branch not in ("mws", "rtd"):
      raise ValueError(f"export_branch must be 'mws' or 'rtd', got {export_branch!r}")
    config = discriminator.config
    self.excluded = tf.constant(excluded_ids)
    self.num_candidates = num_candidates
    self.candidate_mode = candidate_mode
    self.task_heads = task_heads
    self.mws_weight = mws_weight
    self.export_branch = export_branch
    task_layer = lambda name: transformer_encoder.transformer_block(
        config, name, position_bias=discriminator.position_bias)
    self.mws_layer = None if task_heads == "ffn" else task_layer("mws_task_layer")
    self.rtd_layer = task_layer("rtd_task_layer") if task_heads == "attention_last" else None
    self.mws_head = MultiWordSelectionHead(
        discriminator.get_embedding_table(), transformer_encoder.gelu,
        transformer_encoder.initializer(config), name="mws_head")
    task_layer_of_branch = self.mws_layer if export_branch == "mws" else self.rtd_layer
    self._export = discriminator
    if task_layer_of_branch is not None:
      below = (discriminator.transformer_layers[:-1] if task_heads == "attention"
               else discriminator.transformer_layers)
      layers = list(below) + [task_layer_of_branch]
      self._export = TransformerEncoder(
          EncoderConfig(**{**config.to_json(), "num_layers": len(layers)}),
          embeddings=discriminator.embeddings, transformer_layers=layers,
          embedding_projection=discriminator.embedding_projection,
          position_bias=discriminator.position_bias, name=f"{export_branch}_branch")

  def _task_layer(self, layer, source, input_mask, training=None):
    mask = self.discriminator.attention_mask_layer(source, input_mask)
    return layer([source, mask], training=training)

  def _rtd_logits(self, layer_outputs, input_mask, training=None):
    """`[batch, seq_len]` RTD logits: from layer L, or its own task layer ("attention_last")."""
    source = layer_outputs[-1]
    if self.rtd_layer is not None:
      source = self._task_layer(self.rtd_layer, source, input_mask, training)
    return self.rtd_head(source)

  def discriminator_heads(self, discriminator_output, inputs, outputs, training=None):
    layers = discriminator_output["encoder_outputs"]
    heads = {"rtd_logits": self._rtd_logits(layers, inputs["input_mask"], training)}
    if self.task_heads == "ffn":
      mws_input = layers[-1]
    else:
      source = layers[-2] if self.task_heads == "attention" else layers[-1]
      mws_input = self._task_layer(self.mws_layer, source, inputs["input_mask"], training)
    candidates = tf.stop_gradient(sampling.candidate_sets(
        outputs["mlm_logits"], inputs["masked_lm_ids"], self.num_candidates, self.excluded,
        self.candidate_mode, seed=sampling.salted(inputs.get("sampling_seed"), CANDIDATE_SALT)))
    heads["candidates"] = candidates
    heads["mws_logits"] = self.mws_head(mws_input, inputs["masked_lm_positions"], candidates)
    return heads

  def compute_losses(self, inputs, outputs):
    losses = objectives.mlm_and_rtd_losses(inputs, outputs, self.detection_weight(self.rtd_weight))
    # eq. 8: the original is candidate 0.
    per_position = -tf.nn.log_softmax(outputs["mws_logits"], axis=-1)[..., 0]
    mws = losses_lib.weighted_mean_loss(per_position, inputs["masked_lm_weights"])
    losses["mws_loss"] = mws
    losses["total_loss"] = losses_lib.combined_loss(  # eq. 9 (λ1_t, λ2_t: 0 in a warm-up)
        losses["total_loss"].value + self.detection_weight(self.mws_weight) * mws.value, inputs)
    return self.with_discriminator_mlm(inputs, outputs, losses)

  def build_metrics(self):
    m = tf_keras.metrics
    return dict(super().build_metrics(), mws_loss=m.Mean("mws_loss"),
                mws_accuracy=m.Mean("mws_accuracy"))

  def update_metrics(self, metrics, inputs, outputs, losses):
    super().update_metrics(metrics, inputs, outputs, losses)
    correct = tf.cast(tf.equal(tf.argmax(outputs["mws_logits"], -1), 0), tf.float32)
    metrics["mws_accuracy"].update_state(correct, sample_weight=inputs["masked_lm_weights"])

  @property
  def exported_encoder(self):
    return self._export

  def exported_heads(self):
    heads = super().exported_heads()
    # The RTD head belongs to an export whose output is its input: the RTD branch, or (FFN task
    # heads) the plain discriminator.
    reads_export = self.export_branch == "rtd" or self.mws_layer is None
    return heads if reads_export else heads._replace(rtd_head=None)

  def replaced_token_logits(self, inputs):
    layers = self.discriminator(inputs, training=False)["encoder_outputs"]
    return self._rtd_logits(layers, inputs["input_mask"], training=False)

  def train_flops_per_example(self, seq_len, num_predictions):
    disc = self.discriminator.config
    task_layers = sum(layer is not None for layer in (self.mws_layer, self.rtd_layer))
    extra = task_layers * seq_len * (
        8 * disc.hidden_size ** 2 + 4 * disc.hidden_size * disc.intermediate_size
        + 4 * seq_len * disc.hidden_size)
    mws = num_predictions * (2 * disc.hidden_size * disc.embedding_size
                             + 2 * disc.embedding_size * (self.num_candidates + 1))
    return super().train_flops_per_example(seq_len, num_predictions) + 2.0 * (extra + mws)


@registry.register("teams", needs=("vocab",))
@gin.configurable
def build_teams_pretrainer(encoder_config: EncoderConfig, vocab=None,
                           generator_layers: float = 0.5, num_shared_generator_layers=None,
                           num_candidates: int = 5, candidate_mode: str = "sampled",
                           task_heads: str = "attention", rtd_weight: float = 5.0,
                           mws_weight: float = 2.0, temperature: float = 1.0,
                           export_branch: str = "mws",
                           embedding_sharing: str = "shared") -> TeamsPretrainer:
  """Args: see the module docstring; `vocab` supplies the special tokens that are never
  candidates (the trainer passes the run's vocab); `embedding_sharing`: see
  `objectives.build_embedding_pair` (the shared lower layers stay shared)."""
  if vocab is None:
    raise ValueError("TEAMS needs the vocab (to keep special tokens out of candidate sets)")
  discriminator_embeddings, generator_embeddings = objectives.build_embedding_pair(
      encoder_config, embedding_sharing)
  discriminator = TransformerEncoder(encoder_config, embeddings=discriminator_embeddings,
                                     name="discriminator")
  generator_config = encoder_config.scaled(1.0, generator_layers)  # the discriminator's width
  depth = generator_config.num_layers
  shared = depth // 2 if num_shared_generator_layers is None else num_shared_generator_layers
  if not 0 <= shared <= depth:
    raise ValueError(f"num_shared_generator_layers={shared} must be in [0, {depth}]")
  layers = list(discriminator.transformer_layers[:shared]) + [
      transformer_encoder.transformer_block(generator_config, f"generator/layer_{i}",
                                            position_bias=discriminator.position_bias)
      for i in range(shared, depth)]
  generator = TransformerEncoder(generator_config, embeddings=generator_embeddings,
                                 transformer_layers=layers,
                                 embedding_projection=discriminator.embedding_projection,
                                 position_bias=discriminator.position_bias, name="generator")
  return TeamsPretrainer(generator, discriminator, vocab.is_special(),
                         num_candidates=num_candidates, candidate_mode=candidate_mode,
                         task_heads=task_heads, mws_weight=mws_weight,
                         export_branch=export_branch, rtd_weight=rtd_weight,
                         temperature=temperature, name="teams", **objectives.masked_lm_warmup())
