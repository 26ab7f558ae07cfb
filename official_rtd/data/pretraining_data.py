"""Builds pre-training TFRecords from a text corpus: tokenize, pack, statically mask N×, write.

The input is cut into independent work units (`corpus.TextRange`: a byte range of a file that owns
whole documents; `tfds_corpus.TfdsSlice`: a run of a TFDS split's examples). Each unit is
tokenized, packed and masked by one worker with random states derived from `(seed, unit key)`
only, so the set of records is identical for a seed whatever the number of workers, and whether
the local worker pool or an Apache Beam runner (`beam_pipeline`) does the work.
"""
import collections
import dataclasses
import hashlib
import os
import random
import time
from typing import Callable, List, Optional

import tensorflow as tf

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import data_config
from official_rtd.data import example_encoder
from official_rtd.data import packing
from official_rtd.data import paths
from official_rtd.data import records
from official_rtd.data import sentences
from official_rtd.data import tfds_corpus
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.data import worker_pool
from official_rtd.ops import masking
from official_rtd.utils import progress as progress_lib
from official_rtd.utils import run_lock
from official_rtd.utils import textio

DataConfig = data_config.DataConfig
ConfigError = data_config.ConfigError
FORMAT_VERSION = 1


COUNT_FIELDS = ("examples", "records", "tokens_in", "tokens_kept", "candidates",
                "masked_positions", "documents", "lines_skipped", "text_bytes", "sentences",
                "sentences_cut")


@dataclasses.dataclass
class ChunkResult:
  key: str
  records: List[bytes]
  examples: int = 0
  tokens_in: int = 0
  tokens_kept: int = 0
  candidates: int = 0        # maskable positions over all written (duplicated) examples
  masked_positions: int = 0
  documents: int = 0
  lines_skipped: int = 0
  text_bytes: int = 0
  sentences: int = 0         # --packing=sentences: sentences read
  sentences_cut: int = 0     # ... longer than --max_seq_length - 2 pieces, cut into pieces

  def counts(self) -> collections.Counter:
    """The chunk's contribution to the sidecar's counts (summed over chunks by both paths)."""
    values = dataclasses.asdict(self)
    values["records"] = len(self.records)
    return collections.Counter({name: values[name] for name in COUNT_FIELDS})


def _seed(*parts) -> int:
  """A non-negative int64 from a stable hash of `parts` (unlike `hash`, equal in every process)."""
  digest = hashlib.sha256("/".join(map(str, parts)).encode("utf-8")).digest()
  return int.from_bytes(digest[:8], "little") >> 1


class ChunkProcessor:
  """Tokenizes, packs and masks one chunk; one instance per worker process."""

  def __init__(self, config: DataConfig):
    self.config = config
    self.vocab = vocab_lib.load_vocab(config.vocab_file)
    lower = (config.do_lower_case if config.do_lower_case is not None
             else self.vocab.default_lower_case())  # unset: as the vocabulary implies
    self.tokenizer = tokenizer_lib.for_vocab(self.vocab, lower, config.tokenizer)
    self.tables = masking.TokenTables.from_vocab(self.vocab)
    self._is_continuation = self.vocab.is_continuation()
    # One graph for every chunk (any number of rows): half the time of running the ops eagerly.
    self._mask = tf.function(
        lambda ids, seed: masking.mask_tokens(ids, config.masking_config, self.tables, seed),
        input_signature=[tf.TensorSpec([None, config.max_seq_length], tf.int64),
                         tf.TensorSpec([2], tf.int64)], autograph=False)

  def __call__(self, chunk: corpus_lib.Chunk) -> ChunkResult:
    cfg = self.config
    rng = random.Random(f"{cfg.seed}/{chunk.key}")
    lines = chunk.lines
    if cfg.packing == "sentences":
      lines = sentences.split_lines(lines, corpus_lib.DOCUMENT_BREAK)
    texts = [line for line in lines if line != corpus_lib.DOCUMENT_BREAK]
    token_lists = iter(self.tokenizer.tokenize_to_lists(texts))
    builder = packing.ExampleBuilder(
        cfg.max_seq_length, rng, cfg.short_seq_prob, cfg.single_segment_prob,
        cfg.packing, self._is_continuation, cfg.sentences_per_example)
    examples = []
    for line in lines:
      if line == corpus_lib.DOCUMENT_BREAK:
        examples += builder.end_document()
      else:
        examples += builder.add_line(next(token_lists))
    examples += builder.end_document()

    result = ChunkResult(chunk.key, [], len(examples), builder.stats.tokens_in,
                         builder.stats.tokens_kept, documents=chunk.documents,
                         lines_skipped=chunk.lines_skipped, text_bytes=chunk.num_bytes,
                         sentences=builder.stats.sentences,
                         sentences_cut=builder.stats.sentences_cut)
    if not examples:
      return result
    features = packing.to_features(examples, cfg.max_seq_length, self.vocab.cls_id,
                                   self.vocab.sep_id, self.vocab.pad_id)
    candidates = int((~self.tables.is_special[features["input_word_ids"]]).sum())
    if cfg.dupe_factor == 0:
      result.records = example_encoder.serialize_examples(features)
    for dupe in range(cfg.dupe_factor):
      seed = tf.constant([cfg.seed, _seed(cfg.seed, chunk.key, dupe)], tf.int64)
      masked = self._mask(features["input_word_ids"], seed)
      masked = {k: v.numpy() for k, v in masked.items()}
      result.records += example_encoder.serialize_examples(dict(features, **masked))
      result.candidates += candidates
      result.masked_positions += int(masked["masked_lm_weights"].sum())
    if cfg.dupe_factor > 1:
      rng.shuffle(result.records)  # the N copies of an example must not sit side by side
    return result

  def process_unit(self, unit, warn: Callable[[str], None] = print) -> ChunkResult:
    return self(unit.read(self.config.on_decode_error, warn))


