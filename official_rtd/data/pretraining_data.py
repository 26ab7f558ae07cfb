"""Builds pre-training TFRecords from a text corpus: tokenize, pack, statically mask N×, write.

The corpus is streamed in chunks of about `chunk_bytes`; each chunk is tokenized, packed and masked
by one worker process with a random state derived from `(seed, chunk index)` only, and chunks are
written in order, so the output is identical for a seed whatever the number of workers.
"""
import collections
import dataclasses
import os
import random
import time
from typing import Callable, List, Optional

import tensorflow as tf

from official_rtd import progress as progress_lib
from official_rtd.data import corpus as corpus_lib
from official_rtd.data import example_encoder
from official_rtd.data import packing
from official_rtd.data import records
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.data import worker_pool
from official_rtd.ops import masking

MIN_SEQ_LENGTH = 5  # [CLS] a [SEP] b [SEP]
FORMAT_VERSION = 1


class ConfigError(ValueError):
  """Invalid settings (named after the command-line flag)."""


@dataclasses.dataclass(frozen=True)
class DataConfig:
  """Settings of one `create_pretraining_data` run; field names are the CLI flag names."""
  input_files: tuple
  vocab_file: str
  output_dir: str
  do_lower_case: bool = True
  tokenizer: str = "fast"
  max_seq_length: int = 128
  short_seq_prob: float = 0.05
  single_segment_prob: float = 0.1
  packing: str = "fill"
  dupe_factor: int = 40
  mask_prob: float = 0.15
  max_predictions_per_seq: int = 20
  mask_strategy: str = "electra"
  whole_word_mask: bool = False
  num_shards: int = 8
  gzip: bool = False
  seed: int = 12345
  num_workers: int = 0  # 0: one per CPU core
  chunk_bytes: int = 1 << 20
  on_decode_error: str = "fail"

  def validate(self):
    checks = [
        (self.max_seq_length >= MIN_SEQ_LENGTH,
         f"--max_seq_length={self.max_seq_length} is too small: an example needs at least "
         f"{MIN_SEQ_LENGTH} positions ([CLS] a [SEP] b [SEP])"),
        (self.dupe_factor >= 0, f"--dupe_factor={self.dupe_factor} must be >= 0"),
        (0.0 < self.mask_prob <= 1.0, f"--mask_prob={self.mask_prob} must be in (0, 1]"),
        (1 <= self.max_predictions_per_seq <= self.max_seq_length,
         f"--max_predictions_per_seq={self.max_predictions_per_seq} must be in "
         f"[1, --max_seq_length={self.max_seq_length}]"),
        (self.mask_strategy in masking.STRATEGIES,
         f"--mask_strategy={self.mask_strategy} must be one of {sorted(masking.STRATEGIES)}"),
        (self.tokenizer in tokenizer_lib.TOKENIZERS,
         f"--tokenizer={self.tokenizer} must be one of {list(tokenizer_lib.TOKENIZERS)}"),
        (0.0 <= self.short_seq_prob <= 1.0, f"--short_seq_prob={self.short_seq_prob} must be in [0, 1]"),
        (0.0 <= self.single_segment_prob <= 1.0,
         f"--single_segment_prob={self.single_segment_prob} must be in [0, 1]"),
        (self.packing in packing.PACKING_MODES,
         f"--packing={self.packing} must be one of {list(packing.PACKING_MODES)}"),
        (self.num_shards >= 1, f"--num_shards={self.num_shards} must be >= 1"),
        (self.num_workers >= 0, f"--num_workers={self.num_workers} must be >= 0"),
        (self.chunk_bytes >= 1, f"--chunk_bytes={self.chunk_bytes} must be >= 1"),
        (self.on_decode_error in corpus_lib.DECODE_ERROR_POLICIES,
         f"--on_decode_error={self.on_decode_error} must be one of "
         f"{list(corpus_lib.DECODE_ERROR_POLICIES)}"),
    ]
    for ok, message in checks:
      if not ok:
        raise ConfigError(message)

  @property
  def masking_config(self) -> masking.MaskingConfig:
    return masking.MaskingConfig(mask_prob=self.mask_prob,
                                 max_predictions_per_seq=self.max_predictions_per_seq,
                                 strategy=self.mask_strategy, whole_word_mask=self.whole_word_mask)


