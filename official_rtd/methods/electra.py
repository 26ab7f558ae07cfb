"""ELECTRA: replaced token detection (Clark, dissertation ch. 5; Clark et al., 2020).

A small masked-LM generator G fills masked positions with samples from p_G; the discriminator D
predicts for every (non-pad) position whether its token was replaced:

  L_MLM  = E[ Σ_{t∈m} −log p_G(x_t | x^masked) ] / |m|                        (masked LM)
  L_Disc = E[ Σ_t −1(x^corrupt_t = x_t) log D(x^corrupt, t)
                  −1(x^corrupt_t ≠ x_t) log(1 − D(x^corrupt, t)) ] / n        (RTD)
  min L_MLM + λ L_Disc,  λ = 50

The pair, sampling, losses and metrics are `objectives.GeneratorDiscriminator` (shared with the
other generator/discriminator methods); this module adds ELECTRA's options: ELECTRA 15%
(`rtd_positions="masked"`), weight tying, two-stage training (§5.3.3), a generator-only warm-up,
and a masked-LM signal for the discriminator itself while it learns to read context:

  L_DMLM = E[ Σ_{t∈m} −log p_D(x_t | x^corrupt) ] / |m|     (Replace MLM's loss, §5.4.3)
  min L_MLM + λ L_Disc + μ_t L_DMLM,  μ_t = μ · max(0, 1 − t / T_μ)  (μ constant when T_μ = 0)

From step T_μ on (μ_t = 0) the discriminator's masked-LM head is neither run nor counted in FLOPs.
"""
import functools
import os
from typing import Optional

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
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.utils import checkpoint_files


