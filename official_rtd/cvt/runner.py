"""`run_cvt`: reads each task (`--tasks`, registered in `all_tasks.py`) and the unlabeled corpus,
trains CVT (or a baseline) for N trials, evaluates each task's dev set with the EMA weights, and
writes `eval_results.json`.

Each trial checkpoints model, optimizer and EMA every `save_checkpoints_steps` in
`trial_<k>/checkpoint` and resumes from there (the labeled batches replay exactly; the unlabeled
stream restarts, re-seeded by the step). Every `eval_every_steps` it evaluates the dev sets; the
best evaluation so far (the mean of the tasks' primary figures) keeps its EMA weights in
`trial_<k>/model` and its predictions files, and with `patience` set the trial stops after that
many evaluations without a new best (the dev-selected checkpoint the dissertation reports).
A trial that ends at its budget instead keeps its last checkpoint: a larger `train_steps`
continues it. It shares the trial machinery of fine-tuning (`official_rtd.trials`: trials,
steps, median and spread) but not `finetune.runner.Runner`, because CVT trains its own
CNN-BiLSTM from word and character ids rather than fine-tuning an exported encoder.
"""
import dataclasses
import json
import os
import shutil
from typing import Callable, Dict

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.cvt import data as data_lib
from official_rtd.cvt import inputs as inputs_lib
from official_rtd.cvt import model as model_lib
from official_rtd.cvt import run_dir
from official_rtd.cvt import settings
from official_rtd.cvt import training
from official_rtd.trials import fingerprint
from official_rtd.trials import run as trial_run
from official_rtd.trials import selection as selection_lib
from official_rtd.trials import steps as trial_steps
from official_rtd.utils import checkpoint_files
from official_rtd.utils import textio

CvtRunConfig = settings.CvtRunConfig  # the run's settings (TensorFlow-free, for --help)
# How labeled batches are drawn, recorded in vocab.json: random since b16ec8c (before it they were
# length-sorted, and vocab.json said nothing), so an older trial is not continued on other batches.
LABELED_BATCHES = "random"


def converged(result: dict) -> bool:
  """Whether a trial's recorded result stopped by patience (a larger budget would not change it)
  rather than at its budget (`stopped_by`; in earlier versions' results: fewer steps run than
  the budget)."""
  budget_bound = result["steps_run"] >= result["train_steps"]
  return result.get("stopped_by", "budget" if budget_bound else "patience") == "patience"


