"""The pre-training loop: any `PretrainingModel`, any `tf.distribute` strategy, resumable.

Everything the run needs is checked before the first step (records sidecars against the model's
vocab size and sequence length, the vocab file against the records' hash). Checkpoints hold the
model and the optimizer (with its step). The input order is deterministic for `TrainConfig.seed`,
and a resumed run skips the batches the checkpointed steps consumed (distributed iterators cannot
be checkpointed), so a killed run restarts with the same step, optimizer state and data position.
The skip re-reads (but does not decode) those records: seconds per million examples.

For long runs (docs/long_runs.md): Ctrl-C/SIGTERM save the last step; a non-finite loss or
gradient norm skips that update (`TrainConfig.on_nonfinite` says what follows); k micro-batches can
make one update (`gradient_accumulation_steps`); the input, sequence length and batch size can
change at given steps (`phases`); milestones and an average of the weights (`ema_decay`) can be
kept.
"""
import contextlib
import dataclasses
import os
import time
from typing import Callable, Dict, Optional, Tuple

import gin
import tensorflow as tf

from official_rtd import checkpoint_files
from official_rtd import ranges
from official_rtd.methods import base
from official_rtd.methods import registry
from official_rtd.interop import export
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import checkpointing
from official_rtd.training import ema
from official_rtd.training import errors
from official_rtd.training import nonfinite
from official_rtd.training import optimization
from official_rtd.training import reporting
from official_rtd.training import run_inputs
from official_rtd.training import strategies
from official_rtd.training import train_step
from official_rtd.training import warm_start


@gin.configurable
@dataclasses.dataclass(frozen=True)
class TrainConfig:
  # Examples per micro-batch over all replicas; an optimizer update takes
  # gradient_accumulation_steps of them (the effective batch is their product).
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
  # k > 1: each update sums the gradients of k micro-batches of train_batch_size run one after
  # another, every loss normalised over all k (equal to one batch of k·train_batch_size).
  gradient_accumulation_steps: int = 1
  # A step whose loss or gradient norm is not finite never changes a weight. Then: "skip" goes on
  # with the next batch (and stops after nonfinite_patience such steps in a row), "rollback"
  # restores the last checkpoint and goes on with the next batches (stops after
  # nonfinite_patience rollbacks), "stop" stops at once. Each names the step and the loss.
  on_nonfinite: str = "skip"
  nonfinite_patience: int = 10
  # > 0: keep an exponential moving average of the weights (e.g. 0.999), in the checkpoints, used
  # for held-out evaluation and exported to <model_dir>/export_ema.
  ema_decay: float = 0.0
  # Later phases of one run: dicts with "start_step" and any of "input_records",
  # "max_seq_length", "train_batch_size", "max_predictions_per_seq" (unset: the previous
  # phase's), e.g. BERT's 90% of the steps at 128 tokens, then 512. The step, optimizer state and
  # schedule carry on; the first phase is the run's own input and the fields above.
  phases: Tuple[dict, ...] = ()

  def __post_init__(self):
    ranges.check_ranges(self, TRAIN_CONFIG_RANGES, "TrainConfig.{name} = {value}")
    if self.on_nonfinite not in NONFINITE_POLICIES:
      raise ValueError(f"TrainConfig.on_nonfinite = {self.on_nonfinite!r} must be one of "
                       f"{NONFINITE_POLICIES}")
    previous = 0
    for index, phase in enumerate(self.phases):
      where = f"TrainConfig.phases[{index}]"
      if not isinstance(phase, dict) or "start_step" not in phase:
        raise ValueError(f"{where} = {phase!r} must be a dict with a 'start_step'")
      unknown = sorted(set(phase) - set(PHASE_FIELDS))
      if unknown:
        raise ValueError(f"{where} has unknown keys {unknown}; known: {list(PHASE_FIELDS)}")
      start = phase["start_step"]
      if not isinstance(start, int) or not previous < start < self.num_train_steps:
        raise ValueError(f"{where}['start_step'] = {start!r} must be an int after the previous "
                         f"phase's start ({previous}) and before num_train_steps "
                         f"({self.num_train_steps})")
      previous = start
      for name in ("max_seq_length", "train_batch_size", "max_predictions_per_seq"):
        if name in phase:
          low = TRAIN_CONFIG_RANGES[name][0]
          if not isinstance(phase[name], int) or phase[name] < low:
            raise ValueError(f"{where}['{name}'] = {phase[name]!r} must be an int >= {low}")
    if self.phases and self.train_flops_budget:
      raise ValueError("TrainConfig.train_flops_budget and TrainConfig.phases cannot be combined: "
                       "set num_train_steps")