_WORKER: Optional[ChunkProcessor] = None


def _init_worker(config: DataConfig):
  global _WORKER
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  _WORKER = ChunkProcessor(config)


def _process_in_worker(unit):
  warnings = []
  result = _WORKER.process_unit(unit, warn=warnings.append)
  return result, warnings


class Progress:
  """Throttled progress lines: work units done, MB/s, examples written and ETA."""

  def __init__(self, total_units: int, log: Callable[[str], None], every_s: float = 10.0):
    self.total_units, self._log = max(total_units, 1), log
    self._throttle = progress_lib.Throttle(self.total_units, every_s)

  def update(self, done_units: int, done_bytes: int, examples: int, force: bool = False):
    if not self._throttle.due(force):
      return
    self._log(f"{done_units}/{self.total_units} chunks "
              f"({100.0 * done_units / self.total_units:.1f}%), {done_bytes / 1e6:.1f} MB of "
              f"text at {self._throttle.rate(done_bytes) / 1e6:.2f} MB/s, {examples} examples "
              f"written, ETA {self._throttle.eta(done_units)}")


@dataclasses.dataclass
class InputPlan:
  """The work units of a run and what the sidecar says of its input."""
  units: list
  description: str
  sources: List[str]    # input files, or the TFDS dataset
  input_bytes: int      # the files' sizes; for TFDS, the split's recorded size


def plan_input(config: DataConfig) -> InputPlan:
  """Lists the work units.

  Raises:
    corpus_lib.CorpusError: missing input files, or an unknown / unprepared TFDS dataset.
  """
  if config.input_tfds:
    units = tfds_corpus.plan_units(config.input_tfds, config.tfds_data_dir or None,
                                   config.tfds_split, config.tfds_text_key, config.chunk_bytes)
    info = tfds_corpus.load_builder(config.input_tfds, config.tfds_data_dir or None).info
    size = info.splits[config.tfds_split].num_bytes
    return InputPlan(_ordered(units, config), f"TFDS {config.input_tfds} {config.tfds_split} "
                     f"({info.splits[config.tfds_split].num_examples} documents, "
                     f"{size / 1e6:.1f} MB)", [config.input_tfds], size)
  files = corpus_lib.expand_input_files(config.input_files)
  size = sum(paths.getsize(f) for f in files)
  return InputPlan(_ordered(corpus_lib.plan_text_units(files, config.chunk_bytes), config),
                   f"{len(files)} file(s), {size / 1e6:.1f} MB", files, size)


def _ordered(units: list, config: DataConfig) -> list:
  """The order in which the units' records are written: shuffled by the seed (`shuffle_chunks`),
  or corpus order. Records are written round-robin over the shards in this order and the input
  pipeline reads each shard front to back through a shuffle buffer of a few chunks' records, so
  corpus order would feed a run the first files first (a mixed corpus source by source)."""
  if config.shuffle_chunks:
    units = list(units)
    random.Random(f"{config.seed}/chunk order").shuffle(units)
  return units


