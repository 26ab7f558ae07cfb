"""What the generator/discriminator methods share (dissertation ch. 5): the pair of encoders, the
generator's masked LM, sampling replacements into the discriminator's input, the MLM and RTD losses
and metrics, and the masked-LM pseudo-log-likelihood. Every method module builds on this one;
none imports another method.

  L_MLM  = E[ Σ_{t∈m} −log p_G(x_t | x^masked) ] / |m|                        (masked LM)
  L_Disc = E[ Σ_t −1(x^corrupt_t = x_t) log D(x^corrupt, t)
                  −1(x^corrupt_t ≠ x_t) log(1 − D(x^corrupt, t)) ] / n        (RTD)

A position counts as "replaced" only if the sampled token differs from the original. Sampling (from
p_G in float32, `sampling.sample`) is under stop-gradient: no discriminator gradient reaches G.
Sign convention: `rtd_logits` > 0 means "replaced"; D(x, t) above is the probability of
"original", 1 − σ(logit).

The masked-LM warm-up every member that runs this class's `call` can take (the one-machine
recipe's, `gin/recipes/masked_lm_warmup.gin`): the detection losses count from `rtd_start_step`
(λ_t = 0 before), the discriminator's own masked LM at the masked positions is added,

  L_DMLM = E[ Σ_{t∈m} −log p_D(x_t | x^corrupt) ] / |m|     (Replace MLM's loss, §5.4.3)
  min L_method(λ_t) + μ_t L_DMLM,  μ_t = μ · max(0, 1 − t / T_μ)  (μ constant when T_μ = 0)

and with `masked_warmup` the discriminator reads the masked input before `rtd_start_step` (a plain
BERT then). From step T_μ on the head is neither run nor counted in FLOPs.
"""
import functools
from typing import Dict, Optional

import gin
from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.methods import base
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.disentangled_embeddings import DisentangledEmbeddings
from official_rtd.modeling.layers.rtd_head import ReplacedTokenDetectionHead
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.ops import fused
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.ops.losses import Loss


