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
from official_rtd.trials import run as trial_run
from official_rtd.trials import selection as selection_lib
from official_rtd.trials import steps as trial_steps
from official_rtd.utils import textio

CvtRunConfig = settings.CvtRunConfig  # the run's settings (TensorFlow-free, for --help)


class CvtRunner:
  """Loads every task and the vocabulary once; `run()` runs the trials."""

  def __init__(self, config: CvtRunConfig, log: Callable[[str], None] = print):
    self.config, self.log = config, log
    settings.check_trainable(config)
    self.model_config = config.model_config()
    self._finished = lambda result: trial_run.stands(result, config.train_steps)
    self.recorded = trial_run.finished_summary(config.model_dir, type(self).__name__, config,
                                               config.num_trials, self._finished,
                                               extendable=("train_steps",), log=log)
    if self.recorded is not None:  # nothing to train: the data are not read again
      return
    self.inputs = inputs_lib.CvtInputs(config, log)
    self.tasks = self.inputs.tasks
    log(f"run_cvt ({config.mode}): {self.inputs.description}, {config.train_steps} steps")

  def _build(self, trial: int):
    cfg, inputs = self.config, self.inputs
    tf_keras.utils.set_random_seed(cfg.seed + trial)
    model = model_lib.CvtModel(self.model_config, len(inputs.vocab.words),
                               len(inputs.vocab.chars), self.tasks,
                               word_embeddings=inputs.embeddings, name="cvt")
    steps = training.CvtSteps(model, self.tasks, cfg.train_config(),
                              inputs.vocab.words[data_lib.REMOVED])
    steps.build(*inputs.building_batch())
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
      labeled, unlabeled = self.inputs.streams(trial, done)
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
      run_dir.keep_predictions(cfg.model_dir, trial, self.tasks.values(), new_best)
      if new_best:
        steps.save_averages(model, trial_run.trial_dir(cfg.model_dir, trial, run_dir.MODEL_NAME))
      return selection.stops(f"trial_{trial}", step, self.log)

    losses = trial_steps.run_steps(begin, trial_steps.StepLoop(
        cfg.train_steps, self.log, cfg.log_every_steps, f"trial_{trial} of {cfg.num_trials}",
        checkpoint, checkpoint_dir, cfg.save_checkpoints_steps, evaluate_now,
        cfg.eval_every_steps, save_at_end=True))
    if not (selection.exhausted() or selection.evaluated_at(cfg.train_steps)):
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

  def evaluate(self, steps: training.CvtSteps, trial: int) -> Dict[str, Dict[str, float]]:
    """Each task's dev metrics with the EMA weights, and its predictions file in `trial_<k>/`,
    named `<predictions name>.last` (the caller keeps or drops it)."""
    with steps.averaged():
      return {name: task.evaluate(
          data_lib.predict_rows(self.inputs.encoded_dev[name],
                                lambda x, n=name: steps.predict(x, n),
                                self.log, f"{name}: predicted"),
          trial_run.trial_dir(self.config.model_dir, trial, task.predictions_name() + ".last"),
          self.log) for name, task in self.tasks.items()}

  def run(self) -> dict:
    """Writes `vocab.json` (`run_dir.write_vocab`), then runs the trials and writes
    `eval_results.json`. A re-run resumes only this same run (or raises its budget: the trials
    that ended at it continue); another run's directory is refused, nothing written."""
    cfg = self.config
    if self.recorded is not None:
      return self.recorded
    trial_run.check_raised_budget(cfg.model_dir, cfg.num_trials, "train_steps", cfg.train_steps,
                                  self.log)
    run_dir.check_batching(cfg.model_dir, cfg.num_trials, self._finished)
    with trial_run.this_run_only(cfg.model_dir, type(self).__name__, cfg, self.log,
                                   extendable=("train_steps",)):
      run_dir.write_vocab(cfg.model_dir, self.inputs.vocab, self.tasks, self.model_config)
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
