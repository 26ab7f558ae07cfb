"""Pre-training TFRecords: feature names, sharded atomic writing and the JSON sidecar.

Layout of an output directory:
  pretrain-00000-of-00008.tfrecord[.gz] ...  tf.train.Example shards
  pretraining_data.json                      the sidecar (flags, vocab hash, counts)

Shards are written under a hidden temporary directory and moved into place only when the whole run
succeeded; the sidecar is removed first and written last, so a directory whose sidecar exists is
complete, and an interrupted run leaves the previous output (or nothing) but never a partial shard
under a final name.
"""
import contextlib
import errno
import glob
import json
import os
import re
import shutil
from typing import Dict, List, Optional

import tensorflow as tf

from official_rtd.utils import textio

SIDECAR_NAME = "pretraining_data.json"
SHARD_PREFIX = "pretrain"
_TMP_PREFIX = ".tmp-"
_SHARD_RE = re.compile(rf"^{SHARD_PREFIX}-\d{{5}}-of-\d{{5}}\.tfrecord(\.gz)?$")

SEQUENCE_FEATURES = ("input_word_ids", "input_mask", "input_type_ids")
MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
FLOAT_FEATURES = ("masked_lm_weights",)


class RecordsError(ValueError):
  """A records directory that cannot be used."""


def shard_name(index: int, num_shards: int, compression: str) -> str:
  suffix = ".gz" if compression == "GZIP" else ""
  return f"{SHARD_PREFIX}-{index:05d}-of-{num_shards:05d}.tfrecord{suffix}"


