"""One run per output directory: an advisory lock, and a failed start that leaves no trace.

`holding(directory)` wraps a run that writes into `directory` (pre-training and fine-tuning
`--model_dir`, CVT, `create_pretraining_data --output_dir`):

* it takes `<directory>/.lock` (an `flock` on the file, which records the holder's pid, host, start
  time and command). A second run into the same directory is refused with one line naming the
  holder; a lock file left by a run that died (its `flock` is free: the process is gone) is taken
  over with a note. A lock recorded by another host cannot be checked from here and is refused,
  naming the file to delete if that run is over.
* if the run fails before it has anything worth keeping (`keep(directory)` is False, e.g. no
  checkpoint yet), every file or folder it created in `directory` is removed, and `directory`
  itself if the run created it: the directory is left as the run found it (or absent), so a
  corrected command starts cleanly.

The lock file is removed when the run ends, however it ends.
"""
import contextlib
import datetime
import fcntl
import json
import os
import shutil
import socket
import sys
from typing import Callable, Optional

LOCK_NAME = ".lock"


class DirectoryLockedError(ValueError):
  """The output directory is in use by another run."""


def _holder_text(holder: dict) -> str:
  command = holder.get("command", "")
  return (f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, since "
          f"{holder.get('started', '?')}" + (f": {command[:120]}" if command else ""))


def _read_holder(fd: int) -> dict:
  os.lseek(fd, 0, os.SEEK_SET)
  text = os.read(fd, 1 << 16).decode("utf-8", "replace").strip()
  if not text:
    return {}
  try:
    holder = json.loads(text)
  except json.JSONDecodeError:
    return {"pid": "?", "host": "?", "started": "?"}
  return holder if isinstance(holder, dict) else {}


def acquire(directory: str, flag: str = "--model_dir", log: Callable[[str], None] = print) -> int:
  """Takes `<directory>/.lock` (the directory must exist); returns its open descriptor.

  Raises:
    DirectoryLockedError: another live run holds it (or a run on another host recorded it).
  """
  path = os.path.join(directory, LOCK_NAME)
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    holder = _read_holder(fd)
    os.close(fd)
    raise DirectoryLockedError(
        f"{flag}={directory} is in use by another run ({_holder_text(holder)}); wait for it to "
        f"end or give another {flag}") from None
  holder = _read_holder(fd)
  host = socket.gethostname()
  if holder and holder.get("host") not in (host, "?"):
    os.close(fd)
    raise DirectoryLockedError(
        f"{flag}={directory} is locked by a run on another machine ({_holder_text(holder)}); "
        f"if that run is over, delete {path} and run again")
  if holder:
    log(f"{flag}={directory}: took over the lock of a run that is no longer running "
        f"({_holder_text(holder)})")
  record = {"pid": os.getpid(), "host": host,
            "started": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join(os.path.basename(a) if i == 0 else a
                                for i, a in enumerate(sys.argv))}
  os.ftruncate(fd, 0)
  os.lseek(fd, 0, os.SEEK_SET)
  os.write(fd, (json.dumps(record) + "\n").encode("utf-8"))
  os.fsync(fd)
  return fd


def release(directory: str, fd: int) -> None:
  """Removes the lock file and frees the lock."""
  with contextlib.suppress(FileNotFoundError):
    os.remove(os.path.join(directory, LOCK_NAME))
  os.close(fd)


@contextlib.contextmanager
def holding(directory: str, flag: str = "--model_dir",
            keep: Optional[Callable[[str], bool]] = None, log: Callable[[str], None] = print):
  """Holds `directory`'s lock for the body (see the module docstring); on a failure, removes what
  the body created unless `keep(directory)` says it holds something worth keeping."""
  if "://" in directory:  # object stores have no file locks: nothing to hold
    yield
    return
  created = not os.path.exists(directory)
  os.makedirs(directory, exist_ok=True)
  before = set(os.listdir(directory))
  fd = acquire(directory, flag, log)
  try:
    yield
  except BaseException:
    if keep is None or not keep(directory):
      for name in set(os.listdir(directory)) - before - {LOCK_NAME}:
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
          shutil.rmtree(path, ignore_errors=True)
        else:
          with contextlib.suppress(OSError):
            os.remove(path)
    raise
  finally:
    release(directory, fd)
    if created and os.path.isdir(directory) and not os.listdir(directory):
      os.rmdir(directory)


def is_lock_file(name: str) -> bool:
  """Whether a directory entry is the lock (ignored when a directory's contents are judged)."""
  return name == LOCK_NAME
