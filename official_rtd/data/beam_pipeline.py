"""`create_pretraining_data` on Apache Beam (DirectRunner here; Dataflow, Flink or Spark at scale).

The stages are the local tool's own functions, not a second implementation:

  work units (corpus.TextRange / tfds_corpus.TfdsSlice, planned by the launching process)
    | Reshuffle                         spread the units over the workers
    | ParDo(_ProcessUnit)               unit.read → ChunkProcessor (tokenize, pack, mask
                                        --dupe_factor times, encode); the unit's records go to a
                                        staging file, its counts to a side output
    | GroupByKey(unit index % num_shards)   only file names are shuffled, never records
    | ParDo(_WriteShard)                concatenate the shard's unit files in unit order

Every unit is processed with the same random states as in the local tool, so for a seed the output
holds exactly the same records (as a multiset). Shard assignment differs: the local tool deals
records round-robin over the shards, here shard i holds the records of units i, i + N, i + 2N, ...
(N = --num_shards), so shards differ in size by up to one unit (--chunk_bytes of text) and, with
fewer units than shards, some shards are empty. Memory stays flat in corpus size: a worker holds
one unit's records at a time and the shuffle carries only file names.

Output is staged under `<output_dir>/.tmp-<pid>/` and moved into place by the launching process
after the pipeline succeeded, sidecar last (`records.commit_staged_shards`), as locally.
"""
import collections
import contextlib
import errno
import gzip
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from typing import Callable, List, Tuple

from absl import logging

try:
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.options import pipeline_options as beam_options
except ImportError as e:  # pragma: no cover - exercised only without the extra
  raise ImportError("a Beam --runner needs Apache Beam: pip install -e '.[beam]'") from e

import tensorflow as tf

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import paths
from official_rtd.data import records
from official_rtd.data import worker_pool
from official_rtd.utils import progress

_UNITS_DIR = "units"
_COUNTS_NAME = "counts.json"
_COPY_BLOCK = 16 << 20


class BeamOptionsError(ValueError):
  """`--beam_pipeline_options` that Beam does not know."""


def pipeline_options(config) -> beam_options.PipelineOptions:
  """`--beam_pipeline_options` plus `--runner`; the DirectRunner defaults to one process per
  worker (`--num_workers`, 0: one per core) unless the options say otherwise."""
  args = shlex.split(config.beam_pipeline_options)  # DataConfig.validate refused a --runner there
  args.append(f"--runner={config.runner}")
  if config.runner == "DirectRunner" and not any(a.startswith("--direct_num_workers")
                                                 for a in args):
    workers = worker_pool.num_workers(config.num_workers)
    args.append(f"--direct_num_workers={workers}")
    if workers > 1 and not any(a.startswith("--direct_running_mode") for a in args):
      args.append("--direct_running_mode=multi_processing")
  if not any(a.startswith("--default_sdk_harness_log_level") for a in args):
    # The workers log each failure with its traceback several times; the tool reports its first
    # cause once (`first_cause`).
    args.append("--default_sdk_harness_log_level=CRITICAL")
  options = beam_options.PipelineOptions(args)
  unknown = sorted(set(options.get_all_options(retain_unknown_options=True))
                   - set(options.get_all_options()))
  if unknown:  # Beam itself only logs "Discarding unparseable args" and runs on
    raise BeamOptionsError(
        f"--beam_pipeline_options: Beam has no option {', '.join('--' + u for u in unknown)} "
        "(a typo, or a runner's options package that is not installed?)")
  return options


