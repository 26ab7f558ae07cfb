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
import os
import time
from typing import Callable, Dict

import tensorflow as tf

from official_rtd.interop import export
from official_rtd.methods import base
from official_rtd.training import checkpointing
from official_rtd.training import collapse_monitor
from official_rtd.training import ema
from official_rtd.training import errors
from official_rtd.training import nonfinite
from official_rtd.training import optimization
from official_rtd.training import periodic
from official_rtd.training import reporting
from official_rtd.training import run_inputs
from official_rtd.training import strategies
from official_rtd.training import train_config as train_config_lib
from official_rtd.training import train_step
from official_rtd.training import warm_start

EMA_EXPORT_DIR = "export_ema"
# Steps run in one call of the compiled loop last about this long at most (after the first call),
# so Ctrl-C or SIGTERM, handled between calls, is answered within about this many seconds.
MAX_CHUNK_SECONDS = 10.0


# Re-exported: the run's settings live in `train_config.py`, the errors in `errors.py`, the
# milestone helpers in `checkpointing.py`, the inputs (phases, the masking configurable) in
# `run_inputs.py`.
TrainConfig = train_config_lib.TrainConfig
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
    self.reporter.add_listener(collapse_monitor.CollapseMonitor(  # one line, if ever
        log, remedy=collapse_monitor.remedy_for(model), start_step=model.detection_start_step()))
    self._train_fn = None
    self.nonfinite = nonfinite.NonFinitePolicy(train_config, self.step_fn, optimizer,
                                               self.checkpointer, optimizer_config.learning_rate,
                                               log)
    self._skipped_at_log = 0
    self.extra_actions = []  # add_action()
    self.last_row = {}
    self.iterator = None  # set by restore()
    self.log(optimizer_config.clipping())

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

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def restore(self) -> int:
    """Restores the latest checkpoint in `model_dir`, if any (else warm-starts from
    `warm_start_from`, if given), and positions the input after the batches its steps consumed;
    returns the step."""
    cfg = self.train_config
    latest = self.checkpointer.restore_latest()
    if latest:
      self.log(f"restored {latest} (step {self.step})"
               + (" (this run's own checkpoint: warm_start_from is not read again)"
                  if cfg.warm_start_from else ""))
    elif cfg.warm_start_from:
      warm_start.warm_start(self.model, cfg.warm_start_from, self.vocab,
                            cfg.warm_start_allow_missing, self.log)
      if self.weight_average is not None:
        self.weight_average.reset()
    self.iterator = self.input_iterator(self.step)
    self.reporter.start(self.step)
    return self.step

  def train_flops(self, step: int) -> float:
    """Section 5.2.2 FLOPs that `step` training steps (optimizer updates) consumed."""
    return self.inputs.train_flops(step, self.model)

  def train(self, evaluator=None, eval_every_steps: int = 0, monitor=None) -> Dict[str, float]:
    """Trains to `num_train_steps` (resuming if possible), evaluating every `eval_every_steps` and
    at the end when an `evaluation.Evaluator` is given, and reporting the structure-onset figures
    when a `structure_monitor.StructureMonitor` is given (`report_onset`); exports the
    discriminator encoder and returns the last logged metrics."""
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
      self._export()
    return last

  def _export(self) -> None:
    """Exports the discriminator encoder, and its weight average beside it if one is kept."""
    averages = [None] if self.weight_average is None else [None, self.weight_average]
    for average in averages:
      with average.swapped_in() if average else contextlib.nullcontext():
        export_dir = export.export_encoder(
            self.model, self.vocab, self.model_dir, self.phases[-1].max_seq_length,
            self.do_lower_case, **({"name": EMA_EXPORT_DIR} if average else {}))
      self.log(f"exported its weight average (TrainConfig.ema_decay = "
               f"{self.train_config.ema_decay:g}) to {export_dir}" if average else
               f"exported the discriminator encoder to {export_dir}")

  def add_action(self, action: periodic.PeriodicAction) -> None:
    """Adds a `periodic.PeriodicAction`, run after the run's own (phase switch, log, save, onset,
    evaluation) at the steps it is due."""
    self.extra_actions.append(action)

  def _actions(self, writer, evaluator, eval_every: int, monitor) -> list:
    """The run's periodic actions, in the order they run at a step where several are due."""
    cfg = self.train_config
    actions = [
        periodic.PeriodicAction("phase", self._switch_phase, at_end=False,
                                at_steps=[p.start_step for p in self.phases if p.start_step > 0]),
        periodic.PeriodicAction("log", lambda step: self._log(writer, step),
                                periods=(cfg.log_every_steps,)),
        # A milestone is saved even between regular saves.
        periodic.PeriodicAction("save", self._save, periods=(
            cfg.save_checkpoints_steps, cfg.keep_checkpoint_every_steps))]
    # A run killed between an evaluation and its next checkpoint re-trains those steps when it
    # resumes (bit for bit): their rows are not written twice.
    if monitor is not None and self.is_chief:
      actions.append(periodic.PeriodicAction(
          "onset", lambda step: self.report_onset(monitor, step, writer),
          periods=(monitor.every_steps,),
          skip=self.reporter.recorded_steps(onset=True).__contains__))
    if evaluator is not None and self.is_chief:
      actions.append(periodic.PeriodicAction(
          "evaluate", lambda step: self.evaluate(evaluator, step), periods=(eval_every,),
          skip=self.reporter.recorded_steps().__contains__))
    return actions + self.extra_actions

  def _train_loop(self, train_steps, writer, evaluator, eval_every: int,
                  monitor=None) -> Dict[str, float]:
    last_step = self.train_config.num_train_steps
    actions = self._actions(writer, evaluator, eval_every, monitor)
    step = self.step
    self._timing = _Timing(step)
    self.last_row = {}
    seconds_per_step = None
    skipped = self._skipped_at_log = int(self.step_fn.skipped_steps.numpy())
    while step < last_step:
      n = periodic.steps_to_next(actions, step, last_step)
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
      step = step + n
      self._timing.steps_run += n
      if int(self.step_fn.skipped_steps.numpy()) != skipped:
        step = self._on_nonfinite(step)
        skipped = int(self.step_fn.skipped_steps.numpy())
      periodic.run_due(actions, step, last_step)
    return self.last_row

  def _switch_phase(self, step: int) -> None:
    phase = self.inputs.phase_at(step)
    self.iterator = self.input_iterator(step)
    self.log(f"phase {self.phases.index(phase) + 1} of {len(self.phases)} from step {step}: "
             f"{phase.input_config.input_path}, batch {phase.train_batch_size} × "
             f"{phase.max_seq_length} tokens")

  def _save(self, step: int) -> None:
    self.nonfinite.check_weights(step)  # one pass over all weights, only before a save
    self.checkpointer.save(step)

  def _on_nonfinite(self, step: int) -> int:
    """Applies `TrainConfig.on_nonfinite` after a skipped update; returns the step to go on
    from (after a rollback, the checkpoint's, with the input repositioned if its phase differs)."""
    if not self.nonfinite.after_skip():
      return step
    if self.inputs.phase_at(self.step) is not self.inputs.phase_at(step):
      self.iterator = self.input_iterator(self.step)
    self.reporter.start(self.step)
    return self.step

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
    """`--mode=eval`: evaluates the latest checkpoint (or every one kept) of `model_dir`
    (`Checkpointer.restored_in_turn`: a damaged one skipped, named)."""
    return [self.evaluate(evaluator, self.step)
            for _ in self.checkpointer.restored_in_turn(all_checkpoints, self.log)]

  def _log(self, writer, step: int) -> None:
    """Reports the training row of `step` (`Reporter.train_row`), keeps it in `last_row` and
    resets the metrics."""
    steps, seconds, seconds_per_step = self._timing.lap(step)
    # A mean that saw no weight in the interval (e.g. a head that no longer runs) is left out.
    values = {name: float(metric.result()) for name, metric in self.metrics.items()
              if not hasattr(metric, "count") or float(tf.convert_to_tensor(metric.count)) > 0}
    phase = self.inputs.phase_at(step - 1)
    examples_per_s = steps * self.inputs.examples_per_step(phase) / max(seconds, 1e-9)
    skipped = int(self.step_fn.skipped_steps.numpy())
    if skipped - self._skipped_at_log >= steps:  # the metrics saw no step: nothing to show
      values = {}
    self._skipped_at_log = skipped
    for metric in self.metrics.values():
      metric.reset_state()
    self.last_row = self.reporter.train_row(
        writer, step, self.train_config.num_train_steps, values, self.nonfinite.learning_rate(),
        examples_per_s, phase.max_seq_length, skipped, seconds_per_step)


class _Timing:
  """The loop's clock: steps run (rolled-back ones too) and when the last row was logged."""

  def __init__(self, start_step: int):
    self.start_step, self.start_time = start_step, time.time()
    self.steps_run, self.steps_at_log, self.log_time = 0, 0, self.start_time

  def lap(self, step: int):
    """(steps run, seconds) since the last row, and the mean seconds per step since the start;
    starts the next lap."""
    now = time.time()
    lap = (self.steps_run - self.steps_at_log, now - self.log_time,
           (now - self.start_time) / max(step - self.start_step, 1))
    self.steps_at_log, self.log_time = self.steps_run, now
    return lap
