"""Checkpoint files on disk (`<prefix>.index` + `<prefix>.data-*`): which exist, which are intact,
and what is wrong with a damaged one, in one line that names the newest intact checkpoint.

A run directory's `checkpoint` state file names its latest checkpoint; `tf.train.latest_checkpoint`
returns nothing when that one's files were moved away, so the run would start again from step 0.
`latest` here returns the newest checkpoint whose files exist instead: moving a damaged checkpoint
aside resumes from the one before it.
"""
import contextlib
import errno
import gc
import glob
import logging as std_logging
import os
import re
import shutil
from typing import List, Optional

import tensorflow as tf

from official_rtd.utils import interruptible
from official_rtd.utils import progress

_NUMBER = re.compile(r"-(\d+)$")


def step_of(prefix: str) -> int:
  """The number of `.../ckpt-<number>` (-1 if it has none)."""
  match = _NUMBER.search(prefix)
  return int(match.group(1)) if match else -1


def existing(directory: str) -> List[str]:
  """Prefixes of the checkpoints in `directory` with an index file, newest (highest number) first:
  those the state file lists and any other `*.index` beside them."""
  prefixes = {path[:-len(".index")] for path in glob.glob(os.path.join(directory, "*.index"))}
  state = tf.train.get_checkpoint_state(directory) if os.path.isdir(directory) else None
  if state is not None:
    for path in list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path]:
      path = path if os.path.isabs(path) else os.path.join(directory, path)
      if os.path.isfile(path + ".index"):
        prefixes.add(path)
  return sorted(prefixes, key=lambda p: (step_of(p), p), reverse=True)


def latest(directory: str) -> Optional[str]:
  """The newest checkpoint of `directory` whose index file exists (None: no checkpoint)."""
  if not os.path.isdir(directory):
    return None
  named = tf.train.latest_checkpoint(directory)
  found = existing(directory)
  if named and (not found or step_of(named) >= step_of(found[0])):
    return named
  return found[0] if found else None


def problem(prefix: str) -> Optional[str]:
  """What is wrong with the checkpoint `prefix` (None: every value reads back).

  Reads every value once, so it costs a pass over the checkpoint: called after a restore failed.
  """
  index = prefix + ".index"
  if not os.path.isfile(index):
    return f"{os.path.basename(index)} is missing"
  if os.path.getsize(index) == 0:
    return f"{os.path.basename(index)} is empty"
  if not glob.glob(prefix + ".data-*"):
    return f"{os.path.basename(prefix)}.data-* is missing"
  try:
    reader = tf.train.load_checkpoint(prefix)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except (tf.errors.OpError, IndexError, ValueError, RuntimeError) as e:
    message = getattr(e, "message", None) or str(e)
    first = next((line for line in message.splitlines() if line.strip()), type(e).__name__)
    return f"its files are truncated or corrupt ({first.strip()[:160]})"
  return None


def newest_intact(directory: str, skip: str = "") -> Optional[str]:
  """The newest checkpoint of `directory` (other than `skip`) that reads back whole."""
  for prefix in existing(directory):
    if prefix != skip and problem(prefix) is None:
      return prefix
  return None


def damaged_message(prefix: str) -> Optional[str]:
  """One line for a checkpoint that does not read back (None if it does): what is wrong, the
  newest intact checkpoint beside it and how to resume from that one."""
  what = problem(prefix)
  if what is None:
    return None
  directory = os.path.dirname(prefix) or "."
  intact = newest_intact(directory, skip=prefix)
  if intact is None:
    advice = "no intact checkpoint is left beside it"
  else:
    advice = (f"the newest intact checkpoint is {intact} (step {step_of(intact)}): move "
              f"{os.path.basename(prefix)}.* out of {directory} and run the same command again to "
              "go on from it")
  return f"checkpoint {prefix} is damaged: {what}; {advice}"


def save(manager: tf.train.CheckpointManager, step: int) -> str:
  """`manager.save(checkpoint_number=step)`, never cut short by Ctrl-C or SIGTERM (held until it
  ends: `interruptible.uninterrupted`); when the write fails (a full disk), the partial files it
  left (`<prefix>_temp*`) are removed and the error names the directory.

  Raises:
    OSError: the checkpoint could not be written (the earlier checkpoints are as they were).
  """
  directory = manager.directory
  try:
    with interruptible.uninterrupted():
      return manager.save(checkpoint_number=step)
  except (OSError, tf.errors.OpError) as e:
    for debris in glob.glob(os.path.join(directory, f"*-{step}_temp*")):
      if os.path.isdir(debris):
        shutil.rmtree(debris, ignore_errors=True)
      else:
        with contextlib.suppress(OSError):
          os.remove(debris)
    if "No space left" in str(e) or getattr(e, "errno", None) == errno.ENOSPC:
      raise OSError(errno.ENOSPC, f"no space left on the disk holding {directory} "
                    f"({_free_megabytes(directory)} MB free): could not write checkpoint {step}; "
                    "its partial files were removed and the earlier checkpoints kept; free some "
                    "space and run the same command again to go on") from None
    message = getattr(e, "message", None) or getattr(e, "strerror", None) or str(e)
    first = next((line for line in str(message).splitlines() if line.strip()), type(e).__name__)
    first = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", first.strip())
    raise OSError(getattr(e, "errno", None) or errno.EIO,
                  f"could not write checkpoint {step} ({first[:200]}); the partial files were "
                  "removed, the earlier checkpoints are kept", directory) from None


def _free_megabytes(directory: str) -> str:
  """Free space on the disk of `directory` (or of its nearest existing parent), in MB."""
  while directory and not os.path.isdir(directory):
    directory = os.path.dirname(directory)
  try:
    stat = os.statvfs(directory or ".")
  except OSError:
    return "?"
  return f"{stat.f_bavail * stat.f_frsize / 1e6:.1f}"


def write(checkpoint: tf.train.Checkpoint, prefix: str) -> str:
  """`checkpoint.write(prefix)`, never cut short by Ctrl-C or SIGTERM (held until it ends)."""
  with interruptible.uninterrupted():
    return checkpoint.write(prefix)


@contextlib.contextmanager
def quiet_restore_warnings():
  """Silences TensorFlow's per-value restore warnings ("Value in checkpoint could not be found",
  up to hundreds of lines when a restore fails part-way) while a restore is tried: they are logged
  when the failed restore's status is garbage-collected, so after a failure that is done here too
  (the caller reports the failure in one line). A restore that succeeds marks its status
  `expect_partial()` itself: a full garbage collection per restore cost seconds once a process
  had traced a few models (benchmarks/results/test_suite.md)."""
  with progress.quiet_logger("tensorflow", std_logging.ERROR):
    try:
      yield
    except BaseException:
      gc.collect()
      raise
