"""ELECTRA: replaced token detection (Clark, dissertation ch. 5; Clark et al., 2020).

A small masked-LM generator G fills masked positions with samples from p_G; the discriminator D
predicts for every (non-pad) position whether its token was replaced:

  L_MLM  = E[ Σ_{t∈m} −log p_G(x_t | x^masked) ] / |m|                        (masked LM)
  L_Disc = E[ Σ_t −1(x^corrupt_t = x_t) log D(x^corrupt, t)
                  −1(x^corrupt_t ≠ x_t) log(1 − D(x^corrupt, t)) ] / n        (RTD)
  min L_MLM + λ L_Disc,  λ = 50

The pair, sampling, losses, metrics and the masked-LM warm-up (a detection start, the
discriminator's own masked LM L_DMLM weighted μ_t, the masked input before detection starts) are
`objectives.GeneratorDiscriminator`'s, shared with the other generator/discriminator methods; this
module adds ELECTRA's options: ELECTRA 15% (`rtd_positions="masked"`), weight tying, two-stage
training (§5.3.3), a generator frozen from a step on (`generator_frozen_step`) and a sampling
temperature that falls from detection start (`initial_temperature`, as Fast-ELECTRA's curriculum).
"""
import os
from typing import Optional

import gin
import tensorflow as tf
import tf_keras

from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.ops import losses as losses_lib
from official_rtd.ops import sampling
from official_rtd.utils import checkpoint_files


