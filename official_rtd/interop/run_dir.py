"""A `run_pretraining` model directory: what it records besides checkpoints (`runs.load_model`
rebuilds its model from them).

  operative_config.gin   the gin configuration the run was built with
  run_flags.json         the command line, the vocab's SHA-256 and casing
  vocab.txt              a copy of the run's vocab
  eval_results.jsonl     one JSON row per held-out evaluation (step, train_flops, figures)
  onset.jsonl            one JSON row per structure-onset measurement (step, train_flops, onset_*)
"""
import json
import os
import re
import shutil
from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.utils import textio

OPERATIVE_CONFIG = "operative_config.gin"
RUN_FLAGS = "run_flags.json"
RESULTS_NAME = "eval_results.jsonl"
ONSET_NAME = "onset.jsonl"  # the structure-onset monitor's rows (training/structure_monitor.py)


class RunDirError(ValueError):
  """A directory that is not (or not yet) what the caller needs."""


def write_run_config(model_dir: str, gin_config: str, flags: dict, vocab, do_lower_case: bool):
  """Records the gin config, the flags, the vocab and its casing next to the checkpoints, so the
  run can be rebuilt from `model_dir` alone (e.g. by `score_pll`)."""
  os.makedirs(model_dir, exist_ok=True)
  with open(os.path.join(model_dir, OPERATIVE_CONFIG), "w", encoding="utf-8") as f:
    f.write(gin_config)
  copy = os.path.join(model_dir, vocab_lib.file_name(vocab))
  if not (os.path.exists(copy) and os.path.samefile(vocab.path, copy)):  # records built from it
    shutil.copyfile(vocab.path, copy)
  textio.write_json_atomic(os.path.join(model_dir, RUN_FLAGS), dict(
      flags, do_lower_case=do_lower_case, vocab_sha256=vocab.sha256))


def recorded_vocab(model_dir: str) -> Optional[Tuple[str, str]]:
  """(SHA-256, path of the copy) of the vocab a run directory records (None: no record)."""
  path = os.path.join(model_dir, RUN_FLAGS)
  if not os.path.isfile(path):
    return None
  sha256 = textio.load_json(path).get("vocab_sha256")
  if not sha256:
    return None
  try:
    return sha256, vocab_lib.find_vocab(model_dir)
  except vocab_lib.VocabError:
    return sha256, model_dir


# Bindings a resumed run may change: train longer (steps, FLOPs budget), log, checkpoint and
# evaluate at other intervals. Every other binding defines the run.
RESUMABLE_BINDINGS = ("TrainConfig.num_train_steps", "TrainConfig.train_flops_budget",
                      "TrainConfig.log_every_steps", "TrainConfig.save_checkpoints_steps",
                      "TrainConfig.keep_checkpoint_max", "EvalConfig.")


def gin_bindings(config_str: str) -> Dict[str, str]:
  """`{name: value}` of a gin config string's bindings (a value may span several lines)."""
  bindings, name = {}, None
  for line in config_str.splitlines():
    if not line.strip() or line.lstrip().startswith("#"):
      continue
    match = re.match(r"^([A-Za-z_%][\w.%/]*)\s*=\s*(.*)$", line)
    if match and not line[0].isspace():
      name = match.group(1)
      bindings[name] = match.group(2).strip()
    elif name is not None:
      bindings[name] += " " + line.strip()
  return bindings


def check_same_run(model_dir: str, config_str: str) -> None:
  """Before a run writes anything into `model_dir`: if it holds checkpoints and the gin config
  they were trained with, the new config must be the same but for `RESUMABLE_BINDINGS`.

  Raises:
    RunDirError: naming the differing bindings (nothing is written).
  """
  path = os.path.join(model_dir, OPERATIVE_CONFIG)
  if not (os.path.isfile(path) and tf.train.latest_checkpoint(model_dir)):
    return
  old = gin_bindings(textio.read_text(path))
  new = gin_bindings(config_str)
  changed = [f"{k} {old.get(k, '(unset)')} → {new.get(k, '(unset)')}"
             for k in sorted(set(old) | set(new))
             if old.get(k) != new.get(k) and not k.startswith(RESUMABLE_BINDINGS)]
  if changed:
    raise RunDirError(
        f"--model_dir={model_dir} holds a run trained with other settings ("
        + "; ".join(changed[:4]) + (f"; and {len(changed) - 4} more" if len(changed) > 4 else "")
        + f"): its checkpoints and config were left as they are. Resume it with its own settings "
        f"(--gin_file={path}; more steps are allowed), or give a new --model_dir")


def append_result(model_dir: str, row: dict, name: str = RESULTS_NAME) -> None:
  """Appends one JSON row to `<model_dir>/<name>` (eval_results.jsonl; flushed and fsynced)."""
  os.makedirs(model_dir, exist_ok=True)
  with open(os.path.join(model_dir, name), "a", encoding="utf-8") as f:
    f.write(json.dumps(row, sort_keys=True) + "\n")
    f.flush()
    os.fsync(f.fileno())


def read_results(model_dir: str, name: str = RESULTS_NAME) -> List[dict]:
  """The JSON rows of `<model_dir>/<name>` (eval_results.jsonl, or onset.jsonl)."""
  path = os.path.join(model_dir, name)
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f"{model_dir} has no {name} " + ("(run with --mode=eval or --mode=train_and_eval first)"
                                         if name == RESULTS_NAME else
                                         "(a run with the structure-onset monitor writes it)"))
  return [textio.json_line(path, number, line)
          for number, line in textio.numbered_lines(path) if line.strip()]
