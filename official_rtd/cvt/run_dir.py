"""A trained `run_cvt` directory: its layout, and any trial's kept weights loaded back, through the
task registry, for prediction (`cvt_predict`, `cvt_translate`).

  <model_dir>/vocab.json             words, characters, each task's labels, the model's sizes
  <model_dir>/trial_<k>/model        the dev-selected EMA weights of trial k (counted from 0)

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


@dataclasses.dataclass
class TrainedRun:
  """A trial's kept weights: the encoder's vocabulary, the model and its tasks (restored without
  their data, `CvtTask.restored`), and the run's recorded settings."""
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
  tasks = {name: task_lib.get(name).restored(name, vocabulary, settings)
           for name, vocabulary in saved["tasks"].items()}
  config = encoder_lib.CvtConfig(**{k: tuple(v) if isinstance(v, list) else v
                                    for k, v in saved["model"].items()})
  model = model_lib.CvtModel(config, len(vocab.words), len(vocab.chars), tasks, name="cvt")
  status = tf.train.Checkpoint(model=model).read(weights)
  inputs = data_lib.make_batch([["a", "b"]], vocab).inputs()
  states = model(inputs)
  for name, task in tasks.items():  # creates what prediction reads; the rest is never built
    task.create_variables(model.heads[name], states, inputs)
  status.assert_existing_objects_matched().expect_partial()
  return TrainedRun(vocab, model, tasks, settings)