class ElectraPretrainer(objectives.GeneratorDiscriminator):
  """`objectives.GeneratorDiscriminator` (see its outputs) with ELECTRA 15% (`rtd_positions`
  "all" or "masked": the discriminator loss only over the masked positions), a generator-only
  warm-up (`rtd_start_step`) and the discriminator's own masked LM (`discriminator_mlm_weight` μ,
  decaying to 0 over `discriminator_mlm_steps`; its output `discriminator_mlm_logits`
  `[batch, num_predictions, vocab]` at the masked positions of the corrupted input, or with
  `masked_warmup` of the masked input before `rtd_start_step`)."""

  def __init__(self, generator, discriminator, rtd_positions: str = "all",
               rtd_start_step: int = 0, discriminator_mlm_weight: float = 0.0,
               discriminator_mlm_steps: int = 0, masked_warmup: bool = False, **kwargs):
    super().__init__(generator, discriminator, **kwargs)
    if rtd_positions not in ("all", "masked"):
      raise ValueError(f"rtd_positions must be 'all' or 'masked', got {rtd_positions!r}")
    for name, value in (("rtd_start_step", rtd_start_step),
                        ("discriminator_mlm_steps", discriminator_mlm_steps)):
      if not isinstance(value, int) or value < 0:
        raise ValueError(f"build_electra_pretrainer.{name} = {value!r} must be an integer >= 0")
    if not discriminator_mlm_weight >= 0:
      raise ValueError(f"build_electra_pretrainer.discriminator_mlm_weight = "
                       f"{discriminator_mlm_weight!r} must be >= 0")
    self.rtd_positions = rtd_positions
    self.rtd_start_step = rtd_start_step
    self.discriminator_mlm_weight = float(discriminator_mlm_weight)
    self.discriminator_mlm_steps = discriminator_mlm_steps
    if masked_warmup and not (rtd_start_step and discriminator_mlm_weight):
      raise ValueError("build_electra_pretrainer.masked_warmup needs rtd_start_step > 0 and "
                       "discriminator_mlm_weight > 0 (it is what the discriminator reads before "
                       "replaced-token detection starts)")
    if masked_warmup and 0 < discriminator_mlm_steps <= rtd_start_step:
      raise ValueError(
          f"build_electra_pretrainer.discriminator_mlm_steps = {discriminator_mlm_steps} must be "
          f"0 (constant) or > rtd_start_step = {rtd_start_step} with masked_warmup: its weight "
          "would reach 0 before replaced-token detection starts, leaving the discriminator no "
          "loss")
    self.masked_warmup = masked_warmup
    self.discriminator_lm = None
    if self.discriminator_mlm_weight:
      config = discriminator.config
      self.discriminator_lm = layers.MaskedLM(
          embedding_table=discriminator.get_embedding_table(),
          # The same GELU as the encoders' without its custom gradient, which cannot sit inside
          # the tf.cond that skips this head once μ_t = 0.
          activation=functools.partial(tf.nn.gelu, approximate=True),
          initializer=transformer_encoder.initializer(config), output="logits",
          name="discriminator_masked_lm")

  def detection_start_step(self) -> int:
    return self.rtd_start_step

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

  def discriminator_heads(self, discriminator_output, inputs, outputs, training=None):
    heads = super().discriminator_heads(discriminator_output, inputs, outputs, training)
    if self.discriminator_lm is None:
      return heads
    sequence, positions = discriminator_output["sequence_output"], inputs["masked_lm_positions"]
    head = lambda: tf.cast(self.discriminator_lm(sequence, positions), tf.float32)
    if not self._discriminator_mlm_ends():
      heads["discriminator_mlm_logits"] = head()
      return heads
    # [batch, num_predictions, vocab]: zeros (not computed) once μ_t = 0
    vocab = self.discriminator.get_embedding_table().shape[0]
    heads["discriminator_mlm_logits"] = tf.cond(
        self.discriminator_mlm_active(), head,
        lambda: tf.zeros([tf.shape(positions)[0], tf.shape(positions)[1], vocab], tf.float32))
    return heads

  def discriminator_input_ids(self, inputs, corrupted_ids):
    """With `masked_warmup`, the masked input before `rtd_start_step` (the discriminator is a
    plain masked LM then), the corrupted one after."""
    if not self.masked_warmup:
      return corrupted_ids
    return tf.where(self.training_step() < self.rtd_start_step, inputs["input_word_ids"],
                    corrupted_ids)

  def _weights_now(self):
    """(λ_t, μ_t): λ after the generator-only warm-up (0 before), μ decayed linearly."""
    step = self.training_step()
    rtd_weight = (tf.where(step >= self.rtd_start_step, self.rtd_weight, 0.0)
                  if self.rtd_start_step else self.rtd_weight)
    if not self.discriminator_mlm_steps:
      return rtd_weight, self.discriminator_mlm_weight
    remaining = 1.0 - tf.cast(step, tf.float32) / float(self.discriminator_mlm_steps)
    return rtd_weight, self.discriminator_mlm_weight * tf.maximum(remaining, 0.0)

  def compute_losses(self, inputs, outputs):
    if self.rtd_positions == "masked":  # ELECTRA 15%: the loss only over the masked positions
      inputs = dict(inputs, input_mask=sampling.scatter_positions(
          tf.zeros_like(inputs["input_mask"]), inputs["masked_lm_positions"],
          tf.ones_like(inputs["masked_lm_positions"]), inputs["masked_lm_weights"]))
    rtd_weight, mlm_weight = self._weights_now()
    losses = objectives.mlm_and_rtd_losses(inputs, outputs, rtd_weight)
    if self.discriminator_lm is not None:
      d_mlm = objectives.mlm_loss(inputs, outputs["discriminator_mlm_logits"])
      # Not logged once the head stops: a zero count leaves the metric's row out.
      d_mlm = d_mlm._replace(weight=d_mlm.weight * tf.cast(self.discriminator_mlm_active(),
                                                           d_mlm.weight.dtype))
      # L_MLM + λ_t L_Disc + μ_t L_DMLM
      total = (losses["mlm_loss"].value + rtd_weight * losses["rtd_loss"].value
               + mlm_weight * d_mlm.value)
      losses.update(total_loss=losses_lib.combined_loss(total, inputs),
                    discriminator_mlm_loss=d_mlm)
    return losses

  def build_metrics(self):
    metrics = super().build_metrics()
    if self.discriminator_lm is not None:
      metrics.update(
          discriminator_mlm_loss=tf_keras.metrics.Mean("discriminator_mlm_loss"),
          discriminator_mlm_accuracy=tf_keras.metrics.SparseCategoricalAccuracy(
              "discriminator_mlm_accuracy"))
    return metrics

  def update_metrics(self, metrics, inputs, outputs, losses):
    super().update_metrics(metrics, inputs, outputs, losses)
    if self.discriminator_lm is not None:
      active = tf.cast(self.discriminator_mlm_active(), inputs["masked_lm_weights"].dtype)
      metrics["discriminator_mlm_accuracy"].update_state(
          inputs["masked_lm_ids"], outputs["discriminator_mlm_logits"],
          sample_weight=inputs["masked_lm_weights"] * active)

  def train_flops_per_example_at(self, step, seq_len, num_predictions):
    if self._discriminator_mlm_ends() and step >= self.discriminator_mlm_steps:
      return super().train_flops_per_example(seq_len, num_predictions)  # the head has stopped
    return self.train_flops_per_example(seq_len, num_predictions)

  def train_flops_per_example(self, seq_len, num_predictions):
    total = super().train_flops_per_example(seq_len, num_predictions)
    if self.discriminator_lm is None:
      return total
    disc = self.discriminator.config
    return total + 2.0 * flops.mlm_head_flops(disc.hidden_size, disc.embedding_size,
                                              disc.vocab_size, num_predictions)


