"""The pre-training loop: any `PretrainingModel`, any `tf.distribute` strategy, resumable.

Everything the run needs is checked before the first step (records sidecars against the model's
vocab size and sequence length, the vocab file against the records' hash). Checkpoints hold the
model and the optimizer (with its step). The input order is deterministic for `TrainConfig.seed`,
and a resumed run skips the batches the checkpointed steps consumed (distributed iterators cannot
be checkpointed), so a killed run restarts with the same step, optimizer state and data position.
The skip re-reads (but does not decode) those records: seconds per million examples.
"""
import dataclasses
import math
import os
import shutil
import time
from typing import Callable, Dict, Optional, Tuple

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd import progress
from official_rtd import ranges
from official_rtd.data import pretrain_dataloader
from official_rtd.data import records
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import base
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.ops import masking
from official_rtd.ops import sampling
from official_rtd.training import export
from official_rtd.training import optimization
from official_rtd.training import precision
from official_rtd.training import run_dir
from official_rtd.training import train_step
from official_rtd.training import warm_start


@gin.configurable
@dataclasses.dataclass(frozen=True)
class TrainConfig:
  train_batch_size: int = 128
  num_train_steps: int = 1_000_000
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  # > 0: also keep the checkpoint of every multiple of this step for good, in <model_dir>/milestones
  # (hard links, no copy), for evaluating a long run's curve later.
  keep_checkpoint_every_steps: int = 0
  log_every_steps: int = 100
  shuffle_buffer_size: int = 10000
  seed: int = 0
  # > 0: train for as many steps as fit in this many section 5.2.2 FLOPs (overrides
  # num_train_steps, so the learning rate decays to its end at the budget).
  train_flops_budget: float = 0.0
  mixed_precision: str = "float32"  # or bfloat16, float16 (with dynamic loss scaling)
  jit_compile: bool = False  # XLA-compile each replica's forward and backward pass
  # Warm start (`training/warm_start.py`): the weights of another run's or an imported checkpoint
  # when this run has none of its own; the components left fresh if the source lacks them.
  init_checkpoint: str = ""
  init_checkpoint_allow_missing: Tuple[str, ...] = ()

  def __post_init__(self):
    ranges.check_ranges(self, TRAIN_CONFIG_RANGES, "TrainConfig.{name} = {value}")


# Valid values of TrainConfig's numbers (`ranges.Range`), checked when the config is built.
TRAIN_CONFIG_RANGES = {
    "train_batch_size": (1, None, True), "num_train_steps": (1, None, True),
    "max_seq_length": (3, None, True), "max_predictions_per_seq": (1, None, True),
    "save_checkpoints_steps": (1, None, True), "keep_checkpoint_max": (1, None, True),
    "keep_checkpoint_every_steps": (0, None, True),
    "log_every_steps": (1, None, True), "shuffle_buffer_size": (1, None, True),
    "train_flops_budget": (0, None, True)}


@gin.configurable
def dynamic_masking(max_predictions_per_seq: int, mask_prob: float = 0.15,
                    strategy: str = "electra", whole_word_mask: bool = False,
                    rounding: str = "round"):
  """Masking applied on the fly to unmasked records (`--dupe_factor=0`)."""
  return masking.MaskingConfig(mask_prob=mask_prob, max_predictions_per_seq=max_predictions_per_seq,
                               strategy=strategy, whole_word_mask=whole_word_mask,
                               rounding=rounding)


@gin.configurable
def pretraining_model(encoder_config: EncoderConfig, vocab=None, token_counts=None,
                      method: str = gin.REQUIRED) -> base.PretrainingModel:
  """The method the task gin file names (`pretraining_model.method = "electra"`), built with the
  run's resources it declares (`methods.registry`): the vocab, and the training records' token
  counts (a callable, so only methods that need them pay for the counting pass)."""
  return registry.build(method, encoder_config, vocab=vocab, token_counts=token_counts)


