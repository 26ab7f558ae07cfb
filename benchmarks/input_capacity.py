r"""Can the input pipeline feed an accelerator? Records → decoding → shuffling → dynamic masking →
batches, exactly as `run_pretraining` reads them (`pretrain_dataloader.load_pretraining_dataset`),
with no model at all: sequences/s per CPU core (tf.data on a private thread pool of `--threads`
threads) for the one-machine recipe's shape and ELECTRA-Small / ELECTRA-Base's, then how many
cores one accelerator's published consumption needs.

  python benchmarks/input_capacity.py --work_dir=/tmp/input_capacity

Records are built once (unmasked, for dynamic masking) from `--corpus` with `--vocab_file`.
Published consumption (dissertation Tables 5.1 and 5.7): ELECTRA-Small trained 1M steps of
128 × 128 in 4 days on one V100 (370 sequences/s); ELECTRA-Base 766k steps of 256 × 512 in 4 days
on 16 TPUv3 chips (567 sequences/s, 35 per chip).
"""
import json
import os

from absl import app
from absl import flags

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")

flags.DEFINE_string("work_dir", None, "Where the records go (reused when present).")
flags.DEFINE_string("corpus", os.path.join(SHARED, "wiki", "wiki_0[0-4].txt"),
                    "Text the records are built from (comma list / globs).")
flags.DEFINE_string("vocab_file", os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"),
                    "WordPiece vocabulary of the records.")
flags.DEFINE_list("shapes", ["recipe", "small", "base"], "recipe, small, base.")
flags.DEFINE_list("threads", ["1", "2"], "tf.data thread-pool sizes to time.")
flags.DEFINE_integer("batches", 200, "Batches timed per measurement (after 20 warm-up ones).")
FLAGS = flags.FLAGS

# name: (sequence length, batch size, masked positions (15%), published consumption in
# sequences/s of one accelerator, what that accelerator is)
SHAPES = {
    "recipe": (64, 16, 20, None, "2 CPU cores (the recipe's own step: 8,923 tokens/s)"),
    "small": (128, 128, 20, 1e6 * 128 / (4 * 86400), "one V100 (ELECTRA-Small, 4 days)"),
    "base": (512, 256, 77, 766e3 * 256 / (4 * 86400) / 16, "one TPUv3 chip (ELECTRA-Base, "
             "4 days on 16)"),
}


def records_for(seq_length: int) -> str:
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  output = os.path.join(FLAGS.work_dir, f"records{seq_length}")
  if not os.path.isdir(output):
    pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
        input_files=tuple(FLAGS.corpus.split(",")), vocab_file=FLAGS.vocab_file,
        output_dir=output, max_seq_length=seq_length, dupe_factor=0, num_shards=4),
        log=print)
  return output


def measure(shape: str, threads: int) -> float:
  """Sequences/s of the training input pipeline on `threads` threads."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd.data import pretrain_dataloader  # pylint: disable=g-import-not-at-top
  from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.ops import masking  # pylint: disable=g-import-not-at-top
  seq_length, batch, predictions = SHAPES[shape][:3]
  vocab = vocab_lib.load_vocab(FLAGS.vocab_file)
  dataset = pretrain_dataloader.load_pretraining_dataset(pretrain_dataloader.PretrainInputConfig(
      input_path=records_for(seq_length), global_batch_size=batch, seq_length=seq_length,
      max_predictions_per_seq=predictions, seed=0,
      dynamic_masking=masking.MaskingConfig(max_predictions_per_seq=predictions),
      token_tables=masking.TokenTables.from_vocab(vocab)))
  options = tf.data.Options()
  options.threading.private_threadpool_size = threads
  options.threading.max_intra_op_parallelism = 1
  iterator = iter(dataset.with_options(options))
  for _ in range(20):  # warm-up (prefetch buffers filled): time the whole run, not each batch
    next(iterator)
  run = common.timed(lambda: [next(iterator) for _ in range(FLAGS.batches)], warmup=0, repeats=1)
  return FLAGS.batches * batch / run.median


def main(_):
  print(common.cpu_summary(), flush=True)
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  rows = []
  for shape in FLAGS.shapes:
    seq_length, batch, predictions, consumption, accelerator = SHAPES[shape]
    for threads in (int(t) for t in FLAGS.threads):
      rate = measure(shape, threads)
      rows.append([shape, f"{seq_length} × {batch}, {predictions}", threads, f"{rate:,.0f}",
                   f"{rate / threads:,.0f}",
                   f"{consumption:,.0f}/s, {accelerator}" if consumption else accelerator,
                   f"{consumption / (rate / threads):.2f}" if consumption else "–"])
      print("RESULT " + json.dumps({"shape": shape, "threads": threads, "sequences_per_s": rate}),
            flush=True)
  print(common.markdown_table(
      ["shape", "sequence × batch, masked", "threads", "sequences/s", "per thread",
       "published consumption of one accelerator", "cores it needs"], rows))


if __name__ == "__main__":
  flags.mark_flag_as_required("work_dir")
  app.run(main)