NONFINITE_POLICIES = ("skip", "rollback", "stop")
PHASE_FIELDS = ("start_step", "input_records", "max_seq_length", "train_batch_size",
                "max_predictions_per_seq")


# Valid values of TrainConfig's numbers (`ranges.Range`), checked when the config is built.
TRAIN_CONFIG_RANGES = {
    "train_batch_size": (1, None, True), "num_train_steps": (1, None, True),
    "max_seq_length": (3, None, True), "max_predictions_per_seq": (1, None, True),
    "save_checkpoints_steps": (1, None, True), "keep_checkpoint_max": (1, None, True),
    "keep_checkpoint_every_steps": (0, None, True),
    "log_every_steps": (1, None, True), "shuffle_buffer_size": (1, None, True),
    "train_flops_budget": (0, None, True), "gradient_accumulation_steps": (1, None, True),
    "nonfinite_patience": (1, None, True), "ema_decay": (0, 1, True)}


@gin.configurable
def pretraining_model(encoder_config: EncoderConfig, vocab=None, token_counts=None,
                      method: str = gin.REQUIRED) -> base.PretrainingModel:
  """The method the task gin file names (`pretraining_model.method = "electra"`), built with the
  run's resources it declares (`methods.registry`): the vocab, and the training records' token
  counts (a callable, so only methods that need them pay for the counting pass)."""
  return registry.build(method, encoder_config, vocab=vocab, token_counts=token_counts)


EMA_EXPORT_DIR = "export_ema"
# Steps run in one call of the compiled loop last about this long at most (after the first call),
# so Ctrl-C or SIGTERM, handled between calls, is answered within about this many seconds.
MAX_CHUNK_SECONDS = 10.0


# Re-exported: the errors live in `errors.py`, the milestone helpers in `checkpointing.py`, the
# inputs (phases, the masking configurable) in `run_inputs.py`.
TrainingSetupError = errors.TrainingSetupError
NonFiniteError = errors.NonFiniteError
Phase = run_inputs.Phase
dynamic_masking = run_inputs.dynamic_masking
MILESTONES = checkpointing.MILESTONES
keep_milestone = checkpointing.keep_milestone


