r"""Throughput (MB of text per second) and peak memory of our `create_pretraining_data` (local
worker pool and Apache Beam's DirectRunner) vs Model Garden's
`official/nlp/data/create_pretraining_data.py` on the same input, vocab and settings.

  python benchmarks/data_throughput.py --input_files=../shared/data/corpus/gutenberg_dev_00.txt
  python benchmarks/data_throughput.py --dupe_factors=10,40 --scales=1,2,4 \
      --tools=ours_2w,beam_direct_2w,model_garden --model_garden_max_scale=1

Each tool runs twice per setting: on the input, and on its first 20 lines (to measure process
start-up: imports, vocab, worker processes). `--scales` repeats the input k times (copies of the
files) to show how memory grows with corpus size. Prints MB/s with and without start-up, the peak
RSS summed over the tool's process tree (sampled every 0.2 s; shared library pages count once per
process) and of its largest process, and the speed-up over Model Garden.
Results are recorded in benchmarks/RESULTS.md.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags
import psutil

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("input_files", os.path.join(REPO, "..", "shared", "data", "corpus",
                                                "gutenberg_dev_00.txt"), "Comma list of files.")
flags.DEFINE_string("vocab_file", os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"),
                    "WordPiece vocab used by both tools.")
flags.DEFINE_string("dupe_factors", "10", "Copies per example (Model Garden's default is 10).")
flags.DEFINE_string("scales", "1", "Input sizes to run, as multiples of --input_files.")
flags.DEFINE_string("tools", "ours_1w,ours_2w,model_garden",
                    "ours_<N>w: local pool of N workers; beam_direct_<N>w: Beam DirectRunner with N "
                    "processes; model_garden.")
flags.DEFINE_integer("model_garden_max_scale", 1, "Largest --scales value Model Garden runs at "
                     "(it holds the whole corpus in memory and is ~15x slower).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length.")
FLAGS = flags.FLAGS


def _timed(args):
  """Runs `args`; returns (seconds, peak summed RSS MB of the process tree, peak single RSS MB)."""
  watch = common.Stopwatch()
  process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  root = psutil.Process(process.pid)
  peak_sum = peak_one = 0.0
  stderr = []
  import threading  # pylint: disable=g-import-not-at-top
  reader = threading.Thread(target=lambda: stderr.append(process.stderr.read()))
  reader.start()
  while process.poll() is None:
    try:
      rss = [p.memory_info().rss for p in [root] + root.children(recursive=True)]
    except psutil.Error:
      rss = []
    if rss:
      peak_sum, peak_one = max(peak_sum, sum(rss) / 2**20), max(peak_one, max(rss) / 2**20)
    time.sleep(0.2)
  reader.join()
  if process.returncode:
    sys.exit(f"failed: {' '.join(args)}\n{''.join(stderr)[-3000:]}")
  return watch.seconds, peak_sum, peak_one


def _scaled_inputs(files, scale, tmp):
  """`files` repeated `scale` times (copies, so each is a distinct file)."""
  if scale == 1:
    return files
  out = []
  for k in range(scale):
    for f in files:
      copy = os.path.join(tmp, f"x{k}_{os.path.basename(f)}")
      if not os.path.exists(copy):
        shutil.copyfile(f, copy)
      out.append(copy)
  return out


def _command(tool, inputs, out, shared_flags):
  if tool == "model_garden":
    return [sys.executable, "-m", "official.nlp.data.create_pretraining_data",
            f"--input_file={inputs}", f"--output_file={out}.tfrecord", "--do_lower_case=true",
            *shared_flags]
  kind, workers = tool.rsplit("_", 1)
  runner = {"ours": [], "beam_direct": ["--runner=DirectRunner"]}[kind]
  return ["create_pretraining_data", f"--input_files={inputs}", f"--output_dir={out}",
          f"--num_workers={workers.rstrip('w')}", *runner, *shared_flags]


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  files = FLAGS.input_files.split(",")
  tmp = tempfile.mkdtemp()
  tiny = os.path.join(tmp, "tiny.txt")  # times process start-up (imports, vocab, workers)
  with open(files[0], encoding="utf-8") as src, open(tiny, "w", encoding="utf-8") as dst:
    dst.writelines(line for _, line in zip(range(20), src))
  tools = FLAGS.tools.split(",")
  table = common.TableWriter(["dupe", "scale", "MB", "tool", "wall s", "MB/s", "start-up s",
                              "MB/s w/o start-up", "peak RSS MB (tree)",
                              "peak RSS MB (largest process)", "vs Model Garden (w/o start-up)"])
  for dupe in [int(d) for d in FLAGS.dupe_factors.split(",")]:
    shared_flags = [f"--vocab_file={FLAGS.vocab_file}", f"--max_seq_length={FLAGS.max_seq_length}",
              f"--dupe_factor={dupe}", "--max_predictions_per_seq=20"]
    startups = {t: _timed(_command(t, tiny, os.path.join(tmp, f"{t}_tiny"), shared_flags))[0]
                for t in tools}
    base = None
    for scale in [int(k) for k in FLAGS.scales.split(",")]:
      inputs = _scaled_inputs(files, scale, tmp)
      megabytes = sum(os.path.getsize(f) for f in inputs) / 1e6
      for tool in tools:
        if tool == "model_garden" and scale > FLAGS.model_garden_max_scale:
          continue
        out = os.path.join(tmp, f"{tool}_{dupe}_{scale}")
        seconds, peak_sum, peak_one = _timed(_command(tool, ",".join(inputs), out, shared_flags))
        shutil.rmtree(out, ignore_errors=True)
        for leftover in (f"{out}.tfrecord",):
          if os.path.exists(leftover):
            os.remove(leftover)
        # A start-up longer than the whole run (tiny inputs, noisy machine) gives no steady rate.
        steady = megabytes / (seconds - startups[tool]) if seconds > startups[tool] else 0.0
        if tool == "model_garden" and scale == 1:
          base = steady
        ratio = f"{steady / base:.1f}x" if base and steady else "-"
        table.row(dupe, f"{scale}x", f"{megabytes:.1f}", tool, f"{seconds:.1f}",
                  f"{megabytes / seconds:.3f}", f"{startups[tool]:.1f}", f"{steady:.3f}",
                  f"{peak_sum:.0f}", f"{peak_one:.0f}", ratio)
  shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
  app.run(main)
