"""What defines a fine-tuning run, so a `--model_dir` never mixes two runs' results.

The first run of a directory writes `run_fingerprint.json`: the tool (runner class), every setting
that changes results (the config's fields but `RESUMABLE`) and a digest of the content of every
data input: the settings the config class declares in its `INPUTS` (the export, the data files or
folders), never another string because a folder of that name happens to exist (`--task=rte` beside
an `rte/` folder is a task name). Run directories inside an input folder (the run's own
`--model_dir`, or any folder holding a run's fingerprint) are not the input's content. A re-run
resumes only the same run; otherwise it stops before writing anything, naming what differs.
"""
import dataclasses
import hashlib
import json
import os
from typing import Dict, List, Optional, Tuple

from official_rtd.utils import run_lock
from official_rtd.utils import textio

FILE = "run_fingerprint.json"
# Settings a re-run may change: more trials extend a run; logging, checkpoint intervals, the
# evaluation batch and permission for unseen dev tags do not change any result.
RESUMABLE = frozenset({"model_dir", "num_trials", "log_every_steps", "save_checkpoints_steps",
                       "eval_batch_size", "allow_unseen_dev_tags"})


# Settings renamed in a later version: a directory recorded under the old name resumes.
RENAMED_SETTINGS = {"batch_size": "train_batch_size"}  # run_cvt


class RunMismatchError(ValueError):
  """A `--model_dir` that holds another run."""


def _data_files(path: str, skip: Tuple[str, ...]) -> List[str]:
  """The files under directory `path` but those of runs: a folder of `skip` (the run's own
  `--model_dir`) or holding a run's fingerprint (another run beside the data) is left out."""
  skip = {os.path.realpath(p) for p in skip}
  files = []
  for root, dirs, names in os.walk(path):
    dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(root, d)) not in skip
               and not os.path.isfile(os.path.join(root, d, FILE))]
    files += [os.path.join(root, name) for name in names]
  return sorted(files)


def path_digest(path: str, skip: Tuple[str, ...] = ()) -> str:
  """SHA-256 over a file's bytes, or over a directory's files (relative names, sizes, bytes), run
  directories inside it left out (`_data_files`)."""
  digest = hashlib.sha256()
  files = [path] if os.path.isfile(path) else _data_files(path, skip)
  for name in files:
    digest.update(os.path.relpath(name, path).encode() + b"\0")
    with open(name, "rb") as f:
      for block in iter(lambda: f.read(1 << 20), b""):
        digest.update(block)
  return digest.hexdigest()


def input_settings(config) -> Tuple[str, ...]:
  """The settings of `config` that name data inputs (its class's `INPUTS`)."""
  return tuple(getattr(type(config), "INPUTS", ()))


def fingerprint(tool: str, config) -> Dict:
  """`{"tool", "settings", "inputs"}` of a run config dataclass; `inputs` digests the content of
  each declared input (`input_settings`) that names an existing file or folder."""
  settings = {k: v for k, v in dataclasses.asdict(config).items() if k not in RESUMABLE}
  own = tuple(p for p in [getattr(config, "model_dir", None)] if p)
  inputs = {}
  for name in sorted(input_settings(config)):
    value = settings.get(name)
    if isinstance(value, str) and value and os.path.exists(value):
      inputs[name] = path_digest(value, skip=own)
  return json.loads(json.dumps({"tool": tool, "settings": settings, "inputs": inputs},
                               default=str))


def differences(old: Dict, new: Dict, defaults: Optional[Dict] = None,
                extendable: Tuple[str, ...] = ()) -> List[str]:
  """What differs between two fingerprints, one phrase each. A setting `old` does not record
  (added in a later version) counts as its value in `defaults` (the config's field defaults); a
  setting of `extendable` (a budget) may grow, never shrink."""
  out = []
  defaults = defaults or {}
  old = dict(old, settings={RENAMED_SETTINGS.get(k, k): v
                            for k, v in old.get("settings", {}).items()})
  if old.get("tool") != new["tool"]:
    out.append(f"tool {old.get('tool')} → {new['tool']}")
  for key in sorted(set(old.get("settings", {})) | set(new["settings"])):
    before = old.get("settings", {}).get(key, defaults.get(key))
    after = new["settings"].get(key)
    if key in extendable and before is not None and after >= before:
      continue
    if before != after:
      shrink = " (a run's budget can be raised, not lowered)" if key in extendable else ""
      out.append(f"--{key} {before!r} → {after!r}{shrink}")
  # Only inputs both recorded are compared: a directory written before inputs were declared may
  # hold digests of other settings (a folder named like `--task`), which never count.
  for key in sorted(set(old.get("inputs", {})) & set(new["inputs"])):
    if old["inputs"][key] != new["inputs"][key]:
      out.append(f"the content of --{key} changed")
  return out


def recorded_settings(model_dir: str) -> Dict:
  """The settings the run in `model_dir` recorded when it started (`{}` if none)."""
  path = os.path.join(model_dir, FILE)
  return textio.load_json(path).get("settings", {}) if os.path.isfile(path) else {}


def field_defaults(config) -> Dict:
  """The default of each field of a config dataclass (those that have one)."""
  return {f.name: f.default for f in dataclasses.fields(config)
          if f.default is not dataclasses.MISSING}


def check_or_record(model_dir: str, current: Dict, defaults: Optional[Dict] = None,
                    extendable: Tuple[str, ...] = ()) -> bool:
  """Records `current` in a new (or empty) `model_dir`; returns True when `model_dir` already
  holds this same run (a resume), recording a raised `extendable` setting. `defaults`,
  `extendable`: see `differences`.

  Raises:
    RunMismatchError: `model_dir` holds another run, or results without a fingerprint; nothing
      is written.
  """
  path = os.path.join(model_dir, FILE)
  if os.path.isfile(path):
    with open(path, encoding="utf-8") as f:
      try:
        old = json.load(f)
      except json.JSONDecodeError as e:
        raise RunMismatchError(f"{path}: not JSON ({e.msg}); move the directory aside") from None
    changed = differences(old, current, defaults, extendable)
    if changed:
      shown = "; ".join(changed[:4]) + (f"; and {len(changed) - 4} more"
                                        if len(changed) > 4 else "")
      raise RunMismatchError(
          f"--model_dir={model_dir} holds another run ({shown}): its results were left as they "
          "are; give a new --model_dir (or move this one aside) to start this run")
    if old["settings"] != current["settings"]:  # a raised budget (or a setting added later)
      textio.write_json_atomic(path, current)
    return True
  if os.path.isdir(model_dir) and [n for n in os.listdir(model_dir)
                                   if not run_lock.is_lock_file(n)]:
    raise RunMismatchError(
        f"--model_dir={model_dir} is not empty and has no {FILE} (another tool's output, or a "
        "run of an earlier version): give a new --model_dir or move this one aside")
  os.makedirs(model_dir, exist_ok=True)
  textio.write_json_atomic(path, current)
  return False