class Trainer:
  """Trains a built run: handed its checked inputs, model and optimizer (`runs.build_trainer`
  builds them), it runs the steps, saves, reports and exports.

  Args:
    model_dir: checkpoints, TensorBoard summaries (`train/`) and the export (`export/`).
    strategy: the `tf.distribute.Strategy` the model and optimizer were built under.
    inputs: the run's `run_inputs.RunInputs` (records, vocab, phases).
    model: the `PretrainingModel`, its variables created.
    optimizer: its optimizer, slots created and the model's step bound to it.
    train_config: the run's `TrainConfig` (`num_train_steps` after any FLOPs budget).
    optimizer_config: the `OptimizerConfig` the optimizer was built from (clipping, learning rate).
  """

  def __init__(self, model_dir: str, strategy: tf.distribute.Strategy,
               inputs: run_inputs.RunInputs, model: base.PretrainingModel, optimizer,
               train_config: TrainConfig, optimizer_config: optimization.OptimizerConfig,
               log: Callable[[str], None] = print):
    self.model_dir, self.strategy, self.inputs = model_dir, strategy, inputs
    self.model, self.optimizer = model, optimizer
    self.train_config, self.optimizer_config, self.log = train_config, optimizer_config, log
    self.is_chief = strategies.is_chief(strategy)
    resolver = getattr(strategy, "cluster_resolver", None)
    self._multi_worker = bool(resolver is not None and resolver.task_type)
    self.input_config, self.vocab, self.phases = inputs.input_config, inputs.vocab, inputs.phases
    self.encoder_config, self.do_lower_case = inputs.encoder_config, inputs.do_lower_case
    self.masked_records = inputs.masked_records
    with strategy.scope():
      self.metrics = model.build_metrics()
      self.weight_average = (ema.WeightAverage(model.trainable_variables, train_config.ema_decay)
                             if train_config.ema_decay else None)
      self.step_fn = train_step.TrainStep(
          model, optimizer, optimizer_config.clip_norm, self.metrics, train_config.jit_compile,
          train_config.gradient_accumulation_steps, self.weight_average)
    parts = {"model": model, "optimizer": optimizer, "train_state": self.step_fn.state()}
    if self.weight_average is not None:
      parts["weight_average"] = self.weight_average.checkpoint()
    self.checkpointer = checkpointing.Checkpointer(
        model_dir, parts, train_config.keep_checkpoint_max,
        train_config.keep_checkpoint_every_steps,
        None if self.is_chief else strategy.cluster_resolver.task_id, log)
    # The public reporting hook: `trainer.reporter.add_listener(fn)` (`reporting.py`).
    self.reporter = reporting.Reporter(model_dir, self.train_flops, log)
    self._train_fn = None
    self.nonfinite = nonfinite.NonFinitePolicy(train_config, self.step_fn, optimizer,
                                               self.checkpointer, optimizer_config.learning_rate,
                                               log)
    self._skipped_at_log = 0
    self.iterator = None  # set by restore()
    clip = optimizer_config.clip_norm
    self.log(f"gradients clipped to global norm {clip:g} by the trainer after the cross-replica "
             "sum (the optimizer's own gradient_clip_norm is 0, unused)" if clip > 0 else
             "no gradient clipping (OptimizerConfig.clip_norm = 0)")

  def input_iterator(self, step: int):
    """The distributed input of `step`'s phase, after the batches its earlier steps consumed."""
    return self.inputs.iterator(self.strategy, step, self.train_config.num_train_steps)

  def compiled_steps(self):
    """The compiled loop `(iterator, num_steps)` that runs `num_steps` training steps (public: the
    throughput benchmark times it)."""
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
    latest = self.checkpointer.restore_latest()
    if latest:
      self.log(f"restored {latest} (step {self.step})"
               + (" (this run's own checkpoint: init_checkpoint is not read again)"
                  if cfg.init_checkpoint else ""))
    elif cfg.init_checkpoint:
      warm_start.warm_start(self.model, cfg.init_checkpoint, self.vocab,
                            cfg.init_checkpoint_allow_missing, self.log)
      if self.weight_average is not None:
        self.weight_average.reset()
    self.iterator = self.input_iterator(self.step)
    return self.step

  def train_flops(self, step: int) -> float:
    """Section 5.2.2 FLOPs that `step` training steps (optimizer updates) consumed."""
    return self.inputs.train_flops(step, self.model.train_flops_per_example)

  def train(self, evaluator=None, eval_every_steps: int = 0, monitor=None) -> Dict[str, float]:
    """Trains to `num_train_steps` (resuming if possible), evaluating every `eval_every_steps` and
    at the end when an `evaluation.Evaluator` is given, and reporting the structure-onset figures
    when a `structure_monitor.StructureMonitor` is given (`report_onset`); exports the
    discriminator encoder and returns the last logged metrics."""
    cfg = self.train_config
    if self.iterator is None:
      self.restore()
    writer = (tf.summary.create_file_writer(os.path.join(self.model_dir, "train"))
              if self.is_chief else tf.summary.create_noop_writer())
    train_steps = self.compiled_steps()
    eval_every = eval_every_steps if evaluator is not None and eval_every_steps > 0 else 0
    try:
      last = self._train_loop(train_steps, writer, evaluator, eval_every, monitor)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (tools/cli.py): keep the steps done
      self.checkpointer.save_on_interrupt(self.step, self.nonfinite.weights_finite,
                                            self._multi_worker)
      raise
    if self.is_chief:
      export_dir = export.export_encoder(self.model, self.vocab, self.model_dir,
                                         max_seq_length=self.phases[-1].max_seq_length,
                                         do_lower_case=self.do_lower_case)
      self.log(f"exported the discriminator encoder to {export_dir}")
      if self.weight_average is not None:
        with self.weight_average.swapped_in():
          export_dir = export.export_encoder(
              self.model, self.vocab, self.model_dir, self.phases[-1].max_seq_length,
              self.do_lower_case, name=EMA_EXPORT_DIR)
        self.log(f"exported its weight average (TrainConfig.ema_decay = {cfg.ema_decay:g}) to "
                 f"{export_dir}")
    return last

  def _train_loop(self, train_steps, writer, evaluator, eval_every: int,
                  monitor=None) -> Dict[str, float]:
    cfg = self.train_config
    step, last = self.step, {}
    start_step, start_time = step, time.time()
    interval_start, interval_steps = time.time(), 0
    seconds_per_step = None
    skipped = self._skipped_at_log = int(self.step_fn.skipped_steps.numpy())
    keep = cfg.keep_checkpoint_every_steps  # a milestone is saved even between regular saves
    # A run killed between an evaluation and its next checkpoint re-trains those steps when it
    # resumes (bit for bit): their rows are not written twice.
    evaluated = self.reporter.recorded_steps() if evaluator is not None else set()
    onset_done = self.reporter.recorded_steps(onset=True) if monitor is not None else set()
    while step < cfg.num_train_steps:
      n = min(cfg.log_every_steps - step % cfg.log_every_steps,
              cfg.save_checkpoints_steps - step % cfg.save_checkpoints_steps,
              cfg.num_train_steps - step, *([keep - step % keep] if keep else []),
              *([eval_every - step % eval_every] if eval_every else []),
              *([monitor.every_steps - step % monitor.every_steps]
                if monitor is not None and monitor.every_steps else []),
              *[p.start_step - step for p in self.phases if p.start_step > step][:1])
      # A signal is handled between calls: keep each call short (the first, which traces the
      # loop, runs one step and measures it).
      if seconds_per_step is None:
        n = 1
      else:
        n = max(1, min(n, int(MAX_CHUNK_SECONDS / seconds_per_step)))
      chunk_start = time.time()
      try:
        train_steps(self.iterator, tf.constant(n))
      except tf.errors.InvalidArgumentError:  # e.g. a token sampled from non-finite logits
        self.nonfinite.check_weights(step + n)
        raise
      seconds_per_step = (time.time() - chunk_start) / n
      step, interval_steps = step + n, interval_steps + n
      if int(self.step_fn.skipped_steps.numpy()) != skipped:
        step = self._on_nonfinite(step)
        skipped = int(self.step_fn.skipped_steps.numpy())
      phase = self.inputs.phase_at(step)
      if phase.start_step == step and step > 0 and step < cfg.num_train_steps:
        self.iterator = self.input_iterator(step)
        self.log(f"phase {self.phases.index(phase) + 1} of {len(self.phases)} from step {step}: "
                 f"{phase.input_config.input_path}, batch {phase.train_batch_size} × "
                 f"{phase.max_seq_length} tokens")
      saving = (step % cfg.save_checkpoints_steps == 0 or step == cfg.num_train_steps
                or (keep and step % keep == 0))
      if saving:
        self.nonfinite.check_weights(step)  # one pass over all weights, only before a save
      if step % cfg.log_every_steps == 0 or step == cfg.num_train_steps:
        last = self._log(writer, step, interval_steps, time.time() - interval_start,
                         (time.time() - start_time) / max(step - start_step, 1))
        interval_start, interval_steps = time.time(), 0
      if saving:
        self.checkpointer.save(step)
      if (monitor is not None and self.is_chief and monitor.due(step, cfg.num_train_steps)
          and step not in onset_done):
        self.report_onset(monitor, step, writer)
      if evaluator is not None and self.is_chief and step not in evaluated and (
          (eval_every and step % eval_every == 0) or step == cfg.num_train_steps):
        self.evaluate(evaluator, step)
    return last

  def _on_nonfinite(self, step: int) -> int:
    """Applies `TrainConfig.on_nonfinite` after a skipped update; returns the step to go on
    from (after a rollback, the checkpoint's, with the input repositioned if its phase differs)."""
    if not self.nonfinite.after_skip():
      return step
    if self.inputs.phase_at(self.step) is not self.inputs.phase_at(step):
      self.iterator = self.input_iterator(self.step)
    return self.step

  @property
  def rollbacks(self) -> int:
    return self.nonfinite.rollbacks

  def evaluate(self, evaluator, step: int) -> dict:
    """Runs `evaluator` on the current weights (their average, if kept) and reports the row
    (`Reporter.eval_row`: log, `eval/` summaries, `eval_results.jsonl`)."""
    start = time.time()
    with (self.weight_average.swapped_in() if self.weight_average is not None
          else contextlib.nullcontext()):
      figures = evaluator.evaluate()
    return self.reporter.eval_row(step, figures, time.time() - start,
                                  self.weight_average is not None)

  def report_onset(self, monitor, step: int, writer=None) -> dict:
    """The structure-onset monitor's figures of the exported encoder at `step`, reported
    (`Reporter.onset_row`: log, TensorBoard `train/onset_*`, `onset.jsonl`); returns the row."""
    start = time.time()
    figures = monitor.figures(self.model.exported_encoder)
    return self.reporter.onset_row(step, figures, time.time() - start, writer)

  def evaluate_checkpoints(self, evaluator, all_checkpoints: bool = False) -> list:
    """`--mode=eval`: evaluates the latest checkpoint (or every one kept) of `model_dir`; with
    `all_checkpoints`, a damaged one (an interrupted save of older code, a truncated copy) is
    named and skipped.

    Raises:
      TrainingSetupError: no checkpoint to evaluate reads back.
    """
    rows, paths = [], self.checkpointer.evaluation_paths(all_checkpoints)
    for path in paths:
      try:
        with checkpoint_files.quiet_restore_warnings():
          self.checkpointer.checkpoint.restore(path).assert_existing_objects_matched()
      except (AssertionError, ValueError, IndexError, tf.errors.OpError) as e:
        if not all_checkpoints:
          raise
        # Diagnosed only on failure: `problem` reads every value once.
        what = checkpoint_files.problem(path) or next(
            (line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        self.log(f"skipped checkpoint {path}: {what}")
        continue
      rows.append(self.evaluate(evaluator, self.step))
    if not rows:
      raise errors.TrainingSetupError(f"none of the {len(paths)} checkpoints in "
                                      f"{self.checkpointer.model_dir} reads back")
    return rows

  def _log(self, writer, step, steps, seconds, seconds_per_step) -> Dict[str, float]:
    """Reports the training row of `step` (`Reporter.train_row`) and resets the metrics."""
    values = {name: float(metric.result()) for name, metric in self.metrics.items()}
    phase = self.inputs.phase_at(step - 1)
    examples_per_s = steps * self.inputs.examples_per_step(phase) / max(seconds, 1e-9)
    skipped = int(self.step_fn.skipped_steps.numpy())
    if skipped - self._skipped_at_log >= steps:  # the metrics saw no step: nothing to show
      values = {}
    self._skipped_at_log = skipped
    for metric in self.metrics.values():
      metric.reset_state()
    return self.reporter.train_row(writer, step, self.train_config.num_train_steps, values,
                                   self.nonfinite.learning_rate(), examples_per_s, phase.max_seq_length,
                                   skipped, seconds_per_step)
