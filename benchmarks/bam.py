r"""BAM at the quickstart scale (dissertation Table 3.1): Single vs Multi vs Single→Multi with
teacher annealing, on the shipped GLUE tasks, N seeds each, with `run_glue`'s runners.

  python benchmarks/bam.py --init_checkpoint=/tmp/qs5k/model/export

Single: `run_glue --task=<t> --write_train_predictions` per task (the ELECTRA protocol; these runs
are the teachers). Multi: `run_glue --tasks=...` (BAM's defaults: batch 128, lr 1e-4, α 0.9,
6 epochs of the mixture). Single→Multi: the same with `--teachers_from=<the Single runs>` and linear
teacher annealing. Every task is cut to a random `--max_train_examples` subset (the same rows in
all three). Prints median dev primary metrics (and their min–max) and the average over tasks.
Results are recorded in benchmarks/RESULTS.md.
"""
import os
import tempfile

from absl import app
from absl import flags
from absl import logging

import common
from official_rtd.finetune import configs
from official_rtd.finetune import metrics
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.bam import multitask
from official_rtd.finetune.glue import task as glue

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("init_checkpoint", None, "Encoder export.")
flags.DEFINE_list("tasks", ["cola", "sst-2", "mrpc", "sts-b", "rte"], "GLUE tasks.")
flags.DEFINE_string("glue_dir", os.path.join(REPO, "..", "shared", "data", "glue"), "GLUE root.")
flags.DEFINE_integer("max_train_examples", 2000, "Training examples per task (0: all).")
flags.DEFINE_integer("num_trials", 3, "Seeds per setting.")
flags.DEFINE_integer("multi_num_trials", 0, "Seeds of the multi-task settings (0: --num_trials).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per example.")
flags.DEFINE_string("output_dir", "", "Where the runs go (default: a new temporary directory).")
flags.mark_flag_as_required("init_checkpoint")
FLAGS = flags.FLAGS


def config(model_dir, num_trials, **kwargs):
  return configs.GlueConfig(
      init_checkpoint=FLAGS.init_checkpoint, model_dir=model_dir, data_dir=FLAGS.glue_dir,
      max_seq_length=FLAGS.max_seq_length, max_train_examples=FLAGS.max_train_examples,
      num_trials=num_trials, log_every_steps=200, **kwargs)


def row(name, per_task, seconds):
  """`(name, {task: (median, min, max)}, average of medians, seconds)`."""
  average = 100.0 * sum(v[0] for v in per_task.values()) / len(per_task)
  return name, per_task, average, seconds


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  out = FLAGS.output_dir or tempfile.mkdtemp()
  rows = []
  watch, single = common.Stopwatch(), {}
  for task in FLAGS.tasks:
    summary = runner_lib.Runner(config(os.path.join(out, "single", task), FLAGS.num_trials,
                                       task=task, write_train_predictions=True),
                                logging.info).run()
    split = next(iter(summary["median"]))
    primary = metrics.PRIMARY[task]
    spread = summary["spread"][split][primary]
    single[task] = (summary["median"][split][primary], spread["min"], spread["max"])
  rows.append(row("Single", single, watch.seconds))
  for name, extra in (("Multi", {}),
                      ("Single→Multi", {"teachers_from": os.path.join(out, "single")})):
    watch = common.Stopwatch()
    summary = runner_lib.Runner(
        config(os.path.join(out, name), FLAGS.multi_num_trials or FLAGS.num_trials,
               tasks=",".join(FLAGS.tasks), **extra), logging.info).run()
    per_task = {}
    for task in FLAGS.tasks:
      key = next(k for k in summary["median"] if k.split(":")[0] == task)
      primary = metrics.PRIMARY[task]
      spread = summary["spread"][key][primary]
      per_task[task] = (summary["median"][key][primary], spread["min"], spread["max"])
    rows.append(row(name, per_task, watch.seconds))
  print(f"init_checkpoint: {FLAGS.init_checkpoint}; {FLAGS.num_trials} trials single-task, "
        f"{FLAGS.multi_num_trials or FLAGS.num_trials} multi-task; "
        f"{FLAGS.max_train_examples or 'all'} training examples per task; runs in {out}")
  table = common.TableWriter(["model", "avg"] + [f"{t} ({metrics.PRIMARY[t]})"
                                                  for t in FLAGS.tasks] + ["minutes"])
  for name, per_task, average, seconds in rows:
    table.row(name, f"{average:.1f}", *[f"{100 * m:.1f} ({100 * lo:.1f}–{100 * hi:.1f})"
                                        for m, lo, hi in per_task.values()], f"{seconds / 60:.1f}")


if __name__ == "__main__":
  app.run(main)
