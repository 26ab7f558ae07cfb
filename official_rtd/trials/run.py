"""A run directory: N resumable trials of one run, each in its own folder, summarised by their
median and spread; the trial machinery of the fine-tuning runner and of CVT. Its layout, each
name written here once:

  <model_dir>/run_fingerprint.json      the run's settings (`fingerprint.py`)
  <model_dir>/eval_results.json         the finished run's summary (SUMMARY_NAME)
  <model_dir>/trial_<k>/results.json    trial k's result, counted from 0 (TRIAL_RESULTS_NAME)
  <model_dir>/trial_<k>/checkpoint/     its last checkpoint while it trains (CHECKPOINT_NAME)
  <model_dir>/trial_<k>/selection.json  its dev curve and best evaluation (SELECTION_NAME,
                                        `selection.py`)
"""
import contextlib
import os
import re
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from official_rtd.trials import fingerprint
from official_rtd.utils import run_lock
from official_rtd.utils import textio

SUMMARY_NAME = "eval_results.json"
TRIAL_RESULTS_NAME = "results.json"
CHECKPOINT_NAME = "checkpoint"
SELECTION_NAME = "selection.json"
TRIAL_FOLDER = re.compile(r"trial_(\d+)")


def trial_dir(model_dir: str, trial: int, *names: str) -> str:
  return os.path.join(model_dir, f"trial_{trial}", *names)


def trial_results(model_dir: str, trial: int) -> str:
  return trial_dir(model_dir, trial, TRIAL_RESULTS_NAME)


def checkpoint_dir(model_dir: str, trial: int) -> str:
  return trial_dir(model_dir, trial, CHECKPOINT_NAME)


def selection_path(model_dir: str, trial: int) -> str:
  return trial_dir(model_dir, trial, SELECTION_NAME)


def summary_path(model_dir: str) -> str:
  return os.path.join(model_dir, SUMMARY_NAME)


def trials(model_dir: str) -> List[int]:
  """The trials of `model_dir` that have a folder, in order."""
  if not os.path.isdir(model_dir):
    return []
  return sorted(int(m.group(1)) for m in map(TRIAL_FOLDER.fullmatch, os.listdir(model_dir)) if m)


def has_checkpoint(model_dir: str, trial: int) -> bool:
  """Whether the trial has a checkpoint to continue from (its manager's index file)."""
  return os.path.isfile(os.path.join(checkpoint_dir(model_dir, trial), "checkpoint"))


def holds_trials(model_dir: str) -> bool:
  """Whether a trial of `model_dir` has a result or a checkpoint."""
  return any(os.path.isfile(trial_results(model_dir, t)) or has_checkpoint(model_dir, t)
             for t in trials(model_dir))


def run_trials(model_dir: str, num_trials: int, run_trial: Callable[[int], dict],
               log: Callable[[str], None], brief: Callable[[dict], str],
               finished: Callable[[dict], bool] = lambda result: True) -> List[dict]:
  """Runs `run_trial(k)` for k < num_trials, keeping each result in
  `<model_dir>/trial_<k>/results.json`; finished trials are reused, so a killed run resumes
  with the first unfinished one. A recorded result that is not `finished` (e.g. a trial that
  ended at a budget since raised) is run again: `run_trial` continues it."""
  if num_trials < 1:
    raise ValueError(f"--num_trials={num_trials} must be >= 1")
  os.makedirs(model_dir, exist_ok=True)
  trials = []
  for trial in range(num_trials):
    path = trial_results(model_dir, trial)
    recorded = textio.load_json(path) if os.path.isfile(path) else None
    if recorded is not None and finished(recorded):
      trials.append(recorded)
      log(f"trial_{trial} of {num_trials}: already done, reusing {path}")
      continue
    os.makedirs(os.path.dirname(path), exist_ok=True)  # run_trial may write files there
    try:
      result = run_trial(trial)
    except BaseException:
      if not os.listdir(os.path.dirname(path)):  # no checkpoint to resume from: no debris
        os.rmdir(os.path.dirname(path))
      raise
    textio.write_json_atomic(path, result)
    log(f"trial_{trial} of {num_trials}: {brief(result)}")
    trials.append(result)
  return trials


def median_and_spread(values_by_trial: List[Dict]):
  """`({metric: median}, {metric: {mean, min, max, std, n}})` over trials' metric dicts; a
  nested dict (metrics per dev split, per task) gives nested results."""
  median, spread = {}, {}
  for metric in values_by_trial[0]:
    if isinstance(values_by_trial[0][metric], dict):
      median[metric], spread[metric] = median_and_spread([t[metric] for t in values_by_trial])
      continue
    values = np.array([t[metric] for t in values_by_trial], np.float64)
    median[metric] = float(np.median(values))
    spread[metric] = {"mean": float(values.mean()), "min": float(values.min()),
                      "max": float(values.max()), "std": float(values.std()),
                      "n": int(len(values))}
  return median, spread


