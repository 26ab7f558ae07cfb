r"""Throughput (MB of text per second) of our `create_pretraining_data` vs Model Garden's
`official/nlp/data/create_pretraining_data.py` on the same input, vocab and settings.

  python benchmarks/data_throughput.py --input_files=../shared/data/corpus/gutenberg_dev_00.txt

Each tool runs twice: on the input, and on its first 20 lines (to measure process start-up:
imports, vocab, worker processes). Prints MB/s with and without start-up and the ratios.
Results are recorded in benchmarks/RESULTS.md.
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
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  print(precision.cpu_summary())  # figures from different CPUs are not comparable
  files = FLAGS.input_files.split(",")
  megabytes = sum(os.path.getsize(f) for f in files) / 1e6
  tmp = tempfile.mkdtemp()
  tiny = os.path.join(tmp, "tiny.txt")  # times process start-up (imports, vocab, workers)
  with open(files[0], encoding="utf-8") as src, open(tiny, "w", encoding="utf-8") as dst:
    dst.writelines(line for _, line in zip(range(20), src))
  common = [f"--vocab_file={FLAGS.vocab_file}", f"--max_seq_length={FLAGS.max_seq_length}",
            f"--dupe_factor={FLAGS.dupe_factor}", "--max_predictions_per_seq=20"]
  print(f"input: {megabytes:.2f} MB in {len(files)} file(s); dupe_factor {FLAGS.dupe_factor}, "
        f"max_seq_length {FLAGS.max_seq_length}; {os.cpu_count()} CPU cores")
  tools = {f"ours_{w}w": lambda inputs, out, w=w: [
      "create_pretraining_data", f"--input_files={inputs}", f"--output_dir={out}",
      f"--num_workers={w}", *common] for w in FLAGS.workers.split(",")}
  if FLAGS.model_garden:
    tools["model_garden"] = lambda inputs, out: [
        sys.executable, "-m", "official.nlp.data.create_pretraining_data",
        f"--input_file={inputs}", f"--output_file={out}.tfrecord", "--do_lower_case=true", *common]
  rates = {}
  for name, command in tools.items():
    seconds = _timed(command(FLAGS.input_files, f"{tmp}/{name}"))
    startup = _timed(command(tiny, f"{tmp}/{name}_tiny"))
    rates[name] = (megabytes / seconds, megabytes / max(seconds - startup, 1e-9))
    print(f"{name}: {seconds:.1f} s, {rates[name][0]:.3f} MB/s with process start; start-up "
          f"(20 lines) {startup:.1f} s, {rates[name][1]:.3f} MB/s without")
  if "model_garden" in rates:
    base = rates["model_garden"]
    for name, (total, steady) in rates.items():
      if name != "model_garden":
        print(f"speed-up {name} / model_garden: {total / base[0]:.1f}x with process start, "
              f"{steady / base[1]:.1f}x without")


if __name__ == "__main__":
  app.run(main)
