"""Worker processes for `create_pretraining_data`, forked from a server that imported TF once.

TensorFlow is not fork-safe once it has run ops, and a spawned worker re-imports it (~7 s of CPU
here). Workers are instead forked from a fork server that has imported only the data module, so
TensorFlow is imported once for all workers; `prestart` lets that import run alongside the
caller's own. This module imports no TensorFlow itself.
"""
import multiprocessing
import multiprocessing.forkserver
import os

_PRELOAD = ["official_rtd.data.pretraining_data"]


def num_workers(requested: int) -> int:
  """`requested`, or one per CPU core for 0."""
  return requested or os.cpu_count() or 1


def context():
  ctx = multiprocessing.get_context("forkserver")
  ctx.set_forkserver_preload(_PRELOAD)
  return ctx


def prestart(requested: int):
  """Starts the fork server now (when workers will be used) so that it imports TensorFlow while
  the caller does too."""
  if num_workers(requested) > 1:
    context()
    multiprocessing.forkserver.ensure_running()