@dataclasses.dataclass
class ChunkResult:
  index: int
  records: List[bytes]
  examples: int
  tokens_in: int
  tokens_kept: int
  candidates: int        # maskable positions over all written (duplicated) examples
  masked_positions: int


class ChunkProcessor:
  """Tokenizes, packs and masks one chunk; one instance per worker process."""

  def __init__(self, config: DataConfig):
    self.config = config
    self.vocab = vocab_lib.load_vocab(config.vocab_file)
    self.tokenizer = tokenizer_lib.WordPieceTokenizer(self.vocab, config.do_lower_case,
                                                      config.tokenizer)
    self.tables = masking.TokenTables.from_vocab(self.vocab)
    self._is_continuation = self.vocab.is_continuation()
    # One graph for every chunk (any number of rows): half the time of running the ops eagerly.
    self._mask = tf.function(
        lambda ids, seed: masking.mask_tokens(ids, config.masking_config, self.tables, seed),
        input_signature=[tf.TensorSpec([None, config.max_seq_length], tf.int64),
                         tf.TensorSpec([2], tf.int64)], autograph=False)

  def __call__(self, chunk: corpus_lib.Chunk) -> ChunkResult:
    cfg = self.config
    rng = random.Random(f"{cfg.seed}/{chunk.index}")
    texts = [line for line in chunk.lines if line != corpus_lib.DOCUMENT_BREAK]
    token_lists = iter(self.tokenizer.tokenize_to_lists(texts))
    builder = packing.ExampleBuilder(
        cfg.max_seq_length, rng, cfg.short_seq_prob, cfg.single_segment_prob,
        cfg.packing, self._is_continuation)
    examples = []
    for line in chunk.lines:
      if line == corpus_lib.DOCUMENT_BREAK:
        examples += builder.end_document()
      else:
        examples += builder.add_line(next(token_lists))
    examples += builder.end_document()

    result = ChunkResult(chunk.index, [], len(examples), builder.stats.tokens_in,
                         builder.stats.tokens_kept, 0, 0)
    if not examples:
      return result
    features = packing.to_features(examples, cfg.max_seq_length, self.vocab.cls_id,
                                   self.vocab.sep_id, self.vocab.pad_id)
    candidates = int((~self.tables.is_special[features["input_word_ids"]]).sum())
    if cfg.dupe_factor == 0:
      result.records = example_encoder.serialize_examples(features)
    for dupe in range(cfg.dupe_factor):
      seed = tf.constant([cfg.seed, chunk.index * cfg.dupe_factor + dupe], tf.int64)
      masked = self._mask(features["input_word_ids"], seed)
      masked = {k: v.numpy() for k, v in masked.items()}
      result.records += example_encoder.serialize_examples(dict(features, **masked))
      result.candidates += candidates
      result.masked_positions += int(masked["masked_lm_weights"].sum())
    if cfg.dupe_factor > 1:
      rng.shuffle(result.records)  # the N copies of an example must not sit side by side
    return result


_WORKER: Optional[ChunkProcessor] = None


def _init_worker(config: DataConfig):
  global _WORKER
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  _WORKER = ChunkProcessor(config)


def _process_in_worker(chunk):
  return _WORKER(chunk)


class Progress:
  """Throttled progress lines: MB done, MB/s, examples written and ETA."""

  def __init__(self, total_bytes: int, log: Callable[[str], None], every_s: float = 10.0):
    self.total_bytes, self._log, self._every = max(total_bytes, 1), log, every_s
    self._start = self._last = time.time()

  def update(self, done_bytes: int, examples: int, force: bool = False):
    now = time.time()
    if not force and now - self._last < self._every:
      return
    self._last = now
    elapsed = max(now - self._start, 1e-9)
    rate = done_bytes / elapsed
    eta = (self.total_bytes - done_bytes) / rate if rate > 0 else float("inf")
    self._log(f"{done_bytes / 1e6:.1f}/{self.total_bytes / 1e6:.1f} MB "
              f"({100.0 * done_bytes / self.total_bytes:.1f}%), {rate / 1e6:.2f} MB/s, "
              f"{examples} examples written, ETA {progress_lib.format_duration(eta)}")


