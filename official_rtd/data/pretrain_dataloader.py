"""`tf.data` reader over `create_pretraining_data` output, with optional dynamic masking.

Reads one or more records directories (comma lists / globs), checks each sidecar against the
expected sequence length and masking, interleaves the shards, shuffles, repeats and batches per
replica (`tf.distribute.InputContext`). Records written with `--dupe_factor=0` are unmasked: the
reader then masks each batch on the fly with `ops.masking` (ELECTRA's default, dynamic masking).
"""
import dataclasses
from typing import List, Optional, Tuple

import tensorflow as tf

from official_rtd.data import records
from official_rtd.ops import masking


@dataclasses.dataclass(frozen=True)
class PretrainInputConfig:
  """Where the records are and how to batch them.

  Attributes:
    input_path: records directories, comma separated; globs allowed.
    global_batch_size: examples per step over all replicas.
    seq_length: must equal the records' `max_seq_length`.
    max_predictions_per_seq: must equal the records' value for statically masked records; the
      dynamic-masking width otherwise.
    dynamic_masking: how to mask unmasked records (None: the records must be masked).
    token_tables: vocab facts for dynamic masking (`masking.TokenTables.from_vocab`).
    vocab_sha256: if set, every sidecar's vocab hash must equal it.
    skip_batches: batches of this input pipeline already consumed (resuming a run): they are read
      and dropped before decoding, so with a `seed` the pipeline continues exactly where it was.
  """
  input_path: str
  global_batch_size: int
  seq_length: int
  max_predictions_per_seq: int
  is_training: bool = True
  shuffle_buffer_size: int = 10000
  cycle_length: int = 8
  seed: Optional[int] = None
  dynamic_masking: Optional[masking.MaskingConfig] = None
  token_tables: Optional[masking.TokenTables] = None
  vocab_sha256: Optional[str] = None
  skip_batches: int = 0


def resolve_records(config: PretrainInputConfig) -> Tuple[List[str], bool, dict]:
  """Finds the shards and checks every sidecar against `config`.

  Returns:
    (shard paths, whether the records are statically masked, the first sidecar).
  Raises:
    records.RecordsError: naming the directory and the mismatching value.
  """
  dirs = records.list_records_dirs([p for p in config.input_path.split(",") if p.strip()])
  paths, masked_flags, sidecars = [], set(), []
  for records_dir in dirs:
    sidecar = records.read_sidecar(records_dir)
    if sidecar["max_seq_length"] != config.seq_length:
      raise records.RecordsError(
          f"records in {records_dir} have max_seq_length {sidecar['max_seq_length']} but the run "
          f"trains at {config.seq_length} (TrainConfig.max_seq_length, or a phase's): pass "
          f"--gin_param='TrainConfig.max_seq_length = {sidecar['max_seq_length']}' or rebuild "
          f"the records with create_pretraining_data --max_seq_length={config.seq_length}")
    if sidecar["masked"] and sidecar["max_predictions_per_seq"] != config.max_predictions_per_seq:
      raise records.RecordsError(
          f"records in {records_dir} have max_predictions_per_seq "
          f"{sidecar['max_predictions_per_seq']} but the run expects "
          f"{config.max_predictions_per_seq} (TrainConfig.max_predictions_per_seq): pass "
          f"--gin_param='TrainConfig.max_predictions_per_seq = "
          f"{sidecar['max_predictions_per_seq']}' or rebuild the records with "
          f"create_pretraining_data --max_predictions_per_seq={config.max_predictions_per_seq}")
    if config.vocab_sha256 and sidecar["vocab"]["sha256"] != config.vocab_sha256:
      raise records.RecordsError(
          f"records in {records_dir} were tokenized with a different vocab file "
          f"({sidecar['vocab']['file']}, sha256 {sidecar['vocab']['sha256'][:12]}...)")
    masked_flags.add(sidecar["masked"])
    paths += records.shard_paths(records_dir, sidecar)
    sidecars.append(sidecar)
  if len(masked_flags) > 1:
    raise records.RecordsError(f"{config.input_path} mixes masked and unmasked records")
  if len({s["compression"] for s in sidecars}) > 1:
    raise records.RecordsError(f"{config.input_path} mixes compressed and uncompressed records")
  return paths, masked_flags.pop(), sidecars[0]


def load_pretraining_dataset(config: PretrainInputConfig,
                             input_context: Optional[tf.distribute.InputContext] = None
                             ) -> tf.data.Dataset:
  """Batched dataset of dicts: `input_word_ids, input_mask, input_type_ids` (`[batch, seq_len]`
  int32), `masked_lm_positions, masked_lm_ids` (`[batch, max_predictions]` int32) and
  `masked_lm_weights` (`[batch, max_predictions]` float32)."""
  paths, masked, sidecar = resolve_records(config)
  if not masked and (config.dynamic_masking is None or config.token_tables is None):
    raise records.RecordsError(
        f"records in {config.input_path} are unmasked (--dupe_factor=0): dynamic masking needs a "
        "masking config and the vocab's token tables")
  spec = records.feature_spec(config.seq_length,
                              config.max_predictions_per_seq if masked else None)
  batch_size = config.global_batch_size
  num_pipelines, pipeline_id = 1, 0
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(config.global_batch_size)
    num_pipelines, pipeline_id = input_context.num_input_pipelines, input_context.input_pipeline_id

  files = tf.data.Dataset.from_tensor_slices(paths)
  shard_files = num_pipelines > 1 and len(paths) >= num_pipelines
  if shard_files:
    files = files.shard(num_pipelines, pipeline_id)
  if config.is_training:
    files = files.shuffle(len(paths), seed=config.seed).repeat()
  compression = sidecar["compression"]
  dataset = files.interleave(
      lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
      cycle_length=config.cycle_length, num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=config.seed is not None or not config.is_training)
  if num_pipelines > 1 and not shard_files:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  if config.is_training:
    dataset = dataset.shuffle(config.shuffle_buffer_size, seed=config.seed)
  dataset = dataset.batch(batch_size, drop_remainder=config.is_training)
  if config.skip_batches:
    dataset = dataset.skip(config.skip_batches)
  dataset = dataset.map(lambda serialized: _decode(serialized, spec),
                        num_parallel_calls=tf.data.AUTOTUNE)
  if not masked:
    base_seed = config.seed if config.seed is not None else 0

    def dynamic_mask(index, batch):
      seed = tf.stack([tf.constant(base_seed, tf.int64) + pipeline_id, index])
      corrupted = masking.mask_tokens(batch["input_word_ids"], config.dynamic_masking,
                                      config.token_tables, seed, step=index)
      return dict(batch, **corrupted)

    dataset = dataset.enumerate(start=config.skip_batches).map(
        dynamic_mask, num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)


def _decode(serialized: tf.Tensor, spec) -> dict:
  example = tf.io.parse_example(serialized, spec)
  return {name: value if name in records.FLOAT_FEATURES else tf.cast(value, tf.int32)
          for name, value in example.items()}