class GeneratorDiscriminator(base.PretrainingModel):
  """Generator (MLM) + discriminator (RTD). `call` returns:

  * `mlm_logits`: `[batch, num_predictions, vocab]` generator logits at masked positions;
  * `sampled_ids`: `[batch, num_predictions]` generator samples;
  * `original_ids`, `corrupted_ids`: `[batch, seq_len]` the unmasked input and the
    discriminator's input (samples written at masked positions);
  * `rtd_labels`: `[batch, seq_len]` 1.0 where `corrupted_ids != original_ids`;
  * `rtd_logits`: `[batch, seq_len]` discriminator logits (> 0: replaced).

  Methods change the generator's logits (`generator_logits`) or the discriminator's heads
  (`discriminator_heads`). If `inputs` holds `gumbel_noise` (`[batch, num_predictions, vocab]`), it
  is used for sampling instead of fresh noise (reproducible samples, e.g. to compare strategies);
  `sampling_seed` (`[2]` ints) draws the noise statelessly (reproducible evaluation).
  """

  # Where the masked-LM warm-up's settings are bound (named in errors), and whether the member's
  # `call` and losses apply it (a member that does not refuses its settings).
  warmup_settings = "masked_lm_warmup"
  supports_warmup = True

  def __init__(self, generator, discriminator: TransformerEncoder, rtd_weight: float = 50.0,
               temperature: float = 1.0, disallow_correct: bool = False, rtd_prior: float = 0.5,
               rtd_start_step: int = 0, discriminator_mlm_weight: float = 0.0,
               discriminator_mlm_steps: int = 0, masked_warmup: bool = False, **kwargs):
    super().__init__(**kwargs)
    self.generator = generator
    self.discriminator = discriminator
    self.rtd_weight = rtd_weight
    self.temperature = temperature
    self.disallow_correct = disallow_correct
    config = discriminator.config
    self._check_warmup(rtd_start_step, discriminator_mlm_weight, discriminator_mlm_steps,
                       masked_warmup)
    self.rtd_start_step = rtd_start_step
    self.discriminator_mlm_weight = float(discriminator_mlm_weight)
    self.discriminator_mlm_steps = discriminator_mlm_steps
    self.masked_warmup = masked_warmup
    self.masked_lm = None  # generators that are not masked-LM encoders supply their own logits
    if isinstance(generator, TransformerEncoder):
      self.masked_lm = layers.MaskedLM(
          embedding_table=generator.get_embedding_table(), activation=transformer_encoder.gelu,
          initializer=transformer_encoder.initializer(config), output="logits",
          name="generator_masked_lm")
    self.rtd_head = ReplacedTokenDetectionHead(
        config.hidden_size, transformer_encoder.gelu, transformer_encoder.initializer(config),
        prior=rtd_prior, name="discriminator_rtd_head")
    # Created last, as ELECTRA always did: the seeded initialisation of the other heads stays as
    # it was in runs made before the warm-up moved here.
    self.discriminator_lm = None
    if self.discriminator_mlm_weight:
      self.discriminator_lm = layers.MaskedLM(
          embedding_table=discriminator.get_embedding_table(),
          # The same GELU as the encoders' without its custom gradient, which cannot sit inside
          # the tf.cond that skips this head once μ_t = 0.
          activation=functools.partial(tf.nn.gelu, approximate=True),
          initializer=transformer_encoder.initializer(config), output="logits",
          name="discriminator_masked_lm")

  def _check_warmup(self, rtd_start_step, discriminator_mlm_weight, discriminator_mlm_steps,
                    masked_warmup):
    for name, value in (("rtd_start_step", rtd_start_step),
                        ("discriminator_mlm_steps", discriminator_mlm_steps)):
      if not isinstance(value, int) or value < 0:
        raise ValueError(f"{self.warmup_settings}.{name} = {value!r} must be an integer >= 0")
    if not discriminator_mlm_weight >= 0:
      raise ValueError(f"{self.warmup_settings}.discriminator_mlm_weight = "
                       f"{discriminator_mlm_weight!r} must be >= 0")
    if not self.supports_warmup and (rtd_start_step or discriminator_mlm_weight or masked_warmup):
      raise ValueError(f"{self.name} does not take the masked-LM warm-up "
                       f"({self.warmup_settings}.rtd_start_step, discriminator_mlm_weight, "
                       "masked_warmup): leave them unbound with this method")
    if masked_warmup and not (rtd_start_step and discriminator_mlm_weight):
      raise ValueError(f"{self.warmup_settings}.masked_warmup needs rtd_start_step > 0 and "
                       "discriminator_mlm_weight > 0 (it is what the discriminator reads before "
                       "replaced-token detection starts)")
    if masked_warmup and 0 < discriminator_mlm_steps <= rtd_start_step:
      raise ValueError(
          f"{self.warmup_settings}.discriminator_mlm_steps = {discriminator_mlm_steps} must be "
          f"0 (constant) or > rtd_start_step = {rtd_start_step} with masked_warmup: its weight "
          "would reach 0 before replaced-token detection starts, leaving the discriminator no "
          "loss")

  # --- the masked-LM warm-up ---------------------------------------------------------------------
  def detection_start_step(self) -> int:
    return self.rtd_start_step

  def detection_start_setting(self) -> str:
    return f"{self.warmup_settings}.rtd_start_step"

  def flops_change_steps(self):
    return (self.discriminator_mlm_steps,) if self._discriminator_mlm_ends() else ()

  def _discriminator_mlm_ends(self) -> bool:
    """Whether μ_t reaches 0 (at T_μ), after which the head is not run."""
    return self.discriminator_lm is not None and self.discriminator_mlm_steps > 0

  def discriminator_mlm_active(self) -> tf.Tensor:
    """Scalar bool: μ_t > 0 at this step (the discriminator's masked-LM head runs)."""
    if not self._discriminator_mlm_ends():
      return tf.constant(self.discriminator_lm is not None)
    return self.training_step() < self.discriminator_mlm_steps

  def discriminator_mlm_logits(self, discriminator_output, inputs) -> Dict[str, tf.Tensor]:
    """`discriminator_mlm_logits` (`[batch, num_predictions, vocab]`) at the masked positions, or
    zeros (not computed) once μ_t = 0; {} without the head."""
    if self.discriminator_lm is None:
      return {}
    sequence, positions = discriminator_output["sequence_output"], inputs["masked_lm_positions"]
    head = lambda: tf.cast(self.discriminator_lm(sequence, positions), tf.float32)
    if not self._discriminator_mlm_ends():
      return {"discriminator_mlm_logits": head()}
    vocab = self.discriminator.get_embedding_table().shape[0]
    return {"discriminator_mlm_logits": tf.cond(
        self.discriminator_mlm_active(), head,
        lambda: tf.zeros([tf.shape(positions)[0], tf.shape(positions)[1], vocab], tf.float32))}

  def with_discriminator_mlm(self, inputs, outputs, losses: Dict[str, Loss]) -> Dict[str, Loss]:
    """`losses` (whose total already weights detection by `detection_weight`) plus μ_t L_DMLM
    and its `discriminator_mlm_loss` entry, when the member has the head."""
    if self.discriminator_lm is None:
      return losses
    d_mlm = mlm_loss(inputs, outputs["discriminator_mlm_logits"])
    # Not logged once the head stops: a zero count leaves the metric's row out.
    d_mlm = d_mlm._replace(weight=d_mlm.weight * tf.cast(self.discriminator_mlm_active(),
                                                         d_mlm.weight.dtype))
    mu = self.discriminator_mlm_weight
    if self.discriminator_mlm_steps:
      remaining = 1.0 - tf.cast(self.training_step(), tf.float32) / float(
          self.discriminator_mlm_steps)
      mu = self.discriminator_mlm_weight * tf.maximum(remaining, 0.0)
    return dict(losses, discriminator_mlm_loss=d_mlm, total_loss=losses_lib.combined_loss(
        losses["total_loss"].value + mu * d_mlm.value, inputs))

  def train_flops_per_example_at(self, step, seq_len, num_predictions):
    """The method's FLOPs plus the discriminator's masked-LM head while it runs."""
    total = self.train_flops_per_example(seq_len, num_predictions)
    if self.discriminator_lm is None or (self._discriminator_mlm_ends()
                                         and step >= self.discriminator_mlm_steps):
      return total
    disc = self.discriminator.config
    return total + 2.0 * flops.mlm_head_flops(disc.hidden_size, disc.embedding_size,
                                              disc.vocab_size, num_predictions)

  # --- the method --------------------------------------------------------------------------------
  def generator_logits(self, inputs, original_ids, training=None) -> Dict[str, tf.Tensor]:
    """The generator's `mlm_logits` (`[batch, num_predictions, vocab]`) at the masked positions,
    from the masked input (subclasses may use another generator and add outputs)."""
    del original_ids
    generator_output = self.generator(inputs, training=training)["sequence_output"]
    return {"mlm_logits": tf.cast(
        self.masked_lm(generator_output, inputs["masked_lm_positions"]), tf.float32)}

  def call(self, inputs, training=None):
    original_ids = sampling.unmask(inputs)
    outputs = self.generator_logits(inputs, original_ids, training=training)
    mlm_logits = outputs["mlm_logits"]
    sampled_ids = tf.stop_gradient(sampling.sample(
        mlm_logits, self.sampling_temperature(),
        disallow_ids=inputs["masked_lm_ids"] if self.disallow_correct else None,
        gumbel_noise=inputs.get("gumbel_noise"), seed=inputs.get("sampling_seed")))
    corrupted_ids = sampling.scatter_positions(
        original_ids, inputs["masked_lm_positions"], sampled_ids, inputs["masked_lm_weights"])
    rtd_labels = tf.cast(tf.not_equal(corrupted_ids, original_ids), tf.float32)
    discriminator_output = self.discriminator(
        dict(inputs, input_word_ids=self.discriminator_input_ids(inputs, corrupted_ids)),
        training=training)
    outputs.update(sampled_ids=sampled_ids, original_ids=original_ids,
                   corrupted_ids=corrupted_ids, rtd_labels=rtd_labels)
    outputs.update(self.discriminator_heads(discriminator_output, inputs, outputs, training))
    outputs.update(self.discriminator_mlm_logits(discriminator_output, inputs))
    return outputs

  def sampling_temperature(self):
    """The temperature replacements are sampled at this step (`temperature`; a member may
    anneal it)."""
    return self.temperature

  def discriminator_input_ids(self, inputs, corrupted_ids) -> tf.Tensor:
    """`[batch, seq_len]` what the discriminator reads: the corrupted sequence, or with
    `masked_warmup` the masked input before `rtd_start_step` (a plain masked LM then)."""
    if not self.masked_warmup:
      return corrupted_ids
    return tf.where(self.training_step() < self.rtd_start_step, inputs["input_word_ids"],
                    corrupted_ids)

  def discriminator_heads(self, discriminator_output, inputs, outputs, training=None
                          ) -> Dict[str, tf.Tensor]:
    """The discriminator's task outputs (here: `rtd_logits` from the last layer)."""
    del inputs, outputs, training
    return {"rtd_logits": self.rtd_head(discriminator_output["sequence_output"])}

  def compute_losses(self, inputs, outputs) -> Dict[str, Loss]:
    return self.with_discriminator_mlm(inputs, outputs, mlm_and_rtd_losses(
        inputs, outputs, self.detection_weight(self.rtd_weight)))

  def build_metrics(self):
    """ELECTRA's metrics and, with the warm-up's head, its loss and accuracy (members extend
    this)."""
    metrics = mlm_and_rtd_metrics()
    if self.discriminator_lm is not None:
      metrics.update(
          discriminator_mlm_loss=tf_keras.metrics.Mean("discriminator_mlm_loss"),
          discriminator_mlm_accuracy=tf_keras.metrics.SparseCategoricalAccuracy(
              "discriminator_mlm_accuracy"))
    return metrics

  def update_metrics(self, metrics, inputs, outputs, losses):
    update_mlm_and_rtd_metrics(metrics, inputs, outputs, losses)
    if self.discriminator_lm is not None:
      active = tf.cast(self.discriminator_mlm_active(), inputs["masked_lm_weights"].dtype)
      metrics["discriminator_mlm_accuracy"].update_state(
          inputs["masked_lm_ids"], outputs["discriminator_mlm_logits"],
          sample_weight=inputs["masked_lm_weights"] * active)

  @property
  def exported_encoder(self):
    return self.discriminator

  def exported_heads(self) -> base.ExportedHeads:
    masked_lm_generator = self.masked_lm is not None and self.generator is not self.discriminator
    return base.ExportedHeads(rtd_head=self.rtd_head,
                              generator=self.generator if masked_lm_generator else None,
                              masked_lm=self.masked_lm if masked_lm_generator else None)

  def train_flops_per_example(self, seq_len, num_predictions):
    gen, disc = self.generator.config, self.discriminator.config
    forward = (flops.encoder_forward_flops(gen, seq_len)
               + flops.mlm_head_flops(gen.hidden_size, gen.embedding_size, gen.vocab_size,
                                      num_predictions)
               + flops.encoder_forward_flops(disc, seq_len)
               + flops.rtd_head_flops(disc.hidden_size, seq_len))
    return 2.0 * forward

  def replaced_token_logits(self, inputs):
    return self.rtd_head(self.discriminator(inputs, training=False)["sequence_output"])

  def pseudo_log_likelihood(self, input_word_ids, input_mask, input_type_ids, mask_id):
    """PLL under the generator MLM: one forward pass per position, each with that position
    masked (Salazar et al.); special and pad positions are skipped."""
    return masked_lm_pll(self.generator, self.masked_lm, input_word_ids, input_mask,
                         input_type_ids, mask_id)

  def masked_language_model(self):
    return (self.generator, self.masked_lm) if self.masked_lm is not None else None