def create_pretraining_data(config: DataConfig, log: Callable[[str], None] = print) -> dict:
  """Runs the whole pipeline; returns the sidecar it wrote.

  Raises:
    ConfigError, vocab_lib.VocabError, corpus_lib.CorpusError: before anything is written for bad
      settings, vocab or input files; an empty corpus or undecodable line found while streaming
      raises too, and the previous output directory contents are left untouched.
  """
  config.validate()
  vocab = vocab_lib.load_vocab(config.vocab_file)
  files = corpus_lib.expand_input_files(config.input_files)
  total_bytes = sum(os.path.getsize(f) for f in files)
  num_workers = worker_pool.num_workers(config.num_workers)
  log(f"create_pretraining_data: {len(files)} file(s), {total_bytes / 1e6:.1f} MB, "
      f"{num_workers} worker(s), dupe_factor {config.dupe_factor}")

  read_stats = corpus_lib.ReadStats()
  chunks = corpus_lib.read_chunks(files, config.chunk_bytes, config.on_decode_error, read_stats,
                                  warn=log)
  totals = collections.Counter()
  progress = Progress(total_bytes, log)
  start = time.time()
  writer = records.ShardedWriter(config.output_dir, config.num_shards,
                                 "GZIP" if config.gzip else "")
  try:
    for result in _map_ordered(chunks, config, num_workers):
      writer.write(result.records)
      totals.update(examples=result.examples, records=len(result.records),
                    tokens_in=result.tokens_in, tokens_kept=result.tokens_kept,
                    candidates=result.candidates, masked_positions=result.masked_positions)
      progress.update(read_stats.bytes_read, totals["records"])
    if totals["examples"] == 0:
      raise corpus_lib.CorpusError(
          f"the corpus is empty: no text in {', '.join(files[:3])}"
          f"{' ...' if len(files) > 3 else ''}")
    seconds = time.time() - start
    sidecar = _sidecar(config, vocab, files, total_bytes, read_stats, totals, seconds)
    writer.commit(sidecar)
  except BaseException:
    writer.abort()
    raise
  progress.update(read_stats.bytes_read, totals["records"], force=True)
  counts = sidecar["counts"]
  log(f"wrote {counts['examples']} examples ({counts['unique_examples']} unique) to "
      f"{config.output_dir} in {seconds:.1f}s ({total_bytes / 1e6 / max(seconds, 1e-9):.2f} MB/s); "
      f"{counts['percent_truncated']:.2f}% of word pieces truncated")
  return sidecar


def _map_ordered(chunks, config: DataConfig, num_workers: int):
  """Yields `ChunkResult`s in chunk order; at most 2 chunks per worker are in flight."""
  if num_workers == 1:
    processor = ChunkProcessor(config)
    for chunk in chunks:
      yield processor(chunk)
    return
  context = worker_pool.context()
  with context.Pool(num_workers, initializer=_init_worker, initargs=(config,)) as pool:
    pending = collections.deque()
    for chunk in chunks:
      pending.append(pool.apply_async(_process_in_worker, (chunk,)))
      if len(pending) >= 2 * num_workers:
        yield pending.popleft().get()
    while pending:
      yield pending.popleft().get()


def _sidecar(config, vocab, files, total_bytes, read_stats, totals, seconds) -> dict:
  masked = config.dupe_factor > 0
  return {
      "format_version": FORMAT_VERSION,
      "created_by": "official_rtd create_pretraining_data",
      "flags": dict(dataclasses.asdict(config), input_files=list(config.input_files)),
      "vocab": {"file": os.path.abspath(vocab.path), "sha256": vocab.sha256, "size": vocab.size,
                "special_ids": {t: vocab.id_of(t) for t in vocab_lib.SPECIAL_TOKENS},
                "do_lower_case": config.do_lower_case},
      "max_seq_length": config.max_seq_length,
      "masked": masked,
      "max_predictions_per_seq": config.max_predictions_per_seq if masked else None,
      "dupe_factor": config.dupe_factor,
      "counts": {
          "input_files": len(files),
          "input_bytes": total_bytes,
          "documents": read_stats.documents,
          "lines_skipped": read_stats.lines_skipped,
          "unique_examples": totals["examples"],
          "examples": totals["records"],
          "tokens": totals["tokens_kept"],
          "tokens_truncated": totals["tokens_in"] - totals["tokens_kept"],
          "percent_truncated": 100.0 * (totals["tokens_in"] - totals["tokens_kept"])
                               / max(totals["tokens_in"], 1),
          "masked_positions": totals["masked_positions"],
          "mask_rate": totals["masked_positions"] / max(totals["candidates"], 1),
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
