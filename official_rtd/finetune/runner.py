"""One runner for every fine-tuning task (`task.py`): the export read once, the per-size defaults
resolved, N resumable trials (train, evaluate, keep), the best trial's outputs published and the
results file written. A task supplies data, head, loss and metrics; nothing here depends on
which."""
import dataclasses
import os
import shutil
from typing import Callable, List, Optional, Type, Union

import tf_keras

from official_rtd.finetune import multihead
from official_rtd.finetune import protocol
from official_rtd.finetune import task as task_lib
from official_rtd.interop import export as export_lib
from official_rtd.training import precision
from official_rtd.trials import run as trial_run
from official_rtd.trials import selection as selection_lib
from official_rtd.trials import steps as trial_steps
from official_rtd.utils import textio


class Runner:
  """Runs `config`'s task (`config.task_name` in the registry, or `task_class`).

  Optimisation settings: the config's value if set, else the task's `optimizer_defaults` (e.g.
  BAM's), else the per-size defaults (learning rate, layer-wise decay), the "electra" decay
  convention and batch 32.
  """

  def __init__(self, config, log: Callable[[str], None] = print,
               task_class: Optional[Type[Union[task_lib.Task, task_lib.Head]]] = None):
    self.config = config
    self.log = log
    task_class = task_class or task_lib.get(config.task_name)
    if issubclass(task_class, task_lib.Head):  # run alone: a one-member multi-task run
      task_class = multihead.HeadsRun
    precision.check(config.mixed_precision)
    precision.warn_if_emulated(config.mixed_precision, log)
    self.export = export_lib.Export(config.init_checkpoint)
    self.size = protocol.model_size(self.export.encoder_config, config.model_size)
    defaults = task_class.optimizer_defaults(config)
    default_lr, default_decay = protocol.SIZE_DEFAULTS[self.size]
    self.learning_rate = (config.learning_rate or defaults.get("learning_rate") or default_lr)
    self.decay = (config.layerwise_lr_decay or defaults.get("layerwise_lr_decay")
                  or default_decay)
    self.convention = (config.lr_decay_convention or defaults.get("lr_decay_convention")
                       or "electra")
    protocol.check_convention(self.convention)
    self.batch_size = config.train_batch_size or defaults.get("train_batch_size") or 32
    self.task = task_class(config, self.export, log)
    self.epochs = config.num_train_epochs or self.task.default_epochs
    self.steps = task_lib.num_steps(self.task.num_train_rows(), self.batch_size, self.epochs)
    log(f"{self.task.describe()}; {self.size} defaults: lr {self.learning_rate:g}, layer-wise "
        f"decay {self.decay} ({self.convention} convention), batch {self.batch_size}, "
        f"{self.epochs:g} epochs ({self.steps} steps), {config.num_trials} trial(s)")

  # --- one trial ---------------------------------------------------------------------------------
  def run_trial(self, trial: int) -> dict:
    """Trains a fresh model (the export's encoder + the task's head) for `self.steps` batches
    (deterministic for the trial: a killed trial resumes from its last
    `--save_checkpoints_steps` checkpoint by replaying them), then evaluates it; returns the
    trial's result (trial, seed, steps, final loss, dev metrics)."""
    cfg = self.config
    seed = cfg.seed + trial
    dataset = self.task.train_dataset(seed, self.batch_size)
    tf_keras.utils.set_random_seed(seed)
    with precision.policy(cfg.mixed_precision):
      encoder = self.export.encoder(restore=not cfg.random_init)
      model = self.task.build_model(encoder)
    optimizer = protocol.build_optimizer(
        model, encoder, self.learning_rate, self.decay, self.convention, self.steps,
        cfg.warmup_proportion, cfg.weight_decay_rate, cfg.mixed_precision)
    # The dev curve is kept on disk, so a resumed trial keeps the evaluations before its restart.
    selection = selection_lib.DevSelection(trial_run.selection_path(cfg.model_dir, trial),
                                           getattr(cfg, "patience", 0))

    def evaluate_now(step):
      """Dev figures at `step`; True: stop (no better one in `patience` evaluations)."""
      dev = self.task.evaluate(model, None)
      selection.record(step, dev, self.task.primary(dev))
      self.log(f"trial_{trial} step {step}: {self.task.brief(dev)}")
      return selection.stops(f"trial_{trial}", step, self.log)

    eval_every_steps = getattr(cfg, "eval_every_steps", 0)
    checkpoint_dir = trial_run.checkpoint_dir(cfg.model_dir, trial)
    final_loss = trial_steps.train(model, optimizer, dataset, self.steps, self.task.loss, self.log,
                                  cfg.log_every_steps, f"trial_{trial} of {cfg.num_trials}",
                                  cfg.jit_compile, checkpoint_dir, cfg.save_checkpoints_steps,
                                  evaluate_now, eval_every_steps, seed=seed,
                                  older_layouts=self.task.older_layouts(model))
    shutil.rmtree(checkpoint_dir, ignore_errors=True)  # the trial's results replace it
    result = {"trial": trial, "seed": seed, "train_steps": self.steps,
              "final_train_loss": final_loss,
              "dev": self.task.evaluate(model, trial_run.trial_dir(cfg.model_dir, trial))}
    if eval_every_steps:
      result["dev_curve"] = selection.curve
      result["stopped_by"] = "patience" if selection.exhausted() else "budget"
      result["steps_run"] = selection.curve[-1]["step"] if selection.exhausted() else self.steps
    return result

  # --- all trials --------------------------------------------------------------------------------
  def run(self) -> dict:
    """The trials (see `trials.run_trials`) after checking that `--model_dir` is new or holds
    this same run (`fingerprint`: another run's directory is refused before anything is
    written); then the best trial's files, the task's finish and `eval_results.json`. A finished
    run re-run as it was returns its results, nothing trained or written.

    Its budget (`--num_train_epochs`) cannot be raised on a finished run, unlike `run_cvt`'s: the
    learning rate decays to 0 over the budget, so a trial continued past it would not be the
    trial a larger budget trains (the fingerprint refuses the change; a new --model_dir runs
    it)."""
    cfg = self.config
    tool = self.task.run_name or type(self.task).__name__
    recorded = trial_run.finished_summary(cfg.model_dir, tool, cfg, cfg.num_trials, log=self.log)
    if recorded is not None:
      return recorded
    with trial_run.this_run_only(cfg.model_dir, tool, cfg, self.log):
      return self._trials_and_summary()

  def _trials_and_summary(self) -> dict:
    cfg = self.config
    trials = trial_run.run_trials(cfg.model_dir, cfg.num_trials, self.run_trial, self.log,
                                   lambda result: self.task.brief(result["dev"]))
    best = max(trials, key=lambda t: self.task.primary(t["dev"]))
    self.publish(best["trial"], self.task.published)
    self.task.finish(trials, best, cfg.model_dir)
    summary = self.summary(trials, best)
    textio.write_json_atomic(trial_run.summary_path(cfg.model_dir), summary)
    return summary

  def summary(self, trials: List[dict], best: dict) -> dict:
    """The results file: the task's fields, median and spread of each dev split's metrics (or of
    the flat `dev` dict), the trials, the flags and the resolved defaults."""
    median, spread = trial_run.median_and_spread([t["dev"] for t in trials])
    return {**self.task.summary_fields(median), "primary_metric": self.task.primary_metric,
            "best_trial": best["trial"],
            "init_checkpoint": os.path.abspath(self.config.init_checkpoint),
            "random_init": self.config.random_init, "median": median, "spread": spread,
            "trials": trials, "flags": dataclasses.asdict(self.config),
            "resolved": {"learning_rate": self.learning_rate, "layerwise_lr_decay": self.decay,
                         "lr_decay_convention": self.convention,
                         "train_batch_size": self.batch_size, "num_train_epochs": self.epochs,
                         "num_train_steps": self.steps, **self.task.resolved()}}

  def publish(self, trial: int, names):
    """Copies `trial_<trial>/<name>` to `<model_dir>/<name>`, each replaced atomically."""
    for name in names:
      tmp = os.path.join(self.config.model_dir, f"{name}.tmp-{os.getpid()}")
      shutil.copyfile(trial_run.trial_dir(self.config.model_dir, trial, name), tmp)
      os.replace(tmp, os.path.join(self.config.model_dir, name))