@gin.configurable
def masked_lm_warmup(rtd_start_step: int = 0, discriminator_mlm_weight: float = 0.0,
                     discriminator_mlm_steps: int = 0, masked_warmup: bool = False) -> dict:
  """The masked-LM warm-up's settings (see the module docstring), for every generator/
  discriminator builder (`gin/recipes/masked_lm_warmup.gin` binds them).

  Args:
    rtd_start_step: the detection losses count (λ_t > 0) from this training step on.
    discriminator_mlm_weight: μ, the weight of the discriminator's own masked LM (L_DMLM: the
      original tokens at the masked positions); 0: none.
    discriminator_mlm_steps: T_μ, the steps over which μ decays linearly to 0 (0: constant).
    masked_warmup: before `rtd_start_step` the discriminator reads the masked input (`[MASK]` at
      the masked positions), a plain masked LM of L_DMLM, instead of the corrupted one.
  """
  return dict(rtd_start_step=rtd_start_step, discriminator_mlm_weight=discriminator_mlm_weight,
              discriminator_mlm_steps=discriminator_mlm_steps, masked_warmup=masked_warmup)


def check_warmup_taken(model) -> None:
  """Refuses `masked_lm_warmup` bindings for a model that is not a generator/discriminator (BERT
  MLM, SCRIPT, Electric), which would otherwise be silently unread.

  Raises:
    ValueError: naming the method and the settings.
  """
  bound = {k: v for k, v in masked_lm_warmup().items() if v}
  if bound and not isinstance(model, GeneratorDiscriminator):
    raise ValueError(f"masked_lm_warmup ({', '.join(f'{k} = {v}' for k, v in bound.items())}) "
                     f"applies to generator/discriminator methods, not {model.name}: leave it "
                     "unbound (drop gin/recipes/masked_lm_warmup.gin)")