# --- one run per directory --------------------------------------------------------------------
def holding(model_dir: str, log: Callable[[str], None] = print):
  """The run's lock on `model_dir` (`run_lock.holding`): a second run into it is refused, and a
  start that fails before any trial progress (`holds_trials`) leaves the directory as it was (or
  absent)."""
  return run_lock.holding(model_dir, "--model_dir", keep=holds_trials, log=log)


@contextlib.contextmanager
def this_run_only(model_dir: str, tool: str, config, log: Callable[[str], None] = print,
                  extendable: Tuple[str, ...] = ()):
  """Holds `model_dir` (`holding`) for a run of `tool` with `config`, after checking that a
  directory already there was written by this same run, or by it with a smaller `extendable`
  setting (`fingerprint.check_or_record`; another run's is refused before anything is
  written)."""
  with holding(model_dir, log):
    fingerprint.check_or_record(model_dir, fingerprint.fingerprint(tool, config),
                                fingerprint.field_defaults(config), extendable)
    yield


def finished_summary(model_dir: str, tool: str, config, num_trials: int,
                     finished: Callable[[dict], bool] = lambda result: True,
                     extendable: Tuple[str, ...] = (),
                     log: Callable[[str], None] = print) -> Optional[dict]:
  """The summary of `model_dir` when it holds this same run (its fingerprint; `extendable`
  settings no larger) with `num_trials` trials, each `finished` under the current settings: a
  re-run returns it (and says so) without training or reading its data again. Else None
  (`this_run_only` then refuses another run's directory)."""
  summary, recorded = summary_path(model_dir), os.path.join(model_dir, fingerprint.FILE)
  if not (os.path.isfile(summary) and os.path.isfile(recorded)):
    return None
  if fingerprint.differences(textio.load_json(recorded), fingerprint.fingerprint(tool, config),
                             fingerprint.field_defaults(config), extendable):
    return None
  results = textio.load_json(summary)
  if len(results["trials"]) != num_trials or not all(finished(t) for t in results["trials"]):
    return None
  log(f"{model_dir} holds this run, its {num_trials} trial(s) finished: results read back")
  return results


def converged(result: dict) -> bool:
  """Whether a trial's recorded result stopped by patience (a larger budget would not change it)
  rather than at its budget (`stopped_by`; in earlier versions' results: fewer steps run than
  the budget)."""
  budget_bound = result["steps_run"] >= result["train_steps"]
  return result.get("stopped_by", "budget" if budget_bound else "patience") == "patience"


def stands(result: dict, budget: int) -> bool:
  """Whether a trial's recorded result stands under a run's `budget` of steps: it trained to at
  least that budget, or stopped by patience (`converged`)."""
  return result["train_steps"] >= budget or converged(result)


def first_trial(model_dir: str, num_trials: int,
                matches: Callable[[Optional[dict], bool], bool]) -> Optional[int]:
  """The first of `num_trials` whose recorded result (None: none yet) and whether it holds a
  checkpoint to continue from `matches`; None if none does. What a re-run's checks read."""
  for trial in range(num_trials):
    path = trial_results(model_dir, trial)
    result = textio.load_json(path) if os.path.isfile(path) else None
    if matches(result, has_checkpoint(model_dir, trial)):
      return trial
  return None


def check_raised_budget(model_dir: str, num_trials: int, flag: str, budget: int,
                        log: Callable[[str], None] = print) -> None:
  """When `budget` (`--<flag>`) is larger than the one `model_dir`'s run recorded, each trial
  that ended at its budget continues from the checkpoint it kept (those stopped by patience,
  `converged`, stay as they are); one that kept none (an earlier version's) is refused before
  anything is written."""
  recorded = fingerprint.recorded_settings(model_dir).get(flag, budget)
  if recorded >= budget:
    return
  stuck = first_trial(model_dir, num_trials, lambda result, resumable: (
      result is not None and not converged(result) and not resumable))
  if stuck is not None:
    raise ValueError(
        f"--{flag}={budget}: trial_{stuck} in {model_dir} ended at its budget of {recorded} "
        "steps without keeping a checkpoint (an earlier version's run), so it cannot continue; "
        "give a new --model_dir")
  log(f"--{flag} raised from {recorded} to {budget}: trials that ended at their budget "
      "continue from their last checkpoint, those stopped by patience stay")
