r"""Is pre-training visible downstream? Fine-tunes an encoder export and a randomly initialized
encoder of the same shape on GLUE tasks with `run_glue`'s protocol and prints median dev scores.

  python benchmarks/glue_pretraining_value.py --init_checkpoint=/tmp/qs5k/model/export \
      --tasks=sst-2:2000,mrpc --num_trials=3

`task:N` fine-tunes on a random N-example subset. Results are recorded in benchmarks/RESULTS.md.
"""
import os
import tempfile

from absl import app
from absl import flags
from absl import logging

import common
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.glue import task as glue

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = {"cola": "CoLA", "sst-2": "SST-2", "mrpc": "MRPC", "sts-b": "STS-B", "rte": "RTE"}
flags.DEFINE_string("init_checkpoint", None, "Encoder export to evaluate.")
flags.DEFINE_string("tasks", "sst-2:2000,mrpc", "Comma list of task or task:max_train_examples.")
flags.DEFINE_string("glue_dir", os.path.join(REPO, "..", "shared", "data", "glue"), "GLUE root.")
flags.DEFINE_integer("num_trials", 3, "Seeds per setting.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example.")
flags.mark_flag_as_required("init_checkpoint")
FLAGS = flags.FLAGS


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  out = tempfile.mkdtemp()
  rows = []
  for spec in FLAGS.tasks.split(","):
    task, _, limit = spec.partition(":")
    for random_init in (False, True):
      config = glue.GlueConfig(
          task=task, init_checkpoint=FLAGS.init_checkpoint,
          model_dir=os.path.join(out, f"{task}_{'random' if random_init else 'pretrained'}"),
          data_dir=os.path.join(FLAGS.glue_dir, FOLDERS[task]), random_init=random_init,
          max_seq_length=FLAGS.max_seq_length, num_trials=FLAGS.num_trials,
          max_train_examples=int(limit or 0), log_every_steps=1000)
      summary = runner_lib.Runner(config, log=logging.info).run()
      primary = summary["primary_metric"]
      for split, values in summary["median"].items():
        spread = summary["spread"][split][primary]
        rows.append((task, limit or "all", "random" if random_init else "pre-trained", split,
                     primary, values[primary], spread["min"], spread["max"]))
  print(f"init_checkpoint: {FLAGS.init_checkpoint}; {FLAGS.num_trials} trials each")
  table = common.TableWriter(["task", "train examples", "encoder", "split", "metric", "median",
                              "min", "max"])
  for row in rows:
    table.row(*row[:5], *[f"{v:.4f}" for v in row[5:]])


if __name__ == "__main__":
  app.run(main)