def masked_lm_pll(encoder, masked_lm, input_word_ids, input_mask, input_type_ids, mask_id,
                  continuation=None):
  """`[batch]` Σ_t log p(x_t | x with t masked) over positions 1..n−2 of each row (all but
  `[CLS]`, the final `[SEP]` and padding); n masked copies of each row are scored in one batch.

  With `continuation` (`[batch, seq_len]` bool: the piece continues the word of the piece before
  it, e.g. WordPiece's `##`), copy t also masks the pieces of t's word to its right: PLL-word-l2r
  (Kauf & Ivanova, 2023), so a word's later pieces do not give its earlier ones away.
  """
  ids = tf.convert_to_tensor(input_word_ids)
  batch, seq_len = tf.shape(ids)[0], tf.shape(ids)[1]
  position = tf.range(seq_len)
  # Copy t of row b masks position t: [batch, seq_len(copies), seq_len].
  masked = tf.eye(seq_len, dtype=tf.bool)[tf.newaxis]
  if continuation is not None:
    word = tf.cumsum(1 - tf.cast(continuation, tf.int32), axis=1)           # [batch, seq_len]
    same_word = tf.equal(word[:, :, tf.newaxis], word[:, tf.newaxis, :])    # [batch, t, s]
    masked = masked | (same_word & (position[:, tf.newaxis] < position[tf.newaxis, :]))
  copies = tf.where(masked, tf.cast(mask_id, ids.dtype), ids[:, tf.newaxis, :])
  flat = lambda x: tf.reshape(tf.broadcast_to(x[:, tf.newaxis, :], [batch, seq_len, seq_len]),
                              [-1, seq_len])
  sequence = encoder({"input_word_ids": tf.reshape(copies, [-1, seq_len]),
                      "input_mask": flat(input_mask), "input_type_ids": flat(input_type_ids)},
                     training=False)["sequence_output"]
  logits = tf.cast(masked_lm(sequence, tf.reshape(tf.tile(position[tf.newaxis], [batch, 1]),
                                                  [-1, 1])), tf.float32)  # [batch*seq, 1, vocab]
  log_probs = tf.nn.log_softmax(logits[:, 0], axis=-1)
  token_log_prob = tf.gather(log_probs, tf.reshape(ids, [-1, 1]), batch_dims=1)[:, 0]
  token_log_prob = tf.reshape(token_log_prob, [batch, seq_len])
  return base.sum_inner_positions(token_log_prob, input_mask)