def create_variables(model: ElectraPretrainer) -> None:
  """Creates every variable of `model` with one call on a dummy batch (without a generator: the
  discriminator and its RTD head), e.g. before weights are assigned or restored and checked."""
  dummy = base.dummy_inputs(2, 1)
  if model.generator is None:
    model.rtd_head(model.discriminator(dummy)["sequence_output"])
  else:
    model(dict(dummy, masked_lm_weights=tf.ones([1, 1])), training=False)


def init_from_generator_checkpoint(model: ElectraPretrainer, checkpoint: str):
  """Two-stage training (dissertation §5.3.3), step 2: the generator (encoder + MLM head) *and*
  the same-size discriminator start from a stage-1 masked-LM run (`gin/tasks/mlm.gin`).

  Args:
    model: a built-from-config ELECTRA whose generator has the discriminator's size.
    checkpoint: the stage-1 `model_dir` (its latest checkpoint) or a checkpoint prefix.
  Raises:
    ValueError: naming the checkpoint when it is missing or does not fit the encoders.
  """
  path = tf.train.latest_checkpoint(checkpoint) if os.path.isdir(checkpoint) else checkpoint
  if not path or not tf.io.gfile.glob(path + ".index"):
    raise ValueError(f"generator_init_checkpoint={checkpoint!r}: no checkpoint there (give the "
                     "stage-1 MLM run's model_dir or a checkpoint prefix)")
  create_variables(model)  # so the restores below are checked at once
  targets = ({"encoder": model.generator, "masked_lm": model.masked_lm},
             {"encoder": model.discriminator})
  for target in targets:
    try:
      with checkpoint_files.quiet_restore_warnings():  # the error below says it in one line
        tf.train.Checkpoint(model=tf.train.Checkpoint(**target)).read(
            path).assert_existing_objects_matched().expect_partial()
    except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as e:
      raise ValueError(f"generator_init_checkpoint {path} does not fit this model's "
                       f"{'generator' if 'masked_lm' in target else 'discriminator'} (it must "
                       f"be a masked-LM run of the discriminator's config): {e}") from None