class _ProcessUnit(beam.DoFn):
  """(unit index, unit) → its records in a staging file; yields (shard, (index, file)).
  `processor_class` (`pretraining_data.ChunkProcessor`) turns a unit's text into records."""

  def __init__(self, config, staging: str, processor_class):
    self._config, self._staging, self._processor_class = config, staging, processor_class
    self._processor = None
    self._units = beam.metrics.Metrics.counter("create_pretraining_data", "chunks")
    self._records = beam.metrics.Metrics.counter("create_pretraining_data", "records")
    self._bytes = beam.metrics.Metrics.counter("create_pretraining_data", "text_bytes")
    self._last_log = 0.0

  def setup(self):
    try:  # one thread per worker process, as in the local pool (too late once TF has run ops)
      tf.config.threading.set_intra_op_parallelism_threads(1)
      tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
      pass
    self._processor = self._processor_class(self._config)

  def process(self, indexed_unit):
    index, unit = indexed_unit
    result = self._processor.process_unit(unit, warn=logging.warning)
    path = os.path.join(self._staging, _UNITS_DIR, f"{index:010d}.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
      for record in result.records:
        writer.write(record)
    self._units.inc()
    self._records.inc(len(result.records))
    self._bytes.inc(result.text_bytes)
    if time.time() - self._last_log > 10.0:
      self._last_log = time.time()
      logging.info("create_pretraining_data: chunk %s done (%d records)", unit.key,
                   len(result.records))
    yield index % self._config.num_shards, (index, path)
    yield beam.pvalue.TaggedOutput("counts", dict(result.counts()))


class _WriteShard(beam.DoFn):
  """Concatenates a shard's unit files (TFRecord framing is per record) in unit order."""

  def __init__(self, staging: str, names: List[str], compression: str):
    self._staging, self._names, self._compression = staging, names, compression

  def process(self, shard_and_parts):
    shard, parts = shard_and_parts
    path = os.path.join(self._staging, self._names[shard])
    with paths.open_binary(path, "wb") as raw:
      out = gzip.GzipFile(fileobj=raw, mode="wb") if self._compression == "GZIP" else raw
      for _, part in sorted(parts):
        with paths.open_binary(part) as f:
          for block in iter(lambda f=f: f.read(_COPY_BLOCK), b""):
            out.write(block)
      if out is not raw:
        out.close()
    for _, part in parts:
      tf.io.gfile.remove(part)
    yield shard


def _sum_counts(counts) -> dict:
  total = collections.Counter()
  for c in counts:
    total.update(c)
  return dict(total)


def _write_json(obj, path: str):
  with paths.open_binary(path, "wb") as f:
    f.write(json.dumps(obj, sort_keys=True).encode("utf-8"))


_WORKER_ERROR = re.compile(r"(?:\w+\.)*(\w+(?:Error|Exception)): (.+?)(?: \[while running .*\])?$",
                           re.M)


def first_cause(error: Exception, workers_log: str = "") -> Exception:
  """The error a pipeline failure reports as one line: its first cause, found in Beam's wrapped
  message. A worker's input error stays a `CorpusError`; a full disk or another OS error becomes
  an `OSError` naming the file; anything else keeps Beam's error (a defect: its traceback).
  `workers_log`: where the local worker processes' own output went, named in the line."""
  text = str(error)
  where = f"a Beam worker; its output: {workers_log}" if workers_log else "a Beam worker"
  found = re.search(r"CorpusError: (.*)", text)
  if found or isinstance(error, corpus_lib.CorpusError):  # a worker's input error, as the local
    reason = re.sub(r" \[while running .*\]$", "", (found.group(1) if found else text).strip())
    return corpus_lib.CorpusError(f"{reason} ({where})")  # tool reports it
  for name, message in _WORKER_ERROR.findall(text):
    path_and_reason = re.match(r"(/\S+?); (.*)", message)
    if "No space left on device" in message or name in ("OSError", "PermissionError"):
      number = errno.ENOSPC if "No space left" in message else errno.EIO
      if path_and_reason:
        return OSError(number, f"{path_and_reason.group(2)} ({where})", path_and_reason.group(1))
      return OSError(number, f"{message} ({where})")
  return error


def worker_processes(options: beam_options.PipelineOptions) -> bool:
  """Whether the DirectRunner runs its workers as processes of this machine (which inherit its
  stderr). In one process the tool's own warnings (e.g. skipped undecodable lines) are printed
  as they come, so stderr is not redirected."""
  direct = options.view_as(beam_options.DirectOptions)
  return (options.view_as(beam_options.StandardOptions).runner == "DirectRunner"
          and direct.direct_running_mode == "multi_processing"
          and (direct.direct_num_workers or 1) > 1)


@contextlib.contextmanager
def local_workers_contained(redirect_stderr: bool):
  """While a DirectRunner pipeline runs, Beam's temporary folders go to one folder of ours,
  removed afterwards (else every run left an empty `beam-temp*` folder in the temp directory:
  Beam removes it at the interpreter's exit, which the tools skip); with `redirect_stderr` (the
  workers are processes, `worker_processes`) this process's stderr, which they inherit, goes to
  a log file (else every worker failure printed its traceback above the tool's one line). Yields
  the log's path ("" without it); the log is kept when the block raises (the line names it),
  removed otherwise (on success the workers print only import notices: their log level is
  CRITICAL)."""
  temp_root = tempfile.mkdtemp(prefix="create_pretraining_data_beam_")
  saved_tempdir, log_path, saved_stderr = tempfile.tempdir, "", None
  if redirect_stderr:
    log_fd, log_path = tempfile.mkstemp(prefix="create_pretraining_data_workers_", suffix=".log")
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    os.dup2(log_fd, 2)
    os.close(log_fd)
  tempfile.tempdir = temp_root
  failed = False
  try:
    yield log_path
  except BaseException:
    failed = True
    raise
  finally:
    if saved_stderr is not None:
      sys.stderr.flush()
      os.dup2(saved_stderr, 2)
      os.close(saved_stderr)
      if not failed:
        os.remove(log_path)
    tempfile.tempdir = saved_tempdir
    shutil.rmtree(temp_root, ignore_errors=True)


class StagedOutput:
  """The pipeline's staged shards; `commit` / `abort` as `records.ShardedWriter`'s."""

  def __init__(self, output_dir: str, staging: str, names: List[str], compression: str):
    self.output_dir, self.staging, self.names, self.compression = (
        output_dir, staging, names, compression)

  def commit(self, sidecar: dict):
    records.commit_staged_shards(self.output_dir, self.staging, self.names, self.compression,
                                 sidecar)

  def abort(self):
    records.remove_staging_dir(self.staging)


def run(config, units: list, processor_class, log: Callable[[str], None] = print
        ) -> Tuple[collections.Counter, StagedOutput]:
  """Runs the pipeline over `units` (`config`: a `pretraining_data.DataConfig`; `processor_class`
  its `ChunkProcessor`, passed in so this module does not import the one that calls it); returns
  the summed counts and the staged (uncommitted) shards.

  Raises:
    corpus_lib.CorpusError: a worker found undecodable text (the staging directory is removed).
  """
  compression = "GZIP" if config.gzip else ""
  names = [records.shard_name(i, config.num_shards, compression)
           for i in range(config.num_shards)]
  options = pipeline_options(config)
  staging = records.make_staging_dir(config.output_dir)
  output = StagedOutput(config.output_dir, staging, names, compression)
  try:
    tf.io.gfile.makedirs(os.path.join(staging, _UNITS_DIR))
    pipeline = beam.Pipeline(options=options)
    processed = (pipeline
                 | "Units" >> beam.Create(list(enumerate(units)))
                 | "Spread" >> beam.Reshuffle()
                 | "Process" >> beam.ParDo(
                     _ProcessUnit(config, staging, processor_class)).with_outputs(
                         "counts", main="parts"))
    _ = (processed.parts
         | "ByShard" >> beam.GroupByKey()
         | "WriteShards" >> beam.ParDo(_WriteShard(staging, names, compression)))
    _ = (processed.counts
         | "SumCounts" >> beam.CombineGlobally(_sum_counts)
         | "WriteCounts" >> beam.Map(_write_json, os.path.join(staging, _COUNTS_NAME)))
    # Beam's runners log every worker failure several times with its traceback (364 lines for
    # one full disk); a failure is reported once, by its first cause, below.
    contained = (local_workers_contained(worker_processes(options))
                 if config.runner == "DirectRunner" else contextlib.nullcontext(""))
    with contained as workers_log:
      try:
        with progress.quiet_logger("apache_beam"):
          state = pipeline.run().wait_until_finish()
      except Exception as e:  # pylint: disable=broad-except
        raise first_cause(e, workers_log) from None
    if state not in (None, beam.runners.runner.PipelineState.DONE):
      raise RuntimeError(f"the Beam pipeline ended in state {state}")
    with paths.open_binary(os.path.join(staging, _COUNTS_NAME)) as f:
      totals = collections.Counter(json.loads(f.read().decode("utf-8")))
    for name in names:  # shards that received no unit (fewer units than shards)
      path = os.path.join(staging, name)
      if not tf.io.gfile.exists(path):
        with paths.open_binary(path, "wb") as f:
          if compression == "GZIP":
            gzip.GzipFile(fileobj=f, mode="wb").close()
    tf.io.gfile.rmtree(os.path.join(staging, _UNITS_DIR))
    log(f"Beam {config.runner}: {len(units)} chunk(s), {totals['records']} records")
  except BaseException:
    output.abort()
    raise
  return totals, output