def mlm_loss(inputs, mlm_logits) -> Loss:
  """L_MLM: −log p_G(x_t | x^masked) averaged over the real masked positions of the batch."""
  per_position = fused.sparse_softmax_cross_entropy(inputs["masked_lm_ids"], mlm_logits)
  return losses_lib.weighted_mean_loss(per_position, inputs["masked_lm_weights"])


def rtd_loss(inputs, rtd_logits, rtd_labels) -> Loss:
  """L_Disc: sigmoid cross-entropy of "replaced", averaged over the non-pad positions."""
  per_position = tf.nn.sigmoid_cross_entropy_with_logits(labels=rtd_labels, logits=rtd_logits)
  return losses_lib.weighted_mean_loss(per_position, inputs["input_mask"])


def mlm_and_rtd_losses(inputs, outputs, rtd_weight: float) -> Dict[str, Loss]:
  """ELECTRA's objective: min L_MLM + λ L_Disc."""
  mlm = mlm_loss(inputs, outputs["mlm_logits"])
  rtd = rtd_loss(inputs, outputs["rtd_logits"], outputs["rtd_labels"])
  return {"total_loss": losses_lib.combined_loss(mlm.value + rtd_weight * rtd.value, inputs),
          "mlm_loss": mlm, "rtd_loss": rtd}