@registry.register("electra")
@gin.configurable
def build_electra_pretrainer(encoder_config: EncoderConfig, generator_size: float = 0.25,
                             generator_layers: float = 1.0,
                             embedding_sharing: Optional[str] = None,
                             tie_embeddings: Optional[bool] = None, tie_all: bool = False, temperature: float = 1.0,
                             disallow_correct: bool = False, rtd_weight: float = 50.0,
                             rtd_positions: str = "all", generator_init_checkpoint: str = "",
                             freeze_generator: bool = False,
                             generator_config: Optional[EncoderConfig] = None,
                             rtd_start_step: int = 0, discriminator_mlm_weight: float = 0.0,
                             discriminator_mlm_steps: int = 0,
                             rtd_prior: float = 0.5,
                             masked_warmup: bool = False) -> ElectraPretrainer:
  """Builds ELECTRA.

  Args:
    encoder_config: the discriminator.
    generator_size, generator_layers, embedding_sharing, tie_all, generator_config: see
      `objectives.build_encoders`; `embedding_sharing` is "shared" (default), "tokens", "gdes" or
      "none".
    tie_embeddings: the older spelling of "shared" (True) / "none" (False).
    temperature, disallow_correct: sampling options.
    rtd_weight: λ.
    rtd_positions: "all" (ELECTRA) or "masked" (ELECTRA 15%, dissertation §5.4.3: the
      discriminator loss only over the masked-out, i.e. a random 15%, of the positions).
    generator_init_checkpoint: two-stage training (§5.3.3): start the generator and the
      discriminator from this stage-1 masked-LM run (see `init_from_generator_checkpoint`).
    freeze_generator: keep the generator (encoder and MLM head) fixed; needs embeddings that are
      not shared ("none", or "gdes": E_G is frozen, the discriminator trains E_Δ).
    rtd_start_step: a generator-only warm-up: L_Disc counts (λ > 0) from this training step on.
    discriminator_mlm_weight: μ, the weight of the discriminator's own masked LM (L_DMLM: the
      original tokens at the masked positions from the corrupted input); 0: none (ELECTRA).
    discriminator_mlm_steps: T_μ, the steps over which μ decays linearly to 0 (0: constant).
    rtd_prior: the RTD head's logit bias starts at log(p / (1 − p)) (0.5: ELECTRA's bias 0), e.g.
      the expected replaced fraction, so the first steps need not push every representation
      toward "original".
    masked_warmup: before `rtd_start_step` the discriminator reads the masked input (`[MASK]`
      at the masked positions), a plain masked LM of L_DMLM, instead of the corrupted one.
  """
  embedding_sharing = objectives.embedding_sharing_mode(embedding_sharing, tie_embeddings)
  if freeze_generator and (embedding_sharing in ("shared", "tokens") or tie_all):
    raise ValueError("freeze_generator needs embedding_sharing = 'none' or 'gdes' and tie_all = "
                     "False (shared embeddings would freeze the discriminator's too)")
  if generator_init_checkpoint and (generator_size != 1.0 or generator_layers != 1.0):
    raise ValueError("generator_init_checkpoint (two-stage training) needs a generator of the "
                     "discriminator's size: generator_size = 1.0, generator_layers = 1.0")
  generator, discriminator = objectives.build_encoders(encoder_config, generator_size,
                                                       generator_layers, embedding_sharing, tie_all,
                                                       generator_config)
  model = ElectraPretrainer(generator, discriminator, rtd_weight=rtd_weight,
                            temperature=temperature, disallow_correct=disallow_correct,
                            rtd_positions=rtd_positions, rtd_start_step=rtd_start_step,
                            discriminator_mlm_weight=discriminator_mlm_weight,
                            discriminator_mlm_steps=discriminator_mlm_steps, rtd_prior=rtd_prior,
                            masked_warmup=masked_warmup, name="electra")
  if generator_init_checkpoint:
    init_from_generator_checkpoint(model, generator_init_checkpoint)
  if freeze_generator:
    model.generator.trainable = False
    model.masked_lm.trainable = False
  return model
