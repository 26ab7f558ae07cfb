r"""The ELECTRA study's comparison at equal compute: pre-train each objective with the same encoder
on the same records for the same train-FLOPs budget, fine-tune each export on GLUE tasks with
`run_glue`'s protocol, and print one table.

  python benchmarks/compare_objectives.py --work_dir=/tmp/compare \
      --objectives=electra,mlm,electra_15,replace_mlm,all_tokens_mlm \
      --train_flops_budget=1e13 --tasks=sst-2:1000,mrpc:1000 --num_trials=3

Objectives are task files in gin/tasks/ composed after `--model_gin`. The vocab and records are
built once from `--corpus` (default: the public-domain sample shipped in data/corpus_sample);
finished pre-training runs and fine-tuning trials are reused, so an interrupted comparison resumes.
Results are recorded in benchmarks/RESULTS.md.
"""
import glob
import os

from absl import app
from absl import flags
from absl import logging
import numpy as np

import common
from official_rtd.data import pretraining_data
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.glue import task as glue

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = {"cola": "CoLA", "sst-2": "SST-2", "mrpc": "MRPC", "sts-b": "STS-B", "rte": "RTE"}
flags.DEFINE_string("work_dir", "/tmp/compare_objectives", "Vocab, records, runs and trials.")
flags.DEFINE_list("objectives", ["electra", "mlm", "electra_15", "replace_mlm", "all_tokens_mlm"],
                  "gin/tasks/<name>.gin files to compare.")
flags.DEFINE_string("model_gin", "gin/models/tiny.gin", "The shared encoder configuration.")
flags.DEFINE_float("train_flops_budget", 1e13, "Train FLOPs per objective (section 5.2.2 count).")
flags.DEFINE_list("tasks", ["sst-2:1000", "mrpc:1000"], "task or task:max_train_examples.")
flags.DEFINE_integer("num_trials", 3, "Fine-tuning seeds per objective and task.")
flags.DEFINE_string("corpus", os.path.join(REPO, "data", "corpus_sample", "*.txt"),
                    "Glob of pre-training text (one paragraph per line).")
flags.DEFINE_string("glue_dir", os.path.join(REPO, "..", "shared", "data", "glue"), "GLUE root.")
flags.DEFINE_integer("vocab_size", 8000, "Vocabulary size to learn.")
FLAGS = flags.FLAGS


def pretrain(objective, records_dir, work_dir):
  """Trains (or resumes) one objective; returns (export dir, steps, train FLOPs)."""
  import gin  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  model_dir = os.path.join(work_dir, "runs", objective)
  trainer, _ = runs.run_pretraining(
      [FLAGS.model_gin, f"gin/tasks/{objective}.gin"],
      [f"TrainConfig.train_flops_budget = {FLAGS.train_flops_budget}",
       "TrainConfig.save_checkpoints_steps = 100"], records_dir, model_dir, log=logging.info)
  steps = trainer.train_config.num_train_steps
  return os.path.join(model_dir, "export"), steps, steps * trainer.train_flops(1)


def finetune(objective, export_dir, task_spec, work_dir):
  task, _, limit = task_spec.partition(":")
  config = glue.GlueConfig(
      task=task, init_checkpoint=export_dir,
      model_dir=os.path.join(work_dir, "glue", objective, task_spec.replace(":", "_")),
      data_dir=os.path.join(FLAGS.glue_dir, FOLDERS[task]), max_seq_length=64,
      num_trials=FLAGS.num_trials, max_train_examples=int(limit or 0), log_every_steps=1000)
  summary = runner_lib.Runner(config, log=logging.info).run()
  primary = summary["primary_metric"]
  split = next(iter(summary["median"]))
  spread = summary["spread"][split][primary]
  return summary["median"][split][primary], spread["min"], spread["max"]


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  work_dir = FLAGS.work_dir
  os.makedirs(work_dir, exist_ok=True)
  corpus = sorted(glob.glob(FLAGS.corpus))
  if not corpus:
    raise ValueError(f"--corpus={FLAGS.corpus} matches no file")
  records_dir = pretraining_data.vocab_and_records(work_dir, corpus, FLAGS.vocab_size, logging.info)
  rows = []
  for objective in FLAGS.objectives:
    export_dir, steps, train_flops = pretrain(objective, records_dir, work_dir)
    scores = [finetune(objective, export_dir, spec, work_dir) for spec in FLAGS.tasks]
    rows.append((objective, steps, train_flops, scores))
  print(f"\nmodel {FLAGS.model_gin}, budget {FLAGS.train_flops_budget:.3g} train FLOPs, "
        f"{FLAGS.num_trials} fine-tuning trials (median [min, max], dev, x100)")
  table = common.TableWriter(["objective", "steps", "train FLOPs", *FLAGS.tasks, "average"])
  for objective, steps, train_flops, scores in rows:
    cells = [f"{100 * m:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" for m, lo, hi in scores]
    average = 100 * np.mean([m for m, _, _ in scores])
    table.row(objective, steps, f"{train_flops:.3g}", *cells, f"{average:.1f}")


if __name__ == "__main__":
  app.run(main)
