"""A `run_cvt` directory: what it adds to every run directory's layout, its rules (written by the
runner, checked on a re-run), and any trial's kept weights loaded back, through the task registry,
for prediction (`cvt_predict`, `cvt_translate`).

  <model_dir>/vocab.json                     words, characters, each task's labels, the model's
                                             sizes, how labeled batches are drawn
  <model_dir>/trial_<k>/model                the dev-selected EMA weights of trial k (from 0)
  <model_dir>/trial_<k>/<predictions name>   each task's dev predictions by those weights

beside the layout every run directory has (`trials/run.py`: its summary, each trial's results,
checkpoint and dev selection).
"""
import dataclasses
import os
import re
from typing import Dict

import tensorflow as tf

from official_rtd.cvt import all_tasks  # pylint: disable=unused-import
from official_rtd.cvt import data as data_lib
from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import model as model_lib
from official_rtd.cvt import settings as settings_lib
from official_rtd.cvt import task as task_lib
from official_rtd.trials import fingerprint
from official_rtd.trials import run as trial_run
from official_rtd.utils import textio

VOCAB_NAME = "vocab.json"
MODEL_NAME = "model"  # trial_<k>/model: its dev-selected EMA weights
# How labeled batches are drawn, recorded in vocab.json: random since b16ec8c (before it they were
# length-sorted, and vocab.json said nothing), so an older trial is not continued on other batches.
LABELED_BATCHES = "random"


def write_vocab(model_dir: str, vocab: data_lib.WordCharVocab, tasks: Dict[str, object],
                model_config: encoder_lib.CvtConfig) -> None:
  """`vocab.json`: what reading `trial_<k>/model` back needs (words, characters, each task's
  labels, the model's sizes) and how the labeled batches are drawn."""
  textio.write_json_atomic(os.path.join(model_dir, VOCAB_NAME), {
      **vocab.to_json(), "labeled_batches": LABELED_BATCHES,
      "tasks": {n: t.vocabulary_json() for n, t in tasks.items()},
      "model": dataclasses.asdict(model_config)})


def keep_predictions(model_dir: str, trial: int, tasks, new_best: bool) -> None:
  """Each task's predictions of the last evaluation (`<predictions name>.last` in `trial_<k>/`)
  replace the kept ones when it is the best so far, else are dropped."""
  for task in tasks:
    path = trial_run.trial_dir(model_dir, trial, task.predictions_name())
    if new_best:
      os.replace(path + ".last", path)
    else:
      os.remove(path + ".last")


def check_batching(model_dir: str, num_trials: int, finished) -> None:
  """A trial that would continue from a checkpoint of a run begun with length-sorted labeled
  batches (its vocab.json does not record `LABELED_BATCHES`) is refused before anything is
  written: a resume replays the labeled batches exactly, and they are no longer those.
  `finished(result)`: whether a recorded trial stands as it is."""
  path = os.path.join(model_dir, VOCAB_NAME)
  if not os.path.isfile(path) or textio.load_json(path).get("labeled_batches") == LABELED_BATCHES:
    return
  continued = trial_run.first_trial(model_dir, num_trials, lambda result, resumable: (
      resumable and not (result and finished(result))))
  if continued is not None:
    raise ValueError(
        f"--model_dir={model_dir}: trial_{continued} began with length-sorted labeled batches "
        "(an earlier version's run); continuing it would change its batches midway. Give a new "
        "--model_dir (or move this one aside)")


@dataclasses.dataclass
class TrainedRun:
  """A trial's kept weights: the encoder's vocabulary, the model and its tasks (restored without
  their data: `CvtTask(name, labels, settings)`), and the run's recorded settings."""
  vocab: data_lib.WordCharVocab
  model: model_lib.CvtModel
  tasks: Dict[str, task_lib.CvtTask]
  settings: dict


def load(model_dir: str, trial: int = 0, overrides: Dict[str, object] = None) -> TrainedRun:
  """Trial `trial`'s kept weights of the run in `model_dir`; the tasks read the run's recorded
  settings (a setting it did not record: `CvtRunConfig`'s default), `overrides` replacing them
  (e.g. a translation's `beam_size`).

  Raises:
    ValueError: naming what is missing (a finished trial's `trial_<k>/model`, `vocab.json`) or
      the trials there are.
  """
  parent, folder = os.path.split(os.path.normpath(model_dir))
  if re.fullmatch(r"trial_\d+", folder) and os.path.isfile(os.path.join(parent, VOCAB_NAME)):
    raise ValueError(f"--model_dir={model_dir} is a trial's folder: give the run's folder, "
                     f"--model_dir={parent} (--trial={folder.split('_')[1]} picks this trial)")
  existing = trial_run.trials(model_dir)
  if existing and trial not in existing:
    raise ValueError(f"--trial={trial}: --model_dir={model_dir} holds trial_"
                     f"{', trial_'.join(map(str, existing))} (--trial counts from 0, as the "
                     "folders and the log do)")
  vocab_path = os.path.join(model_dir, VOCAB_NAME)
  weights = trial_run.trial_dir(model_dir, trial, MODEL_NAME)
  if not os.path.isfile(vocab_path) or not tf.io.gfile.exists(weights + ".index"):
    raise ValueError(f"--model_dir={model_dir}: no {VOCAB_NAME} or trial_{trial}/model (a "
                     "finished or evaluated run_cvt run is needed)")
  saved = textio.load_json(vocab_path)
  settings = {**fingerprint.field_defaults(settings_lib.CvtRunConfig),
              **fingerprint.recorded_settings(model_dir), **(overrides or {})}
  vocab = data_lib.WordCharVocab(saved["words"], saved["chars"])
  fields = {f.name for f in dataclasses.fields(settings_lib.CvtRunConfig)}
  config = settings_lib.CvtRunConfig(**{  # (the fingerprint leaves out what resuming may change)
      **{k: v for k, v in settings.items() if k in fields}, "model_dir": model_dir})
  tasks = {name: task_lib.get(name)(name, labels, config)
           for name, labels in saved["tasks"].items()}
  model_config = encoder_lib.CvtConfig(**{k: tuple(v) if isinstance(v, list) else v
                                          for k, v in saved["model"].items()})
  model = model_lib.CvtModel(model_config, len(vocab.words), len(vocab.chars), tasks, name="cvt")
  status = tf.train.Checkpoint(model=model).read(weights)
  inputs = data_lib.make_batch([["a", "b"]], vocab).inputs()
  states = model(inputs)
  for name, task in tasks.items():  # creates what prediction reads; the rest is never built
    task.create_variables(model.heads[name], states, inputs)
  status.assert_existing_objects_matched().expect_partial()
  return TrainedRun(vocab, model, tasks, settings)