MILESTONES = "milestones"
# Steps run in one call of the compiled loop last about this long at most (after the first call),
# so Ctrl-C or SIGTERM, handled between calls, is answered within about this many seconds.
MAX_CHUNK_SECONDS = 10.0


def keep_milestone(path: str, directory: str) -> str:
  """Hard-links (or copies: across file systems, or on GCS) the files of checkpoint `path` into
  `directory`, where the checkpoint manager's retention never deletes them; returns the new
  prefix."""
  tf.io.gfile.makedirs(directory)
  for name in tf.io.gfile.glob(path + ".*"):
    target = os.path.join(directory, os.path.basename(name))
    if not tf.io.gfile.exists(target):
      try:
        os.link(name, target)
      except OSError:
        tf.io.gfile.copy(name, target)
  return os.path.join(directory, os.path.basename(path))


class TrainingSetupError(ValueError):
  """Inputs and configuration that do not fit together; raised before training starts."""


class NonFiniteError(ValueError):
  """A loss or weight that went NaN or infinite during training."""


def _is_chief(strategy) -> bool:
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return True
  if resolver.task_type == "chief":
    return True
  return (resolver.task_type == "worker" and resolver.task_id == 0
          and "chief" not in resolver.cluster_spec().as_dict())


class Trainer:
  """Builds the model, optimizer and input for a run and trains it.

  Args:
    model_dir: checkpoints, TensorBoard summaries (`train/`) and the export (`export/`).
    input_path: records directories (comma list / globs).
    strategy: a `tf.distribute.Strategy`.
    vocab_file: defaults to the one named in the records' sidecar.
    encoder_config: `vocab_size=None` takes the vocab's size.
    model_fn: `encoder_config -> PretrainingModel`; defaults to the gin-chosen method.
  """

  def __init__(self, model_dir: str, input_path: str, strategy: tf.distribute.Strategy,
               train_config: Optional[TrainConfig] = None,
               optimizer_config: Optional[optimization.OptimizerConfig] = None,
               encoder_config: Optional[EncoderConfig] = None, vocab_file: Optional[str] = None,
               model_fn: Optional[Callable[..., base.PretrainingModel]] = None,
               log: Callable[[str], None] = print):
    self.model_dir = model_dir
    self.strategy = strategy
    self.train_config = train_config or TrainConfig()
    self.optimizer_config = optimizer_config or optimization.OptimizerConfig()
    self.log = log
    self.is_chief = _is_chief(strategy)
    resolver = getattr(strategy, "cluster_resolver", None)
    self._multi_worker = bool(resolver is not None and resolver.task_type)
    self.input_config, self.vocab = self._check_inputs(input_path, vocab_file,
                                                       encoder_config or EncoderConfig())
    tf_keras.utils.set_random_seed(self.train_config.seed)
    precision.warn_if_emulated(self.train_config.mixed_precision, self.log)

    with strategy.scope():
      with precision.policy(self.train_config.mixed_precision):
        self.model = (model_fn or pretraining_model)(
            encoder_config=self.encoder_config,
            **({} if model_fn else {"vocab": self.vocab, "token_counts": self.token_counts}))
        self.model(records.dummy_inputs(self.train_config.max_seq_length,
                                        self.train_config.max_predictions_per_seq),
                   training=False)  # creates the variables
      self._apply_flops_budget()
      warning = optimization.schedule_warning(self.optimizer_config,
                                              self.train_config.num_train_steps)
      if warning:
        self.log(warning)
      self.optimizer = precision.wrap_optimizer(
          optimization.build_optimizer(self.optimizer_config, self.train_config.num_train_steps),
          self.train_config.mixed_precision)
      self.model.bind_step(lambda: self.optimizer.iterations)  # for step-dependent schedules
      # Create the Adam/LAMB slots now, so a restore fills them at once and can be verified.
      self.optimizer._create_all_weights(self.model.trainable_variables)  # pylint: disable=protected-access
      self.metrics = self.model.build_metrics()
    self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer)
    checkpoint_dir = model_dir if self.is_chief else os.path.join(
        model_dir, f".tmp_worker_{strategy.cluster_resolver.task_id}")
    self.manager = tf.train.CheckpointManager(self.checkpoint, checkpoint_dir,
                                              max_to_keep=self.train_config.keep_checkpoint_max)
    self.step_fn = train_step.TrainStep(self.model, self.optimizer, self.optimizer_config.clip_norm,
                                        self.metrics, self.train_config.jit_compile)
    self._train_fn = None
    self.iterator = None  # set by restore()
    clip = self.optimizer_config.clip_norm
    self.log(f"gradients clipped to global norm {clip:g} by the trainer after the cross-replica "
             "sum (the optimizer's own gradient_clip_norm is 0, unused)" if clip > 0 else
             "no gradient clipping (OptimizerConfig.clip_norm = 0)")

  # --- set-up checks -----------------------------------------------------------------------------
  def _check_inputs(self, input_path, vocab_file, encoder_config):
    cfg = self.train_config
    probe = pretrain_dataloader.PretrainInputConfig(
        input_path=input_path, global_batch_size=cfg.train_batch_size,
        seq_length=cfg.max_seq_length, max_predictions_per_seq=cfg.max_predictions_per_seq)
    try:
      _, masked, sidecar = pretrain_dataloader.resolve_records(probe)
    except records.RecordsError as e:
      raise TrainingSetupError(str(e)) from None
    vocab = vocab_lib.load_vocab(vocab_file or sidecar["vocab"]["file"])
    if vocab.sha256 != sidecar["vocab"]["sha256"]:
      raise TrainingSetupError(
          f"vocab file {vocab.path} is not the one the records in {input_path} were built with "
          f"({sidecar['vocab']['file']})")
    if encoder_config.vocab_size is None:
      encoder_config = dataclasses.replace(encoder_config, vocab_size=vocab.size)
    elif encoder_config.vocab_size != sidecar["vocab"]["size"]:
      raise TrainingSetupError(
          f"the model's vocab_size {encoder_config.vocab_size} differs from the records' vocab "
          f"size {sidecar['vocab']['size']} ({input_path})")
    if cfg.max_seq_length > encoder_config.max_position_embeddings:
      raise TrainingSetupError(
          f"max_seq_length {cfg.max_seq_length} exceeds max_position_embeddings "
          f"{encoder_config.max_position_embeddings}")
    self.encoder_config = encoder_config
    self.masked_records = masked
    self.do_lower_case = sidecar["vocab"]["do_lower_case"]
    input_config = dataclasses.replace(
        probe, shuffle_buffer_size=cfg.shuffle_buffer_size, seed=cfg.seed,
        vocab_sha256=vocab.sha256,
        dynamic_masking=None if masked else dynamic_masking(cfg.max_predictions_per_seq),
        token_tables=None if masked else masking.TokenTables.from_vocab(vocab))
    return input_config, vocab

  def _apply_flops_budget(self):
    cfg = self.train_config
    if cfg.train_flops_budget <= 0:
      return
    per_step = self.train_flops(1)
    steps = int(cfg.train_flops_budget // per_step)
    if steps < 1:
      raise TrainingSetupError(f"train_flops_budget {cfg.train_flops_budget:.3g} is less than one "
                               f"step ({per_step:.3g} FLOPs)")
    self.train_config = dataclasses.replace(cfg, num_train_steps=steps)
    self.log(f"FLOPs budget {cfg.train_flops_budget:.3g}: {steps} steps of {per_step:.3g} FLOPs")

  def token_counts(self) -> np.ndarray:
    """`[vocab]` counts of the original tokens of the training records (one pass, cached in
    `<model_dir>/token_counts.npy`)."""
    cache = os.path.join(self.model_dir, "token_counts.npy")
    if os.path.isfile(cache):
      return np.load(cache)
    config = dataclasses.replace(self.input_config, is_training=False, global_batch_size=1024)
    counts = np.zeros([self.vocab.size], np.int64)
    for batch in pretrain_dataloader.load_pretraining_dataset(config):
      ids = (sampling.unmask(batch) if "masked_lm_ids" in batch else batch["input_word_ids"])
      ids = ids.numpy()[batch["input_mask"].numpy() > 0]
      counts += np.bincount(ids, minlength=self.vocab.size)
    if self.is_chief:
      os.makedirs(self.model_dir, exist_ok=True)
      np.save(cache, counts)
    self.log(f"counted {counts.sum()} tokens of the training records")
    return counts

  def _train_steps(self):
    if self._train_fn is None:
      @tf.function
      def train_steps(iterator, num_steps):
        for _ in tf.range(num_steps):
          self.strategy.run(self.step_fn, args=(next(iterator),))
      self._train_fn = train_steps
    return self._train_fn

  # --- the loop ----------------------------------------------------------------------------------
  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def restore(self) -> int:
    """Restores the latest checkpoint in `model_dir`, if any (else warm-starts from
    `init_checkpoint`, if given), and positions the input after the batches its steps consumed;
    returns the step."""
    cfg = self.train_config
    latest = tf.train.latest_checkpoint(self.model_dir)
    if latest:
      status = None
      try:
        status = self.checkpoint.restore(latest)
        status.assert_consumed()
      except (AssertionError, ValueError, IndexError, tf.errors.OpError) as e:
        if status is not None:  # no per-value "could not be found" warnings after the error
          status.expect_partial()
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise TrainingSetupError(
            f"{latest} does not restore into this model (a run of other sizes or another "
            f"method?): {first[:300]}; the directory was left as it is") from None
      self.log(f"restored {latest} (step {self.step})"
               + (" (this run's own checkpoint: init_checkpoint is not read again)"
                  if cfg.init_checkpoint else ""))
    elif cfg.init_checkpoint:
      warm_start.warm_start(self.model, cfg.init_checkpoint, self.vocab,
                            cfg.init_checkpoint_allow_missing, self.log)
    self.iterator = self._make_iterator(self.step)
    return self.step

  def _make_iterator(self, step: int):
    def dataset_fn(context: tf.distribute.InputContext):
      replicas_per_pipeline = context.num_replicas_in_sync // context.num_input_pipelines
      config = dataclasses.replace(self.input_config, skip_batches=step * replicas_per_pipeline)
      return pretrain_dataloader.load_pretraining_dataset(config, context)
    return iter(self.strategy.distribute_datasets_from_function(dataset_fn))

  def train_flops(self, step: int) -> float:
    """Section 5.2.2 FLOPs that `step` training steps consumed."""
    cfg = self.train_config
    return step * cfg.train_batch_size * self.model.train_flops_per_example(
        cfg.max_seq_length, cfg.max_predictions_per_seq)

  def train(self, evaluator=None, eval_every_steps: int = 0) -> Dict[str, float]:
    """Trains to `num_train_steps` (resuming if possible), evaluating every `eval_every_steps` and
    at the end when an `evaluation.Evaluator` is given; exports the discriminator encoder and
    returns the last logged metrics."""
    cfg = self.train_config
    if self.iterator is None:
      self.restore()
    writer = (tf.summary.create_file_writer(os.path.join(self.model_dir, "train"))
              if self.is_chief else tf.summary.create_noop_writer())
    train_steps = self._train_steps()
    eval_every = eval_every_steps if evaluator is not None and eval_every_steps > 0 else 0
    try:
      last = self._train_loop(train_steps, writer, evaluator, eval_every)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (tools/cli.py): keep the steps done
      self._save_on_interrupt()
      raise
    if self.is_chief:
      export_dir = export.export_encoder(self.model, self.vocab, self.model_dir,
                                         max_seq_length=cfg.max_seq_length,
                                         do_lower_case=self.do_lower_case)
      self.log(f"exported the discriminator encoder to {export_dir}")
    return last

  def _train_loop(self, train_steps, writer, evaluator, eval_every: int) -> Dict[str, float]:
    cfg = self.train_config
    step, last = self.step, {}
    start_step, start_time = step, time.time()
    interval_start, interval_steps = time.time(), 0
    seconds_per_step = None
    while step < cfg.num_train_steps:
      n = min(cfg.log_every_steps - step % cfg.log_every_steps,
              cfg.save_checkpoints_steps - step % cfg.save_checkpoints_steps,
              cfg.num_train_steps - step,
              *([eval_every - step % eval_every] if eval_every else []))
      # A signal is handled between calls: keep each call short (the first, which traces the
      # loop, runs one step and measures it).
      if seconds_per_step is None:
        n = 1
      else:
        n = max(1, min(n, int(MAX_CHUNK_SECONDS / seconds_per_step)))
      chunk_start = time.time()
      try:
        train_steps(self.iterator, tf.constant(n))
      except tf.errors.InvalidArgumentError:  # e.g. a token sampled from NaN logits
        self._check_finite(step + n, weights=True)
        raise
      seconds_per_step = (time.time() - chunk_start) / n
      step, interval_steps = step + n, interval_steps + n
      # The losses after every call; the weights (one pass over all of them) before a save.
      self._check_finite(step, weights=step % cfg.save_checkpoints_steps == 0
                         or step == cfg.num_train_steps)
      if step % cfg.log_every_steps == 0 or step == cfg.num_train_steps:
        last = self._log(writer, step, interval_steps, time.time() - interval_start,
                         (time.time() - start_time) / max(step - start_step, 1))
        interval_start, interval_steps = time.time(), 0
      if step % cfg.save_checkpoints_steps == 0 or step == cfg.num_train_steps:
        self._save(step)
      if evaluator is not None and self.is_chief and (
          (eval_every and step % eval_every == 0) or step == cfg.num_train_steps):
        self.evaluate(evaluator, step)
    return last

  def _weights_finite(self) -> bool:
    return all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in self.model.trainable_variables)

  def _learning_rate(self) -> float:
    """The learning rate of the last step taken."""
    rate = self.optimizer.learning_rate
    return float(rate(self.optimizer.iterations - 1)) if callable(rate) else float(rate)

  def _check_finite(self, step: int, weights: bool):
    """Stops the run, before any checkpoint or export is written, when a loss of the steps up
    to `step` (or, with `weights`, a weight) is not finite, naming it, the learning rate and the
    last checkpoint."""
    losses = {name: float(metric.result()) for name, metric in self.metrics.items()
              if name.endswith("loss")}
    bad = [name for name, value in losses.items() if not math.isfinite(value)]
    if not bad and (not weights or self._weights_finite()):
      return
    rate = self._learning_rate()
    what = f"{bad[0]} = {losses[bad[0]]}" if bad else "a weight"
    raise NonFiniteError(
        f"{what} is not finite by step {step} (learning rate {rate:.3g}, OptimizerConfig."
        f"learning_rate = {self.optimizer_config.learning_rate:g}): the run stopped before "
        f"writing a checkpoint of it; the last checkpoint is "
        f"{tf.train.latest_checkpoint(self.model_dir) or 'none'}. Lower the learning rate, or "
        "lengthen the warmup, and re-run")

  def _save_on_interrupt(self):
    """Writes a checkpoint of the last finished step (unless one exists, or a weight is not
    finite), so an interrupted or preempted run loses no step; one process only (under
    MultiWorkerMirrored every worker must take part in a save)."""
    step = self.step
    latest = tf.train.latest_checkpoint(self.model_dir)
    if step == 0 or (latest and latest.endswith(f"-{step}")) or self._multi_worker:
      return
    if not self._weights_finite():
      self.log(f"interrupted at step {step}: not saved (non-finite weights); the last checkpoint "
               f"is {latest}")
      return
    self._save(step)
    self.log(f"interrupted at step {step}: saved that step; re-run the same command to resume")

  def evaluate(self, evaluator, step: int) -> dict:
    """Runs `evaluator` on the current weights; logs, writes `eval/` summaries and a JSON row."""
    start = time.time()
    figures = evaluator.evaluate()
    row = dict(figures, step=step, train_flops=self.train_flops(step))
    run_dir.append_result(self.model_dir, row)
    writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "eval"))
    with writer.as_default(step=step):
      for name, value in figures.items():
        tf.summary.scalar(name, value)
      tf.summary.scalar("train_flops", row["train_flops"])
    writer.flush()
    shown = " ".join(f"{k}={v:.4f}" for k, v in sorted(figures.items()))
    self.log(f"eval at step {step} ({time.time() - start:.1f}s): {shown}")
    return row

  def evaluate_checkpoints(self, evaluator, all_checkpoints: bool = False) -> list:
    """`--mode=eval`: evaluates the latest checkpoint (or every one kept) of `model_dir`."""
    state = tf.train.get_checkpoint_state(self.model_dir)
    paths = list(state.all_model_checkpoint_paths) if state else []
    if all_checkpoints:  # the milestones too, in step order, each once
      kept = {os.path.basename(p) for p in paths}
      milestones = [p[:-len(".index")] for p in tf.io.gfile.glob(
          os.path.join(self.model_dir, MILESTONES, "ckpt-*.index"))]
      paths += [p for p in milestones if os.path.basename(p) not in kept]
      paths.sort(key=lambda p: int(p.rsplit("-", 1)[1]))
    if not paths:
      raise TrainingSetupError(f"no checkpoint to evaluate in {self.model_dir}")
    rows = []
    for path in (paths if all_checkpoints else paths[-1:]):
      self.checkpoint.restore(path).assert_existing_objects_matched()
      rows.append(self.evaluate(evaluator, self.step))
    return rows

  def _save(self, step):
    path = self.manager.save(checkpoint_number=step)
    if not self.is_chief:
      shutil.rmtree(self.manager.directory, ignore_errors=True)
      return
    self.log(f"saved checkpoint {path}")
    every = self.train_config.keep_checkpoint_every_steps
    if every and step % every == 0:
      self.log(f"kept milestone {keep_milestone(path, os.path.join(self.model_dir, MILESTONES))}")

  def _log(self, writer, step, steps, seconds, seconds_per_step) -> Dict[str, float]:
    cfg = self.train_config
    values = {name: float(metric.result()) for name, metric in self.metrics.items()}
    learning_rate = self._learning_rate()
    examples_per_s = steps * cfg.train_batch_size / max(seconds, 1e-9)
    eta = (cfg.num_train_steps - step) * seconds_per_step
    with writer.as_default(step=step):
      for name, value in values.items():
        tf.summary.scalar(name, value)
      tf.summary.scalar("learning_rate", learning_rate)
      tf.summary.scalar("examples_per_second", examples_per_s)
      tf.summary.scalar("train_flops", self.train_flops(step))
    writer.flush()
    for metric in self.metrics.values():
      metric.reset_state()
    shown = " ".join(f"{k}={v:.4f}" for k, v in values.items())
    self.log(f"step {step}/{cfg.num_train_steps} {shown} lr={learning_rate:.3g} "
             f"examples/s={examples_per_s:.1f} tokens/s={examples_per_s * cfg.max_seq_length:.0f} "
             f"train_flops={self.train_flops(step):.3g} ETA {progress.format_duration(eta)}")
    return dict(values, learning_rate=learning_rate, step=step, train_flops=self.train_flops(step))
