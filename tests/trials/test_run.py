"""A run directory's re-run rules, on directories written by hand: which recorded trial stands
under a budget, which one a raised budget cannot continue, and a finished run read back."""
import dataclasses
import os
import tempfile

import tensorflow as tf

from official_rtd.trials import fingerprint
from official_rtd.trials import run as trial_run
from official_rtd.utils import textio

AT_BUDGET = {"train_steps": 100, "steps_run": 100, "stopped_by": "budget"}
BY_PATIENCE = {"train_steps": 100, "steps_run": 40, "stopped_by": "patience"}
EARLIER_VERSION = {"train_steps": 100, "steps_run": 40}  # no `stopped_by`: fewer steps run


@dataclasses.dataclass(frozen=True)
class Settings:
  model_dir: str
  learning_rate: float = 0.1
  num_trials: int = 1


def write_trial(model_dir, trial, result, checkpoint=False):
  os.makedirs(trial_run.checkpoint_dir(model_dir, trial), exist_ok=True)
  textio.write_json_atomic(trial_run.trial_results(model_dir, trial), result)
  if checkpoint:  # the checkpoint manager's index file
    textio.write_lines_atomic(os.path.join(trial_run.checkpoint_dir(model_dir, trial),
                                           "checkpoint"), ['model_checkpoint_path: "ckpt-1"'])


class RerunRulesTest(tf.test.TestCase):

  def test_which_results_stand_under_a_budget(self):
    self.assertFalse(trial_run.converged(AT_BUDGET))
    self.assertTrue(trial_run.converged(BY_PATIENCE))
    self.assertTrue(trial_run.converged(EARLIER_VERSION))
    self.assertTrue(trial_run.stands(AT_BUDGET, 100))
    self.assertFalse(trial_run.stands(AT_BUDGET, 200))  # a raised budget: it continues
    self.assertTrue(trial_run.stands(BY_PATIENCE, 200))  # stopped by patience: it stays

  def test_a_raised_budget_continues_only_trials_that_kept_a_checkpoint(self):
    model_dir = tempfile.mkdtemp()
    textio.write_json_atomic(os.path.join(model_dir, fingerprint.FILE),
                             {"settings": {"train_steps": 100}})
    write_trial(model_dir, 0, AT_BUDGET, checkpoint=True)
    write_trial(model_dir, 1, BY_PATIENCE)
    logs = []
    trial_run.check_raised_budget(model_dir, 2, "train_steps", 200, logs.append)
    self.assertEqual(logs, ["--train_steps raised from 100 to 200: trials that ended at their "
                            "budget continue from their last checkpoint, those stopped by "
                            "patience stay"])
    trial_run.check_raised_budget(model_dir, 2, "train_steps", 100, logs.append)  # not raised
    self.assertLen(logs, 1)
    write_trial(model_dir, 2, AT_BUDGET)  # at its budget, no checkpoint kept
    with self.assertRaisesRegex(ValueError, r"--train_steps=200: trial_2 in .* ended at its "
                                            r"budget of 100 steps without keeping a checkpoint"):
      trial_run.check_raised_budget(model_dir, 3, "train_steps", 200, logs.append)
    self.assertEqual(trial_run.first_trial(model_dir, 3, lambda result, resumable: resumable), 0)
    self.assertIsNone(trial_run.first_trial(model_dir, 3, lambda result, resumable: False))

  def test_a_finished_run_is_read_back_only_when_it_is_this_run(self):
    model_dir = tempfile.mkdtemp()
    settings = Settings(model_dir)
    fingerprint.check_or_record(model_dir, fingerprint.fingerprint("Tool", settings),
                                fingerprint.field_defaults(Settings))
    self.assertIsNone(trial_run.finished_summary(model_dir, "Tool", settings, 1))  # no summary
    summary = {"trials": [AT_BUDGET], "median": {}}
    textio.write_json_atomic(trial_run.summary_path(model_dir), summary)
    logs = []
    self.assertEqual(trial_run.finished_summary(model_dir, "Tool", settings, 1, log=logs.append),
                     summary)
    self.assertEqual(logs, [f"{model_dir} holds this run, its 1 trial(s) finished: results "
                            "read back"])
    other = Settings(model_dir, learning_rate=0.2)
    self.assertIsNone(trial_run.finished_summary(model_dir, "Tool", other, 1))
    more_trials = Settings(model_dir, num_trials=2)
    self.assertIsNone(trial_run.finished_summary(model_dir, "Tool", more_trials, 2))
    self.assertIsNone(trial_run.finished_summary(model_dir, "Tool", settings, 1,
                                                 lambda result: False))