def feature_spec(seq_length: int, max_predictions_per_seq: Optional[int]
                 ) -> Dict[str, tf.io.FixedLenFeature]:
  """Parsing spec; `max_predictions_per_seq=None` for unmasked (dynamic-masking) records."""
  spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in SEQUENCE_FEATURES}
  if max_predictions_per_seq is not None:
    spec["masked_lm_positions"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    spec["masked_lm_ids"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
  return spec


class ShardedWriter:
  """Round-robin writer over `num_shards` temporary shards; `commit()` moves them into place."""

  def __init__(self, output_dir: str, num_shards: int, compression: str = ""):
    self.output_dir = output_dir
    self.compression = compression
    self._tmp_dir = make_staging_dir(output_dir)
    self.names = [shard_name(i, num_shards, compression) for i in range(num_shards)]
    self._writers = [tf.io.TFRecordWriter(os.path.join(self._tmp_dir, n), options=compression)
                     for n in self.names]
    self._next = 0

  def write(self, records: List[bytes]):
    """Appends `records` round-robin over the shards, continuing where the last call stopped."""
    num_shards = len(self._writers)
    with writing_to(self.output_dir):
      for offset in range(min(num_shards, len(records))):
        writer = self._writers[(self._next + offset) % num_shards]
        for record in records[offset::num_shards]:
          writer.write(record)
    self._next = (self._next + len(records)) % num_shards

  def commit(self, sidecar: dict):
    with writing_to(self.output_dir):
      for w in self._writers:
        w.close()
    commit_staged_shards(self.output_dir, self._tmp_dir, self.names, self.compression, sidecar)

  def abort(self):
    """Removes the staged shards (also when closing them fails, e.g. on a full disk)."""
    for w in self._writers:
      try:
        w.close()
      except (OSError, tf.errors.OpError):
        pass
    remove_staging_dir(self._tmp_dir)


@contextlib.contextmanager
def writing_to(output_dir: str):
  """A TensorFlow write error (a full disk: `ResourceExhaustedError` / `UnknownError`) as an
  `OSError` naming `output_dir`, one line."""
  try:
    yield
  except tf.errors.OpError as e:
    first = next((line for line in (e.message or "").splitlines() if line.strip()), "")
    number = errno.ENOSPC if "No space left" in first else errno.EIO
    raise OSError(number, f"could not write the records ({first.strip()[:200]})",
                  output_dir) from None


def make_staging_dir(output_dir: str) -> str:
  """Creates `<output_dir>/.tmp-<pid>` for a run's shards (after deleting dead runs' ones)."""
  tf.io.gfile.makedirs(output_dir)
  _remove_dead_runs(output_dir)
  staging = os.path.join(output_dir, f"{_TMP_PREFIX}{os.getpid()}")
  tf.io.gfile.makedirs(staging)
  return staging


def remove_staging_dir(staging: str):
  if tf.io.gfile.exists(staging):
    tf.io.gfile.rmtree(staging)


def commit_staged_shards(output_dir: str, staging: str, names: List[str], compression: str,
                         sidecar: dict):
  """Moves the shards `names` from `staging` into place, removes stale shards of an earlier run
  and writes the sidecar (removed first, written last: its presence means a complete directory).
  Works on local paths and URLs (gs://) alike."""
  gfile = tf.io.gfile
  sidecar_path = os.path.join(output_dir, SIDECAR_NAME)
  if gfile.exists(sidecar_path):
    gfile.remove(sidecar_path)
  for name in names:
    gfile.rename(os.path.join(staging, name), os.path.join(output_dir, name), overwrite=True)
  for name in gfile.listdir(output_dir):
    name = name.rstrip("/")
    if _SHARD_RE.match(name) and name not in names:
      gfile.remove(os.path.join(output_dir, name))
  remove_staging_dir(staging)
  sidecar = dict(sidecar, shards=list(names), compression=compression)
  if "://" in output_dir:
    with gfile.GFile(sidecar_path, "w") as f:
      f.write(json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
  else:
    textio.write_json_atomic(sidecar_path, sidecar)


def _remove_dead_runs(output_dir: str):
  """Deletes temporary directories left by killed local runs (their process no longer exists)."""
  if "://" in output_dir:
    return
  for name in os.listdir(output_dir):
    if name.startswith(_TMP_PREFIX) and name[len(_TMP_PREFIX):].isdigit():
      try:
        os.kill(int(name[len(_TMP_PREFIX):]), 0)
      except ProcessLookupError:
        shutil.rmtree(os.path.join(output_dir, name), ignore_errors=True)
      except PermissionError:
        pass  # alive, someone else's


def read_sidecar(records_dir: str) -> dict:
  """Loads and returns a records directory's sidecar.

  Raises:
    RecordsError: naming the directory when it holds no sidecar (not our output, or an
      interrupted run) or no shards.
  """
  path = os.path.join(records_dir, SIDECAR_NAME)
  if not os.path.isfile(path):
    shards = [n for n in os.listdir(records_dir)] if os.path.isdir(records_dir) else []
    if os.path.isfile(records_dir):
      sidecar_beside = os.path.join(os.path.dirname(records_dir) or ".", SIDECAR_NAME)
      advice = (f"give its directory {os.path.dirname(records_dir) or '.'}"
                if os.path.isfile(sidecar_beside) else
                "records are the directory create_pretraining_data --output_dir wrote (text "
                "becomes records with create_pretraining_data)")
      raise RecordsError(f"{records_dir} is a file, not a records directory: {advice}")
    what = "does not exist" if not os.path.isdir(records_dir) else (
        "is empty" if not shards else f"has no {SIDECAR_NAME} (an interrupted run, or not "
        "written by create_pretraining_data)")
    raise RecordsError(f"records directory {records_dir} {what}")
  sidecar = textio.load_json(path)
  if sidecar.get("counts", {}).get("examples", 0) == 0:
    raise RecordsError(f"records directory {records_dir} holds no examples (see {path})")
  return sidecar


def shard_paths(records_dir: str, sidecar: dict) -> List[str]:
  paths = [os.path.join(records_dir, n) for n in sidecar["shards"]]
  missing = [p for p in paths if not os.path.isfile(p)]
  if missing:
    raise RecordsError(f"records directory {records_dir} lacks shard(s) listed in its sidecar: "
                       f"{', '.join(os.path.basename(p) for p in missing[:3])}")
  return paths


def list_records_dirs(patterns: List[str]) -> List[str]:
  """Expands directory globs (comma lists allowed) into existing records directories."""
  dirs = []
  for pattern in patterns:
    matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    if not matches:
      raise RecordsError(f"input pattern {pattern!r} matches nothing")
    dirs.extend(matches)
  return dirs