def create_pretraining_data(config: DataConfig, log: Callable[[str], None] = print) -> dict:
  """Runs the whole pipeline, locally or on Beam (`config.runner`); returns the sidecar it wrote.

  Raises:
    ConfigError, vocab_lib.VocabError, corpus_lib.CorpusError: before anything is written for bad
      settings, vocab or input; an empty corpus or undecodable line found while streaming raises
      too, and the previous output directory contents are left untouched.
  """
  config.validate()
  vocab = vocab_lib.load_vocab(config.vocab_file)
  if config.do_lower_case is None:  # unset: follow the vocabulary
    config = dataclasses.replace(config, do_lower_case=vocab.default_lower_case())
    case = "lower-casing" if config.do_lower_case else "keeping the case of"
    log(f"create_pretraining_data: {case} the text, as {vocab.path} ({vocab.kind}) implies "
        "(set --[no]do_lower_case to choose)")
  vocab.check_casing(config.do_lower_case)
  check_replaced_records(config, vocab)
  plan = plan_input(config)
  # One run at a time into output_dir; a failed run leaves it as it was (or absent).
  with run_lock.holding(config.output_dir, "--output_dir", log=log,
                        keep=lambda d: os.path.isfile(os.path.join(d, records.SIDECAR_NAME))):
    return _create(config, vocab, plan, log)


# Settings that do not change the records (how the work is spread).
NOT_RECORDED = ("overwrite", "num_workers", "runner", "beam_pipeline_options", "chunk_bytes")


def check_replaced_records(config: DataConfig, vocab) -> None:
  """Refuses, without `--overwrite`, to replace records in `output_dir` that other settings or
  another vocabulary made (runs trained on them would no longer match); the same settings redo
  them (a killed run's command, or the same output again)."""
  path = os.path.join(config.output_dir, records.SIDECAR_NAME)
  if config.overwrite or not os.path.isfile(path):
    return
  old = textio.load_json(path)
  new = dict(dataclasses.asdict(config), input_files=list(config.input_files))
  changed = [f"--{k} {old.get('flags', {}).get(k)!r} → {new[k]!r}" for k in sorted(new)
             if k not in NOT_RECORDED and old.get("flags", {}).get(k) != new[k]]
  if old.get("vocab", {}).get("sha256") != vocab.sha256:
    changed.append(f"the vocabulary ({vocab.path}) differs")
  if changed:
    raise ValueError(
        f"--output_dir={config.output_dir} holds records made with other settings "
        f"({'; '.join(changed[:4])}{'; ...' if len(changed) > 4 else ''}): nothing was written; "
        "give a new --output_dir, or --overwrite to replace them")


def _create(config: DataConfig, vocab, plan: "InputPlan", log) -> dict:
  """The pipeline of `create_pretraining_data` once its inputs are checked."""
  start = time.time()
  if config.runner == "local":
    num_workers = worker_pool.num_workers(config.num_workers)
    log(f"create_pretraining_data: {plan.description} in {len(plan.units)} chunk(s), "
        f"{num_workers} worker(s), dupe_factor {config.dupe_factor}")
    totals, writer = _run_local(config, plan, num_workers, log)
  else:
    from official_rtd.data import beam_pipeline  # pylint: disable=g-import-not-at-top
    log(f"create_pretraining_data: {plan.description} in {len(plan.units)} chunk(s) on Beam's "
        f"{config.runner}, dupe_factor {config.dupe_factor}")
    totals, writer = beam_pipeline.run(config, plan.units, ChunkProcessor, log)
  try:
    if totals["examples"] == 0:
      raise corpus_lib.CorpusError(
          f"the corpus is empty: no text in {', '.join(plan.sources[:3])}"
          f"{' ...' if len(plan.sources) > 3 else ''}")
    seconds = time.time() - start
    sidecar = _sidecar(config, vocab, plan, totals, seconds)
    writer.commit(sidecar)
  except BaseException:
    writer.abort()
    raise
  counts = sidecar["counts"]
  log(f"wrote {counts['examples']} examples ({counts['unique_examples']} unique) to "
      f"{config.output_dir} in {seconds:.1f}s "
      f"({plan.input_bytes / 1e6 / max(seconds, 1e-9):.2f} MB/s); "
      f"{counts['percent_truncated']:.2f}% of word pieces truncated")
  if counts.get("sentences_cut"):
    log(f"{counts['sentences_cut']} of {counts['sentences']} sentences "
        f"({100.0 * counts['sentences_cut'] / counts['sentences']:.2f}%) were longer than "
        f"--max_seq_length={config.max_seq_length} minus [CLS] and [SEP] and were cut into "
        "pieces (each its own example); a larger --max_seq_length keeps them whole")
  return sidecar


