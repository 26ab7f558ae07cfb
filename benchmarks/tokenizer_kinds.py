r"""Vocabulary learning time per learner on one corpus, and `create_pretraining_data` throughput
with each learned vocabulary on the same text, side by side in one run.

  python benchmarks/tokenizer_kinds.py --work_dir=/tmp/tok \
      --vocab_files='../shared/data/wiki/*.txt' --data_files='../shared/data/wiki/wiki_0[0-5].txt'

Learners (`build_vocab --model_type`, each in its own process, wall time and peak RSS of its
process tree): wordpiece (Hugging Face `tokenizers`), sentencepiece_unigram, sentencepiece_bpe, and
with --tensorflow_text the tf-text WordPiece learner (slow: minutes per 10 MB). Then
`create_pretraining_data` (dynamic masking, --dupe_factor=0, 2 workers) with each vocabulary on
--data_files: wall seconds with start-up, and the MB/s the tool itself reports (after start-up).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import time

from absl import app
from absl import flags
import psutil

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIKI = os.path.join(REPO, "..", "shared", "data", "wiki")
flags.DEFINE_string("work_dir", "/tmp/tokenizers_benchmark", "Vocabularies and records go here.")
flags.DEFINE_string("vocab_files", os.path.join(WIKI, "*.txt"), "Glob of the learning corpus.")
flags.DEFINE_string("data_files", os.path.join(WIKI, "wiki_0[0-5].txt"),
                    "Glob of the text create_pretraining_data reads.")
flags.DEFINE_integer("vocab_size", 16000, "Vocabulary size of every learner.")
flags.DEFINE_bool("tensorflow_text", False, "Also time tf-text's WordPiece learner.")
FLAGS = flags.FLAGS


def timed(command):
  """(seconds, peak RSS GB summed over the process tree, stderr) of `command`; raises on
  failure."""
  watch = common.Stopwatch()
  process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
  handle, peak = psutil.Process(process.pid), 0
  while process.poll() is None:
    try:
      tree = [handle] + handle.children(recursive=True)
      peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
    except psutil.Error:
      pass
    time.sleep(0.2)
  stderr = process.stderr.read()
  if process.returncode:
    raise RuntimeError(f"{' '.join(command)} failed: {stderr[-2000:]}")
  return watch.seconds, peak / 2**30, stderr


def main(_):
  print(common.cpu_summary())
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  vocab_files = sorted(glob.glob(FLAGS.vocab_files))
  data_files = sorted(glob.glob(FLAGS.data_files))
  vocab_mb = sum(os.path.getsize(f) for f in vocab_files) / 1e6
  data_mb = sum(os.path.getsize(f) for f in data_files) / 1e6
  learners = [("wordpiece", "tokenizers", "vocab.txt"),
              ("sentencepiece_unigram", "tokenizers", "unigram.model"),
              ("sentencepiece_bpe", "tokenizers", "bpe.model")]
  if FLAGS.tensorflow_text:
    learners.append(("wordpiece", "tensorflow_text", "tftext_vocab.txt"))
  words = 0
  for path in data_files:
    with open(path, encoding="utf-8") as f:
      words += len(f.read().split())
  print(f"learning on {len(vocab_files)} files, {vocab_mb:.1f} MB; records from "
        f"{len(data_files)} files, {data_mb:.1f} MB; vocab size {FLAGS.vocab_size}")
  table = common.TableWriter(["vocabulary", "learn s", "learn peak RSS GB",
                              "data prep s (start-up included)",
                              "data prep MB/s (the tool's own, after start-up)", "tokens per word"])
  for model_type, learner, name in learners:
    vocab = os.path.join(FLAGS.work_dir, name)
    sentencepiece = model_type.startswith("sentencepiece")
    learn_s, learn_gb, _ = timed(
        ["build_vocab", f"--input_files={','.join(vocab_files)}", f"--output_file={vocab}",
         f"--vocab_size={FLAGS.vocab_size}", f"--model_type={model_type}",
         f"--learner={learner}"])
    records = os.path.join(FLAGS.work_dir, f"records_{os.path.splitext(name)[0]}")
    shutil.rmtree(records, ignore_errors=True)
    prep_s, _, log = timed(
        ["create_pretraining_data", f"--input_files={','.join(data_files)}",
         f"--vocab_file={vocab}", f"--output_dir={records}", "--dupe_factor=0",
         "--max_seq_length=128", "--num_workers=2",
         f"--do_lower_case={'false' if sentencepiece else 'true'}"])
    with open(os.path.join(records, "pretraining_data.json"), encoding="utf-8") as f:
      counts = json.load(f)["counts"]
    tokens = counts["tokens"] + counts["tokens_truncated"]
    rate = re.findall(r"\(([0-9.]+) MB/s\); ", log)
    label = f"{model_type}" + (f" ({learner})" if learner != "tokenizers" else "")
    table.row(label, f"{learn_s:.1f}", f"{learn_gb:.2f}", f"{prep_s:.1f}",
              rate[-1] if rate else "?", f"{tokens / max(words, 1):.3f}")


if __name__ == "__main__":
  app.run(main)