class ElectraPretrainer(objectives.GeneratorDiscriminator):
  """`objectives.GeneratorDiscriminator` (see its outputs and its masked-LM warm-up) with ELECTRA
  15% (`rtd_positions` "all" or "masked": the discriminator loss only over the masked
  positions), a generator frozen from a step on and an annealed sampling temperature."""
  warmup_settings = "build_electra_pretrainer"

  def __init__(self, generator, discriminator, rtd_positions: str = "all",
               generator_frozen_step: int = 0, initial_temperature: float = 0.0,
               temperature_steps: int = 0, **kwargs):
    super().__init__(generator, discriminator, **kwargs)
    if rtd_positions not in ("all", "masked"):
      raise ValueError(f"rtd_positions must be 'all' or 'masked', got {rtd_positions!r}")
    if generator_frozen_step < 0:
      raise ValueError(f"build_electra_pretrainer.generator_frozen_step must be >= 0 (0: never "
                       f"frozen), got {generator_frozen_step}")
    if initial_temperature < 0 or (initial_temperature and (
        temperature_steps <= 0 or self.temperature <= 0)):
      raise ValueError(
          f"build_electra_pretrainer.initial_temperature = {initial_temperature} needs "
          f"temperature_steps > 0 (got {temperature_steps}) and temperature > 0 (got "
          f"{self.temperature}) to fall to; 0 leaves the temperature constant")
    self.rtd_positions = rtd_positions
    self.generator_frozen_step = generator_frozen_step
    self.initial_temperature = float(initial_temperature)
    self.temperature_steps = temperature_steps

  def sampling_temperature(self):
    """T_t: with `initial_temperature` T_0, T_0 until detection starts (t_s), then linearly down
    to `temperature` T over `temperature_steps` S (a descending schedule, as Fast-ELECTRA's):
    T_t = T_0 + (T − T_0) · clip((t − t_s) / S, 0, 1)."""
    if not self.initial_temperature:
      return self.temperature
    since = tf.cast(self.training_step() - self.detection_start_step(), tf.float32)
    progress = tf.clip_by_value(since / float(self.temperature_steps), 0.0, 1.0)
    return self.initial_temperature + (self.temperature - self.initial_temperature) * progress

  def build_metrics(self):
    """The shared metrics and, with an annealed temperature, `sampling_temperature` (T_t)."""
    metrics = super().build_metrics()
    if self.initial_temperature:
      metrics["sampling_temperature"] = tf_keras.metrics.Mean("sampling_temperature")
    return metrics

  def update_metrics(self, metrics, inputs, outputs, losses):
    super().update_metrics(metrics, inputs, outputs, losses)
    if self.initial_temperature:
      metrics["sampling_temperature"].update_state(self.sampling_temperature())

  def compute_losses(self, inputs, outputs):
    if self.rtd_positions == "masked":  # ELECTRA 15%: the loss only over the masked positions
      inputs = dict(inputs, input_mask=sampling.scatter_positions(
          tf.zeros_like(inputs["input_mask"]), inputs["masked_lm_positions"],
          tf.ones_like(inputs["masked_lm_positions"]), inputs["masked_lm_weights"]))
    losses = super().compute_losses(inputs, outputs)  # L_MLM + λ_t L_Disc + μ_t L_DMLM
    if not self.generator_frozen_step:
      return losses
    # From generator_frozen_step on, L_MLM still logged but out of the total: the generator's own
    # layers and head get no gradient (shared embeddings still train through the discriminator).
    frozen = tf.cast(self.training_step() >= self.generator_frozen_step, tf.float32)
    return dict(losses, total_loss=losses_lib.combined_loss(
        losses["total_loss"].value - frozen * losses["mlm_loss"].value, inputs))


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
                             tie_embeddings: Optional[bool] = None, tie_all: bool = False,
                             temperature: float = 1.0,
                             disallow_correct: bool = False, rtd_weight: float = 50.0,
                             rtd_positions: str = "all", generator_init_checkpoint: str = "",
                             freeze_generator: bool = False,
                             generator_config: Optional[EncoderConfig] = None,
                             rtd_start_step: Optional[int] = None,
                             discriminator_mlm_weight: Optional[float] = None,
                             discriminator_mlm_steps: Optional[int] = None,
                             rtd_prior: float = 0.5,
                             masked_warmup: Optional[bool] = None,
                             generator_frozen_step: int = 0, initial_temperature: float = 0.0,
                             temperature_steps: int = 0) -> ElectraPretrainer:
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
    rtd_start_step, discriminator_mlm_weight, discriminator_mlm_steps, masked_warmup: the
      masked-LM warm-up (`objectives.masked_lm_warmup`, whose bindings apply where these are
      unset; run configs written before it bind them here).
    rtd_prior: the RTD head's logit bias starts at log(p / (1 − p)) (0.5: ELECTRA's bias 0), e.g.
      the expected replaced fraction, so the first steps need not push every representation
      toward "original".
    generator_frozen_step: from this step on (0: never) the generator's masked-LM loss leaves
      the total: its layers and head get no gradient (only Adam's decaying momentum and weight
      decay still move them); shared embeddings train on through the discriminator. The
      generator's forward and backward passes still run, and are counted in FLOPs. E.g. the
      detection start: a generator frozen after the warm-up.
    initial_temperature, temperature_steps: sampling at T_0 = `initial_temperature` until
      detection starts, then linearly down to `temperature` over `temperature_steps` (0: a
      constant `temperature`; `ElectraPretrainer.sampling_temperature`).
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
  given = dict(rtd_start_step=rtd_start_step, discriminator_mlm_weight=discriminator_mlm_weight,
               discriminator_mlm_steps=discriminator_mlm_steps, masked_warmup=masked_warmup)
  warmup = {name: given[name] if given[name] is not None else value
            for name, value in objectives.masked_lm_warmup().items()}
  model = ElectraPretrainer(generator, discriminator, rtd_weight=rtd_weight,
                            temperature=temperature, disallow_correct=disallow_correct,
                            rtd_positions=rtd_positions, rtd_prior=rtd_prior, name="electra",
                            generator_frozen_step=generator_frozen_step,
                            initial_temperature=initial_temperature,
                            temperature_steps=temperature_steps, **warmup)
  if generator_init_checkpoint:
    init_from_generator_checkpoint(model, generator_init_checkpoint)
  if freeze_generator:
    model.generator.trainable = False
    model.masked_lm.trainable = False
  return model