def _run_local(config: DataConfig, plan: InputPlan, num_workers: int, log):
  """Processes the units with the worker pool, writing round-robin over the shards in unit order.
  Returns the summed counts and the (uncommitted) writer."""
  totals = collections.Counter()
  progress = Progress(len(plan.units), log)
  writer = records.ShardedWriter(config.output_dir, config.num_shards,
                                 "GZIP" if config.gzip else "")
  try:
    for done, (result, warnings) in enumerate(_map_ordered(plan.units, config, num_workers), 1):
      for warning in warnings:
        log(warning)
      writer.write(result.records)
      totals.update(result.counts())
      progress.update(done, totals["text_bytes"], totals["records"])
  except BaseException:
    writer.abort()
    raise
  progress.update(len(plan.units), totals["text_bytes"], totals["records"], force=True)
  return totals, writer


def _map_ordered(units, config: DataConfig, num_workers: int):
  """Yields `(ChunkResult, warnings)` in unit order; at most 2 units per worker are in flight."""
  if num_workers == 1:
    processor = ChunkProcessor(config)
    for unit in units:
      warnings = []
      yield processor.process_unit(unit, warn=warnings.append), warnings
    return
  context = worker_pool.context()
  with context.Pool(num_workers, initializer=_init_worker, initargs=(config,)) as pool:
    pending = collections.deque()
    for unit in units:
      pending.append(pool.apply_async(_process_in_worker, (unit,)))
      if len(pending) >= 2 * num_workers:
        yield pending.popleft().get()
    while pending:
      yield pending.popleft().get()


def _sidecar(config, vocab, plan: InputPlan, totals, seconds) -> dict:
  masked = config.dupe_factor > 0
  return {
      "format_version": FORMAT_VERSION,
      "created_by": "official_rtd create_pretraining_data",
      "flags": dict(dataclasses.asdict(config), input_files=list(config.input_files)),
      "vocab": {"file": os.path.abspath(vocab.path), "sha256": vocab.sha256, "size": vocab.size,
                "special_ids": {vocab.token_of(role): vocab.role_ids[role]
                                for role in vocab_lib.ROLES},
                "kind": vocab.kind,
                "do_lower_case": config.do_lower_case},
      "max_seq_length": config.max_seq_length,
      "masked": masked,
      "max_predictions_per_seq": config.max_predictions_per_seq if masked else None,
      "dupe_factor": config.dupe_factor,
      "counts": {
          "input_files": 0 if config.input_tfds else len(plan.sources),
          "input_bytes": plan.input_bytes,
          "chunks": len(plan.units),
          "documents": totals["documents"],
          "lines_skipped": totals["lines_skipped"],
          "unique_examples": totals["examples"],
          "examples": totals["records"],
          "tokens": totals["tokens_kept"],
          "tokens_truncated": totals["tokens_in"] - totals["tokens_kept"],
          "percent_truncated": 100.0 * (totals["tokens_in"] - totals["tokens_kept"])
                               / max(totals["tokens_in"], 1),
          "masked_positions": totals["masked_positions"],
          "mask_rate": totals["masked_positions"] / max(totals["candidates"], 1),
          **({"sentences": totals["sentences"], "sentences_cut": totals["sentences_cut"]}
             if config.packing == "sentences" else {}),
      },
      "seconds": round(seconds, 2),
  }


def vocab_and_records(out: str, corpus: List[str], vocab_size: int,
                      log: Callable[[str], None] = print) -> str:
  """The quickstart's data: `<out>/vocab.txt` learned from `corpus` and `<out>/records` (64 tokens,
  10 predictions, dupe 10), each built only if absent; returns the records directory."""
  from official_rtd.data import build_vocab  # pylint: disable=g-import-not-at-top
  vocab_file = os.path.join(out, "vocab.txt")
  records_dir = os.path.join(out, "records")
  if not os.path.exists(vocab_file):
    build_vocab.build_vocab(corpus, vocab_file, vocab_size=vocab_size, log=log)
  if not os.path.exists(os.path.join(records_dir, records.SIDECAR_NAME)):
    create_pretraining_data(DataConfig(
        input_files=tuple(corpus), vocab_file=vocab_file, output_dir=records_dir,
        max_seq_length=64, max_predictions_per_seq=10, dupe_factor=10, num_shards=4), log=log)
  return records_dir
