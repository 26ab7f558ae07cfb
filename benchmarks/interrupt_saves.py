r"""An interrupt during a checkpoint save, as a user's Ctrl-C would land: `run_pretraining` (tiny
ELECTRA, a save every 20 steps) gets SIGINT at several delays after the log line of step 40 (a
save step); after each run, what the checkpoint list names and what debris is left.

  python benchmarks/interrupt_saves.py --work_dir=/tmp/irq
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

from absl import app
from absl import flags

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_string("work_dir", None, "Where the records and the runs go.")
flags.DEFINE_list("delays", ["0", "0.02", "0.05", "0.1", "0.15", "0.2"],
                  "Seconds after the step-40 line at which SIGINT is sent (one run each).")
FLAGS = flags.FLAGS


def main(_):
  print(common.cpu_summary())  # where the signal lands depends on the machine's speed
  sys.path.insert(0, REPO)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from tests.training.test_trainer import make_records  # pylint: disable=g-import-not-at-top
  records = os.path.join(FLAGS.work_dir, "records")
  if not os.path.isdir(records):
    make_records(records, paragraphs=150)
  for attempt, delay in enumerate(float(d) for d in FLAGS.delays):
    model_dir = os.path.join(FLAGS.work_dir, f"run{attempt}")
    shutil.rmtree(model_dir, ignore_errors=True)
    process = subprocess.Popen(
        ["run_pretraining", "--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/electra.gin",
         f"--input_records={records}", f"--model_dir={model_dir}",
         "--gin_param=TrainConfig.train_batch_size = 8",
         "--gin_param=TrainConfig.num_train_steps = 400",
         "--gin_param=TrainConfig.save_checkpoints_steps = 20",
         "--gin_param=TrainConfig.log_every_steps = 20"],
        cwd=REPO, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
      if "step 40/" in line:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        break
    process.stderr.read()
    process.wait()
    state = tf.train.get_checkpoint_state(model_dir)
    listed = list(state.all_model_checkpoint_paths) if state else []
    data = {os.path.basename(p).split(".")[0] for p in glob.glob(f"{model_dir}/ckpt-*.data*")}
    index = {os.path.basename(p).split(".")[0] for p in glob.glob(f"{model_dir}/ckpt-*.index")}
    print(f"delay {delay}: exit {process.returncode}; listed "
          f"{[os.path.basename(c) for c in listed]}; listed without index "
          f"{[c for c in listed if not os.path.isfile(c + '.index')]}; temp debris "
          f"{[os.path.basename(p) for p in glob.glob(model_dir + '/*temp*')]}; data without index "
          f"{sorted(data - index)}", flush=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("work_dir")
  app.run(main)