class CvtRunner:
  """Loads every task and the vocabulary once; `run()` runs the trials."""

  def __init__(self, config: CvtRunConfig, log: Callable[[str], None] = print):
    self.config, self.log = config, log
    if config.mode != "supervised" and not (config.unlabeled_data or config.unlabeled_remainder):
      raise ValueError(f"--mode={config.mode} needs --unlabeled_data (a corpus) or "
                       "--unlabeled_remainder (the training sentences --train_fraction leaves out)")
    if not 0 <= config.unlabeled_start_step < config.train_steps:
      raise ValueError(f"--unlabeled_start_step={config.unlabeled_start_step} must be in "
                       f"[0, --train_steps={config.train_steps})")
    if config.unlabeled_start_step and config.mode == "supervised":
      raise ValueError("--unlabeled_start_step applies to --mode=cvt or word_dropout, not "
                       "--mode=supervised (which has no unlabeled steps)")
    self.model_config = config.model_config()
    self.recorded = trial_run.finished_summary(config.model_dir, type(self).__name__, config,
                                               config.num_trials, self._finished,
                                               extendable=("train_steps",))
    if self.recorded is not None:  # nothing to train: the data are not read again
      log(f"run_cvt ({config.mode}): {config.model_dir} holds this run, its "
          f"{config.num_trials} trial(s) finished: results read back")
      return
    self.inputs = inputs_lib.CvtInputs(config, log)
    self.tasks = self.inputs.tasks
    log(f"run_cvt ({config.mode}): {self.inputs.description}, {config.train_steps} steps")

  def _finished(self, result: dict) -> bool:
    """Whether a trial's recorded result stands under this run's budget."""
    return result["train_steps"] >= self.config.train_steps or converged(result)

  def _build(self, trial: int):
    cfg, inputs = self.config, self.inputs
    tf_keras.utils.set_random_seed(cfg.seed + trial)
    model = model_lib.CvtModel(self.model_config, len(inputs.vocab.words),
                               len(inputs.vocab.chars), self.tasks,
                               word_embeddings=inputs.embeddings, name="cvt")
    steps = training.CvtSteps(model, self.tasks, cfg.train_config(),
                              inputs.vocab.words[data_lib.REMOVED])
    first = next(iter(self.tasks))
    batch, _ = inputs.batch(first, [0, min(1, len(inputs.encoded[first]) - 1)])
    steps.build(batch, {n: inputs.targets_for(n, batch) for n in self.tasks})
    return model, steps

  def run_trial(self, trial: int) -> dict:
    cfg = self.config
    model, steps = self._build(trial)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=steps.optimizer,
                                     ema=steps.ema.shadows, ema_updates=steps.ema.updates)
    checkpoint_dir = trial_run.checkpoint_dir(cfg.model_dir, trial)
    selection = selection_lib.DevSelection(trial_run.selection_path(cfg.model_dir, trial),
                                           cfg.patience)

    def begin(done):
      labeled = self.inputs.labeled_batches(trial)
      for _ in range(done):  # replay the labeled stream
        next(labeled)
      unlabeled = (self.inputs.unlabeled_batches(cfg.seed + trial + 7919 * done)
                   if cfg.mode != "supervised" else None)
      selection.resume_at(done)

      def step(k):
        name, batch, targets = next(labeled)
        values = {"labeled loss": float(steps.labeled(batch, targets, name))}
        if unlabeled is not None and k > cfg.unlabeled_start_step:
          values["unlabeled loss"] = float(steps.unlabeled(next(unlabeled)))
        return values, 0
      return step

    def evaluate_now(step):
      """Dev figures at `step`; a new best keeps its weights and predictions. True: stop (no
      new best in `patience` evaluations)."""
      dev = self.evaluate(steps, trial)  # predictions as `<name>.last`
      self.log(f"trial_{trial} step {step}: dev {json.dumps(dev)}")
      new_best = selection.record(step, dev, self.selection_score(dev))
      for task in self.tasks.values():
        path = trial_run.trial_dir(cfg.model_dir, trial, task.predictions_name())
        if new_best:
          os.replace(path + ".last", path)
        else:
          os.remove(path + ".last")
      if new_best:
        self._save_weights(model, steps,
                           trial_run.trial_dir(cfg.model_dir, trial, run_dir.MODEL_NAME))
      if selection.exhausted():
        self.log(f"trial_{trial}: no better dev figure in {cfg.patience} evaluations; "
                 f"stopping at step {step} (best: step {selection.best['step']})")
      return selection.exhausted()

    losses = trial_steps.run_steps(begin, trial_steps.StepLoop(
        cfg.train_steps, self.log, cfg.log_every_steps, f"trial_{trial} of {cfg.num_trials}",
        checkpoint, checkpoint_dir, cfg.save_checkpoints_steps, evaluate_now,
        cfg.eval_every_steps, save_at_end=True))
    evaluated_at_end = bool(selection.curve) and selection.curve[-1]["step"] == cfg.train_steps
    if not (selection.exhausted() or evaluated_at_end):  # (a resumed run may have it already)
      evaluate_now(cfg.train_steps)
    best, curve = selection.best, selection.curve
    stopped_by = "patience" if selection.exhausted() else "budget"
    if stopped_by == "patience":  # converged: the results replace the checkpoint
      shutil.rmtree(checkpoint_dir, ignore_errors=True)
    return {"trial": trial, "seed": cfg.seed + trial, "train_steps": cfg.train_steps,
            "stopped_by": stopped_by, "steps_run": curve[-1]["step"], "best_step": best["step"],
            "final_labeled_loss": float(np.mean(losses.get("labeled loss", [])[-10:] or [np.nan])),
            "dev": best["dev"], "final_dev": curve[-1], "dev_curve": curve}

  def selection_score(self, dev: Dict[str, Dict[str, float]]) -> float:
    """What picks the best evaluation: the mean over tasks of each one's primary figure."""
    return float(np.mean([dev[n][t.primary_metric] for n, t in self.tasks.items()]))

  @staticmethod
  def _save_weights(model, steps, path: str):
    steps.ema.swap()  # the kept weights are the averages
    try:
      checkpoint_files.write(tf.train.Checkpoint(model=model), path)
    finally:
      steps.ema.swap()

  def evaluate(self, steps: training.CvtSteps, trial: int) -> Dict[str, Dict[str, float]]:
    """Each task's dev metrics with the EMA weights, and its predictions file in `trial_<k>/`,
    named `<predictions name>.last` (the caller keeps or drops it)."""
    steps.ema.swap()
    try:
      return {name: task.evaluate(
          data_lib.predict_rows(self.inputs.encoded_dev[name],
                                lambda x, n=name: steps.predict(x, n),
                                self.log, f"{name}: predicted"),
          trial_run.trial_dir(self.config.model_dir, trial, task.predictions_name() + ".last"),
          self.log) for name, task in self.tasks.items()}
    finally:
      steps.ema.swap()

  def run(self) -> dict:
    """Writes `vocab.json` (what reading `trial_<k>/model` back needs: words, characters, each
    task's labels, the model's sizes), then runs the trials and writes `eval_results.json`."""
    cfg = self.config
    if self.recorded is not None:
      return self.recorded
    recorded = fingerprint.recorded_settings(cfg.model_dir).get("train_steps", cfg.train_steps)
    if recorded < cfg.train_steps:
      self._check_extendable(recorded)
    self._check_batching()
    # A re-run resumes only this same run (or raises its budget); another run's directory is
    # refused, nothing written.
    with trial_run.this_run_only(cfg.model_dir, type(self).__name__, cfg, self.log,
                                   extendable=("train_steps",)):
      return self._trials_and_summary()

  def _check_extendable(self, recorded: int):
    """A raised `--train_steps` continues each trial that ended at its budget from the
    checkpoint it kept (those stopped by patience stay as they are); one that kept none (an
    earlier version's) is refused before anything is written."""
    cfg = self.config
    stuck = [trial for trial, result, resumable in trial_run.resumable_trials(
        cfg.model_dir, cfg.num_trials) if result is not None and not converged(result)
             and not resumable]
    if stuck:
      raise ValueError(
          f"--train_steps={cfg.train_steps}: trial_{stuck[0]} in {cfg.model_dir} ended at its "
          f"budget of {recorded} steps without keeping a checkpoint (an earlier version's "
          "run), so it cannot continue; give a new --model_dir")
    self.log(f"--train_steps raised from {recorded} to {cfg.train_steps}: trials that ended at "
             "their budget continue from their last checkpoint, those stopped by patience stay")

  def _check_batching(self):
    """A trial that would continue from a checkpoint of a run begun with length-sorted labeled
    batches (its vocab.json does not record `LABELED_BATCHES`) is refused before anything is
    written: a resume replays the labeled batches exactly, and they are no longer those."""
    cfg = self.config
    path = os.path.join(cfg.model_dir, run_dir.VOCAB_NAME)
    if (not os.path.isfile(path)
        or textio.load_json(path).get("labeled_batches") == LABELED_BATCHES):
      return
    continued = [trial for trial, result, resumable in trial_run.resumable_trials(
        cfg.model_dir, cfg.num_trials) if resumable and not (result and self._finished(result))]
    if continued:
      raise ValueError(
          f"--model_dir={cfg.model_dir}: trial_{continued[0]} began with length-sorted labeled "
          "batches (an earlier version's run); continuing it would change its batches midway. "
          "Give a new --model_dir (or move this one aside)")

  def _trials_and_summary(self) -> dict:
    cfg = self.config
    textio.write_json_atomic(os.path.join(cfg.model_dir, run_dir.VOCAB_NAME), {
        **self.inputs.vocab.to_json(), "labeled_batches": LABELED_BATCHES,
        "tasks": {n: t.vocabulary_json() for n, t in self.tasks.items()},
        "model": dataclasses.asdict(self.model_config)})
    primary = {n: t.primary_metric for n, t in self.tasks.items()}
    trials = trial_run.run_trials(
        cfg.model_dir, cfg.num_trials, self.run_trial, self.log,
        lambda r: ", ".join(f"{t} {primary[t]}={r['dev'][t][primary[t]]:.4f}" for t in primary)
        + f" (best of {len(r['dev_curve'])} evaluations, step {r['best_step']})",
        finished=self._finished)
    median, spread = trial_run.median_and_spread(
        [{task: t["dev"][task] for task in primary} for t in trials])
    summary = {"tasks": list(primary), "primary_metrics": primary, "mode": cfg.mode,
               "median": median, "spread": spread, "trials": trials,
               "flags": dataclasses.asdict(cfg), "vocab_words": len(self.inputs.vocab.words)}
    textio.write_json_atomic(trial_run.summary_path(cfg.model_dir), summary)
    return summary