def mlm_and_rtd_metrics():
  m = tf_keras.metrics
  return {"total_loss": m.Mean("total_loss"), "mlm_loss": m.Mean("mlm_loss"),
          "mlm_accuracy": m.SparseCategoricalAccuracy("mlm_accuracy"),
          "rtd_loss": m.Mean("rtd_loss"), "rtd_accuracy": m.BinaryAccuracy("rtd_accuracy"),
          # The discriminator's accuracy on original and on replaced tokens apart: a collapsed
          # one (`training/collapse_monitor.py`) is right on nearly every original, no replaced.
          "rtd_accuracy_original": m.BinaryAccuracy("rtd_accuracy_original"),
          "rtd_accuracy_replaced": m.BinaryAccuracy("rtd_accuracy_replaced"),
          "rtd_precision": m.Precision(name="rtd_precision"),
          "rtd_recall": m.Recall(name="rtd_recall"), "rtd_auc": m.AUC(name="rtd_auc"),
          "replaced_fraction": m.Mean("replaced_fraction")}


def update_mlm_and_rtd_metrics(metrics, inputs, outputs, losses):
  """Generator MLM accuracy; discriminator accuracy/precision/recall/AUC on "replaced" over
  non-pad positions; the fraction of masked positions whose sample differs from the original."""
  base.update_loss_metrics(metrics, losses)
  metrics["mlm_accuracy"].update_state(inputs["masked_lm_ids"], outputs["mlm_logits"],
                                       sample_weight=inputs["masked_lm_weights"])
  update_detection_metrics(metrics, "rtd_", outputs["rtd_labels"],
                           tf.sigmoid(outputs["rtd_logits"]), inputs)
  update_replaced_fraction(metrics, inputs, outputs["sampled_ids"])


def update_detection_metrics(metrics, prefix: str, labels, probability, inputs):
  """`<prefix>accuracy`, `precision`, `recall`, `auc` (those in `metrics`) of the `[batch,
  seq_len]` probability of "replaced" against `labels`, over the non-pad positions, and
  `<prefix>accuracy_original` / `_replaced` over the original / replaced ones."""
  mask = tf.cast(inputs["input_mask"], tf.float32)
  labels = tf.cast(labels, tf.float32)
  weights = {"": mask, "_original": mask * (1.0 - labels), "_replaced": mask * labels}
  for name in ("accuracy", "precision", "recall", "auc", "accuracy_original",
               "accuracy_replaced"):
    if prefix + name in metrics:
      weight = weights[name[len("accuracy"):]] if name.startswith("accuracy") else mask
      metrics[prefix + name].update_state(labels, probability, sample_weight=weight)


def update_replaced_fraction(metrics, inputs, sampled_ids):
  """`replaced_fraction`: masked positions whose sample differs from the original token."""
  replaced = tf.cast(tf.not_equal(sampled_ids, inputs["masked_lm_ids"]), tf.float32)
  metrics["replaced_fraction"].update_state(replaced, sample_weight=inputs["masked_lm_weights"])


EMBEDDING_SHARING = ("shared", "tokens", "gdes", "none")


