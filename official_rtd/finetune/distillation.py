"""Born-again distillation with teacher annealing (dissertation §3.2.2).

A teacher's training-set predictions are written by `run_glue --write_train_predictions` as
`train_predictions_<task>.json`: `{"task", "num_examples", "num_classes", "predictions"}`, where
`predictions[i]` belongs to row i of the task's training file (its logits, or the regression
value on the label scale). The student minimises
  ℓ(λ·y + (1 − λ)·f_τ(x, θ_τ), f_τ(x, θ))
with λ raised linearly from 0 to 1 over training (teacher annealing), or held fixed.
"""
import os
from typing import Callable, Dict, Optional, Sequence

import numpy as np

from official_rtd.finetune import configs
from official_rtd.utils import textio

ANNEALING = ("linear", "fixed")


def file_name(task: str) -> str:
  return f"train_predictions_{task}.json"


FUNCTIONS = ("softmax", "linear", "sigmoid")  # a teacher's prediction function


def write_predictions(path: str, task: str, num_classes: int, predictions: np.ndarray,
                      prediction_function: str):
  """`predictions`: `[examples, num_classes]` logits, or `[examples]` regression values;
  `prediction_function`: the head's (`FUNCTIONS`: softmax for classification, linear wᵀc or
  sigmoid(wᵀc) on normalised labels for regression)."""
  if prediction_function not in FUNCTIONS:
    raise ValueError(f"prediction_function must be one of {FUNCTIONS}")
  textio.write_json_atomic(path, {
      "task": task, "num_examples": int(len(predictions)), "num_classes": num_classes,
      "prediction_function": prediction_function,
      "predictions": np.asarray(predictions, np.float64).round(6).tolist()})


def read_predictions(path: str, task: str, num_examples: int, num_classes: int):
  """A teacher file's predictions, `[num_examples, num_classes]` (`[num_examples]` for a
  regression task), checked against the student's training set, and its prediction function
  ("" in files of earlier versions).

  Raises:
    ValueError: naming the file when it is missing, or its task, example count or label space
      differ from the student's.
  """
  if not os.path.isfile(path):
    raise ValueError(f"teacher file {path} does not exist (write it with run_glue "
                     "--write_train_predictions)")
  data = textio.load_json(path)
  problems = []
  if data.get("task") != task:
    problems.append(f"it is for task {data.get('task')!r}, not {task!r}")
  predictions = np.asarray(data.get("predictions", []), np.float32)
  if data.get("num_examples") != num_examples or len(predictions) != num_examples:
    problems.append(f"it holds {len(predictions)} predictions but the {task} training set has "
                    f"{num_examples} examples")
  width = 1 if predictions.ndim == 1 else predictions.shape[-1]
  if data.get("num_classes") != num_classes or width != num_classes:
    problems.append(f"its label space has {data.get('num_classes')} classes but {task} has "
                    f"{num_classes}")
  if problems:
    raise ValueError(f"teacher file {path} does not match the training set: "
                     + "; ".join(problems))
  return predictions, data.get("prediction_function", "")


def teacher_paths(tasks: Sequence[str], teacher_dirs: str, teachers_from: str,
                  file_names: Optional[Dict[str, str]] = None) -> Dict[str, str]:
  """`{task: teacher file}` from `--teacher_dirs=task:dir,...` and/or `--teachers_from=root`
  (`<root>/<task>/` for each task that has such a folder); a directory may be a single-task or
  a multi-task run. `file_names`: each task's teacher file name (default `file_name(task)`)."""
  dirs = configs.task_dirs(teacher_dirs, "--teacher_dirs")
  for task in dirs:
    if task not in tasks:
      raise ValueError(f"--teacher_dirs names {task!r}, which is not in --tasks {list(tasks)}")
  if teachers_from:
    found = [t for t in tasks if os.path.isdir(os.path.join(teachers_from, t))]
    if not found:
      raise ValueError(f"--teachers_from={teachers_from} holds no folder named after a task of "
                       f"{list(tasks)}")
    for task in found:
      dirs.setdefault(task, os.path.join(teachers_from, task))
  names = file_names or {}
  return {task: os.path.join(directory, names.get(task) or file_name(task))
          for task, directory in dirs.items()}


def annealing_schedule(mode: str, fixed_lambda: float) -> Callable:
  """λ as a function of training progress (0 at the first step, 1 at the last): `linear` rises
  with it (teacher annealing), `fixed` is the constant `fixed_lambda` (Table 3.4's ablations:
  0 = pure distillation, 0.5)."""
  if mode not in ANNEALING:
    raise ValueError(f"--teacher_annealing must be one of {ANNEALING}, got {mode!r}")
  if not 0.0 <= fixed_lambda <= 1.0:
    raise ValueError(f"--lambda={fixed_lambda} must be in [0, 1]")
  if mode == "fixed":
    return lambda progress: fixed_lambda + 0.0 * progress
  return lambda progress: progress


def soft_targets(gold: np.ndarray, teacher: np.ndarray, has_teacher: np.ndarray, lam
                 ) -> np.ndarray:
  """λ·y + (1 − λ)·teacher where a teacher exists, y elsewhere (works on numpy and tensors)."""
  mixed = lam * gold + (1.0 - lam) * teacher
  return has_teacher[:, None] * mixed + (1.0 - has_teacher[:, None]) * gold


def softmax(logits: np.ndarray) -> np.ndarray:
  shifted = np.exp(logits - logits.max(-1, keepdims=True))
  return shifted / shifted.sum(-1, keepdims=True)

