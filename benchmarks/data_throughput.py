r"""Throughput (MB of text per second) of our `create_pretraining_data` vs Model Garden's
`official/nlp/data/create_pretraining_data.py` on the same input, vocab and settings.

  python benchmarks/data_throughput.py --input_files=../shared/data/corpus/gutenberg_dev_00.txt

Prints one line per run and a ratio. Results are recorded in benchmarks/RESULTS.md.
"""
import os
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("input_files", os.path.join(REPO, "..", "shared", "data", "corpus",
                                                "gutenberg_dev_00.txt"), "Comma list of files.")
flags.DEFINE_string("vocab_file", os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"),
                    "WordPiece vocab used by both tools.")
flags.DEFINE_integer("dupe_factor", 10, "Copies per example (Model Garden's default is 10).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
flags.DEFINE_string("workers", "1,2", "Our worker counts to time.")
flags.DEFINE_bool("model_garden", True, "Also time Model Garden's tool.")
FLAGS = flags.FLAGS


def _timed(args):
  start = time.time()
  result = subprocess.run(args, capture_output=True, text=True)
  if result.returncode:
    sys.exit(f"failed: {' '.join(args)}\n{result.stderr[-3000:]}")
  return time.time() - start


def main(_):
  files = FLAGS.input_files.split(",")
  megabytes = sum(os.path.getsize(f) for f in files) / 1e6
  tmp = tempfile.mkdtemp()
  common = [f"--vocab_file={FLAGS.vocab_file}", f"--max_seq_length={FLAGS.max_seq_length}",
            f"--dupe_factor={FLAGS.dupe_factor}", "--max_predictions_per_seq=20"]
  print(f"input: {megabytes:.2f} MB in {len(files)} file(s); dupe_factor {FLAGS.dupe_factor}, "
        f"max_seq_length {FLAGS.max_seq_length}; {os.cpu_count()} CPU cores")
  rates = {}
  for workers in FLAGS.workers.split(","):
    seconds = _timed(["create_pretraining_data", f"--input_files={FLAGS.input_files}",
                      f"--output_dir={tmp}/ours_{workers}", f"--num_workers={workers}", *common])
    rates[f"ours_{workers}w"] = megabytes / seconds
    print(f"official_rtd create_pretraining_data, {workers} worker(s): {seconds:.1f} s, "
          f"{megabytes / seconds:.3f} MB/s (process start included)")
  if FLAGS.model_garden:
    seconds = _timed([sys.executable, "-m", "official.nlp.data.create_pretraining_data",
                      f"--input_file={FLAGS.input_files}", f"--output_file={tmp}/mg.tfrecord",
                      "--do_lower_case=true", *common])
    rates["model_garden"] = megabytes / seconds
    print(f"Model Garden create_pretraining_data.py: {seconds:.1f} s, {megabytes / seconds:.3f} MB/s")
    for name, rate in rates.items():
      if name != "model_garden":
        print(f"speed-up {name} / model_garden: {rate / rates['model_garden']:.1f}x")


if __name__ == "__main__":
  app.run(main)
