r"""Does CVT beat supervised training here? (dissertation §4.3, Table 4.2 at CPU scale)

Trains the CNN-BiLSTM tagger with `run_cvt`'s runner in three modes (supervised only, word
dropout, CVT) on a task with a limited number of labeled sentences (the semi-supervised setting)
and the shipped Gutenberg corpus as unlabeled data, N seeds each, and prints the median / min /
max dev figure (span F1 for chunking, accuracy for POS) with the EMA weights.

  python benchmarks/cvt.py --tasks=chunk --max_train_sentences=1000 --train_steps=800

Results are recorded in benchmarks/RESULTS.md.
"""
import os
import tempfile

from absl import app
from absl import flags
from absl import logging

import common
from official_rtd.cvt import runner

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
flags.DEFINE_string("tasks", "chunk", "Tagging task(s), comma list (several: multi-task).")
flags.DEFINE_list("modes", ["supervised", "word_dropout", "cvt"], "Modes to compare.")
flags.DEFINE_integer("max_train_sentences", 1000, "Labeled sentences per task (0: all).")
flags.DEFINE_integer("train_steps", 800, "Labeled steps per run.")
flags.DEFINE_integer("batch_size", 32, "Sentences per minibatch.")
flags.DEFINE_integer("num_trials", 3, "Seeds per mode.")
flags.DEFINE_string("unlabeled_data", os.path.join(SHARED, "corpus", "gutenberg_dev_0*.txt"),
                    "Unlabeled corpus.")
flags.DEFINE_integer("word_dim", 90, "Small model: word embedding size.")
flags.DEFINE_integer("lstm1_size", 128, "Small model: first Bi-LSTM size.")
flags.DEFINE_integer("lstm2_size", 64, "Small model: second Bi-LSTM size.")
flags.DEFINE_integer("projection_size", 64, "Small model: LSTM projection size.")
flags.DEFINE_integer("hidden_size", 64, "Small model: prediction modules' hidden size.")
FLAGS = flags.FLAGS


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  out = tempfile.mkdtemp()
  rows = []
  for mode in FLAGS.modes:
    watch = common.Stopwatch()
    summary = runner.CvtRunner(runner.CvtRunConfig(
        tasks=FLAGS.tasks, data_dir=os.path.join(SHARED, "tagging"),
        model_dir=os.path.join(out, mode), mode=mode,
        unlabeled_data="" if mode == "supervised" else FLAGS.unlabeled_data,
        word_dim=FLAGS.word_dim, lstm1_size=FLAGS.lstm1_size, lstm2_size=FLAGS.lstm2_size,
        projection_size=FLAGS.projection_size, hidden_size=FLAGS.hidden_size,
        train_steps=FLAGS.train_steps, train_batch_size=FLAGS.batch_size,
        max_train_sentences=FLAGS.max_train_sentences, eval_every_steps=0,
        save_checkpoints_steps=0, log_every_steps=200, num_trials=FLAGS.num_trials),
        logging.info).run()
    for task, metric in summary["primary_metrics"].items():
      spread = summary["spread"][task][metric]
      rows.append((task, mode, metric, summary["median"][task][metric], spread["min"],
                   spread["max"], watch.seconds / FLAGS.num_trials / 60))
  print(f"{FLAGS.max_train_sentences} labeled sentences per task, {FLAGS.train_steps} steps of "
        f"{FLAGS.batch_size}, {FLAGS.num_trials} seeds; model word {FLAGS.word_dim}, LSTM "
        f"{FLAGS.lstm1_size}/{FLAGS.lstm2_size}, projection {FLAGS.projection_size}")
  table = common.TableWriter(["task", "mode", "metric", "median", "min", "max", "minutes/run"])
  for task, mode, metric, median, low, high, minutes in rows:
    table.row(task, mode, metric, f"{median:.4f}", f"{low:.4f}", f"{high:.4f}", f"{minutes:.1f}")


if __name__ == "__main__":
  app.run(main)
