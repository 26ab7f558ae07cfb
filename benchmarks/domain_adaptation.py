r"""Continued (domain-adaptive) pre-training vs from scratch, the same steps on a new domain.

  python benchmarks/domain_adaptation.py --source_model_dir=/tmp/qs5k/model \
      --work_dir=/tmp/domain --steps=1000 --seeds=1,2

The source is the quickstart model (`rtd_quickstart --output_dir=/tmp/qs5k
--num_train_steps=5000`: tiny ELECTRA on the shipped Alice + Peter Pan sample, vocab 8,000 learned
from it); it is built first if `--source_model_dir` has no checkpoint. The new domain is a
`../shared/data/corpus` book in another register (default: Hobbes' *Leviathan*): its first 90% of
paragraphs are the training text (records in the source's vocab, dupe 5), the last 10% the held-out
set (fixed masks, dupe 1). Each seed trains `tiny.gin` + `tasks/electra.gin` for `--steps` steps
twice, once warm-started with `--warm_start_from=<source>` and once from scratch (same schedule,
data order and seed), then `--mode=eval` on the held-out set; the source itself is evaluated too
(step 0 of the continued run). Finished runs are reused. Results: benchmarks/RESULTS.md.
"""
import json
import os

from absl import app
from absl import flags
from absl import logging
import numpy as np

import common
import heldout  # pylint: disable=g-bad-import-order

flags.DEFINE_string("source_model_dir", "/tmp/qs5k/model", "The quickstart run to continue.")
flags.DEFINE_integer("source_steps", 5000, "Quickstart steps, if the source must be built.")
flags.DEFINE_string("work_dir", "/tmp/domain_adaptation", "Records and runs.")
flags.DEFINE_string("domain_book", "Leviathan", "A ../shared/data/corpus book (MANIFEST title).")
flags.DEFINE_integer("steps", 1000, "Training steps of each run (batch 32 × 64 tokens).")
flags.DEFINE_list("seeds", ["1", "2"], "TrainConfig.seed of each pair of runs.")
FLAGS = flags.FLAGS
GIN = ["gin/models/tiny.gin", "gin/tasks/electra.gin"]
COLUMNS = ("mlm_loss", "mlm_accuracy", "rtd_auc", "fixed_noise_auc")


def build_source():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tf.train.latest_checkpoint(FLAGS.source_model_dir):
    return
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  out = os.path.dirname(FLAGS.source_model_dir.rstrip("/"))
  records_dir = pretraining_data.vocab_and_records(out, [heldout.SAMPLE], 8000, logging.info)
  runs.run_pretraining(GIN, [f"TrainConfig.num_train_steps = {FLAGS.source_steps}"],
                            records_dir, FLAGS.source_model_dir, log=logging.info)


def evaluate(model_dir, records_dir, eval_records, params):
  import gin  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  _, rows = runs.run_pretraining(GIN, params, records_dir, model_dir, mode="eval",
                                      eval_input=eval_records, log=logging.info)
  return rows[-1]


def run(name, seed, records_dir, eval_records, init_checkpoint=""):
  """Trains (or reuses) one run and returns its held-out row."""
  import gin  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(FLAGS.work_dir, "runs", f"{name}_seed{seed}")
  done = os.path.join(model_dir, "domain_eval.json")
  if os.path.exists(done):
    with open(done, encoding="utf-8") as f:
      return json.load(f)
  params = [f"TrainConfig.num_train_steps = {FLAGS.steps}", f"TrainConfig.seed = {seed}",
            f"TrainConfig.save_checkpoints_steps = {FLAGS.steps}"]
  if init_checkpoint:
    params.append(f"TrainConfig.init_checkpoint = {init_checkpoint!r}")
  gin.clear_config()
  runs.run_pretraining(GIN, params, records_dir, model_dir, log=logging.info)
  row = evaluate(model_dir, records_dir, eval_records, params)
  with open(done, "w", encoding="utf-8") as f:
    json.dump(row, f)
  return row


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  os.chdir(heldout.REPO)
  build_source()
  vocab_file = os.path.join(FLAGS.source_model_dir, "vocab.txt")
  train_text, heldout_text = heldout.split_book(FLAGS.domain_book, 0.1)
  records_dir = heldout.text_records(train_text, vocab_file, os.path.join(FLAGS.work_dir, "train"),
                                     dupe_factor=5, log=logging.info)
  eval_records = heldout.text_records(heldout_text, vocab_file,
                                      os.path.join(FLAGS.work_dir, "heldout"), log=logging.info)
  source_row = os.path.join(FLAGS.work_dir, "source_eval.json")
  if not os.path.exists(source_row):
    row = evaluate(FLAGS.source_model_dir, records_dir, eval_records, [])
    with open(source_row, "w", encoding="utf-8") as f:
      json.dump(row, f)
  with open(source_row, encoding="utf-8") as f:
    rows = {("source (no domain steps)", "-"): json.load(f)}
  for seed in FLAGS.seeds:
    rows[("continued", seed)] = run("continued", seed, records_dir, eval_records,
                                    FLAGS.source_model_dir)
    rows[("from scratch", seed)] = run("scratch", seed, records_dir, eval_records)
  print(f"\nheld-out: last 10% of {FLAGS.domain_book}; {FLAGS.steps} steps per run")
  table = common.TableWriter(["run", "seed", *COLUMNS])
  for (name, seed), row in rows.items():
    table.row(name, seed, *[f"{row[c]:.4f}" for c in COLUMNS])
  for name in ("continued", "from scratch"):
    values = [rows[(name, s)] for s in FLAGS.seeds]
    table.row(f"{name} (mean)", ",".join(FLAGS.seeds),
              *[f"{np.mean([r[c] for r in values]):.4f}" for c in COLUMNS])


if __name__ == "__main__":
  app.run(main)