def embedding_sharing_mode(embedding_sharing: Optional[str], tie_embeddings: Optional[bool]
                           ) -> str:
  """The sharing mode from `embedding_sharing`, or from the older `tie_embeddings` (True:
  "shared", False: "none") that run configs written before `embedding_sharing` still set."""
  if embedding_sharing is None:
    return "none" if tie_embeddings is False else "shared"
  if embedding_sharing not in EMBEDDING_SHARING:
    raise ValueError(f"embedding_sharing must be one of {EMBEDDING_SHARING}, got "
                     f"{embedding_sharing!r}")
  if tie_embeddings is not None and tie_embeddings != (embedding_sharing == "shared"):
    raise ValueError(f"tie_embeddings = {tie_embeddings} contradicts embedding_sharing = "
                     f"{embedding_sharing!r}: set only embedding_sharing")
  return embedding_sharing


def build_embedding_pair(encoder_config: EncoderConfig, embedding_sharing: str):
  """(discriminator's, generator's) embedding layers for `embedding_sharing`:

  * "shared" (ELECTRA): one layer, trained by both losses;
  * "tokens" (Model Garden's `ElectraPretrainer`): only the token table is one (trained by both
    losses); each network has its own position and segment tables and LayerNorm;
  * "gdes" (DeBERTa-v3): the generator's layer E_G, and the discriminator's
    `DisentangledEmbeddings` sg(E_G) + E_Δ;
  * "none": (None, None), each encoder builds its own.
  """
  if embedding_sharing not in EMBEDDING_SHARING:
    raise ValueError(f"embedding_sharing must be one of {EMBEDDING_SHARING}, got "
                     f"{embedding_sharing!r}")
  if embedding_sharing == "none":
    return None, None
  generator_embeddings = transformer_encoder.build_embeddings(encoder_config)
  if embedding_sharing == "tokens":
    return (transformer_encoder.build_embeddings(encoder_config, generator_embeddings),
            generator_embeddings)
  if embedding_sharing == "shared":
    return generator_embeddings, generator_embeddings
  return DisentangledEmbeddings(generator_embeddings, name="embeddings"), generator_embeddings


def build_encoders(encoder_config: EncoderConfig, generator_size: float = 0.25,
                   generator_layers: float = 1.0, embedding_sharing: str = "shared",
                   tie_all: bool = False, generator_config: Optional[EncoderConfig] = None):
  """(generator, discriminator) encoders: the generator is `generator_size` × the
  discriminator's width (hidden, FFN, heads) and `generator_layers` × its depth.

  Args:
    embedding_sharing: "shared" (token/position/segment embeddings and their LayerNorm are the
      discriminator's), "tokens" (only the token table), "gdes" (the discriminator reads
      sg(E_G) + E_Δ) or "none"; see `build_embedding_pair`. The generator's input and output token
      embeddings are always tied.
    tie_all: share every encoder weight (needs a same-size generator).
    generator_config: the generator's own sizes instead of the scaled discriminator's (e.g. an
      imported checkpoint's).
  A `generator_size` of 0 builds no generator (None): a discriminator alone, e.g. imported from a
  checkpoint without one; it exports and detects replaced tokens but cannot be trained.
  """
  if generator_size == 0:
    return None, TransformerEncoder(encoder_config, name="discriminator")
  if tie_all:
    if generator_size != 1.0 or generator_layers != 1.0:
      raise ValueError("tie_all needs a same-size generator: set generator_size = 1.0 and "
                       "generator_layers = 1.0")
    if embedding_sharing in ("tokens", "gdes"):
      raise ValueError(f"tie_all shares every weight: embedding_sharing = {embedding_sharing!r} "
                       "does not apply")
    discriminator = TransformerEncoder(encoder_config, name="discriminator")
    return discriminator, discriminator
  discriminator_embeddings, generator_embeddings = build_embedding_pair(encoder_config,
                                                                        embedding_sharing)
  discriminator = TransformerEncoder(encoder_config, embeddings=discriminator_embeddings,
                                     name="discriminator")
  generator = TransformerEncoder(
      generator_config or encoder_config.scaled(generator_size, generator_layers),
      embeddings=generator_embeddings, name="generator")
  return generator, discriminator
