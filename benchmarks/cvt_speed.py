r"""CVT's training speed: ms per step, sentences/s and achieved GFLOP/s of the CNN-BiLSTM tagger,
parser and translator at the dissertation's shapes scaled down (Table 4.1 ÷ 4: word 100, LSTM
256/128, projection 128, hidden 128), one step = a labeled minibatch + (CVT) an unlabeled one.

Times `run_cvt`'s own loop through its progress lines only (`CvtRunner(config, log).run()` with
`CvtRunConfig` fields), so the same script times an older checkout side by side:

  python benchmarks/cvt_speed.py --models=tagger,parser
  PYTHONPATH=/tmp/old_checkout python benchmarks/cvt_speed.py --models=tagger,parser

The figure is the median of the intervals between progress lines after `--warmup_steps` (the
first steps trace and compile); FLOPs are the model's matmuls and convolutions counted
analytically (`model_flops`: forward ×3 for a training step; the unlabeled step's teacher pass
×1), so GFLOP/s says how far the step is from the arithmetic it needs.
"""
import os
import tempfile

from absl import app
from absl import flags

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
flags.DEFINE_list("models", ["tagger", "parser", "translator"], "Which models to time.")
flags.DEFINE_list("modes", ["supervised", "cvt"], "Training modes to time.")
flags.DEFINE_integer("steps", 120, "Steps per measurement.")
flags.DEFINE_integer("warmup_steps", 40, "Steps excluded from the figure (tracing, compiling).")
flags.DEFINE_integer("batch_size", 32, "Sentences per minibatch.")
flags.DEFINE_integer("threads", 1, "TensorFlow intra- and inter-op threads (0: TensorFlow's "
                     "default).")
flags.DEFINE_integer("repeats", 1, "Measurements per configuration (the median is printed).")
FLAGS = flags.FLAGS

SIZES = dict(word_dim=100, char_dim=30, lstm1_size=256, lstm2_size=128, projection_size=128,
             hidden_size=128)
MODELS = {  # name: (tasks, data_dir, unlabeled data)
    "tagger": ("chunk", os.path.join(SHARED, "tagging"), os.path.join(SHARED, "wiki",
                                                                      "wiki_00.txt")),
    "parser": ("dep", os.path.join(SHARED, "parsing", "ud_ewt"),
               os.path.join(SHARED, "wiki", "wiki_00.txt")),
    "translator": ("translate", os.path.join(SHARED, "translation", "multi30k"),
                   os.path.join(SHARED, "translation", "multi30k", "train.1.en")),
}
MAX_WORD_LENGTH, WIDTHS = 20, (2, 3, 4)


def encoder_flops(s=SIZES) -> float:
  """Forward FLOPs per source word: the char CNN and two Bi-LSTMP layers."""
  filters = [s["word_dim"] // 3 + (i < s["word_dim"] % 3) for i in range(3)]
  cnn = sum(2 * w * s["char_dim"] * f * (MAX_WORD_LENGTH - w + 1) for w, f in zip(WIDTHS, filters))
  p = s["projection_size"]

  def lstm(inputs, units):
    return 2 * (2 * (inputs + p) * 4 * units + 2 * units * p)  # two directions

  return cnn + lstm(s["word_dim"], s["lstm1_size"]) + lstm(2 * p, s["lstm2_size"])


def model_flops(model: str, mode: str, tokens: float, labels: int, s=SIZES) -> float:
  """FLOPs of one step (labeled + unlabeled) on `tokens` words per minibatch."""
  top, h = 4 * s["projection_size"], s["hidden_size"]
  if model == "parser":  # 5 edge scorers: projections + a bilinear form per (head, dep) pair
    length = 25.0
    head = lambda view: 2 * 2 * view * h + 2 * h * h * labels + 2 * length * h * labels
    primary, auxiliary = head(top), 4 * head(top // 4)
  elif model == "translator":  # decoder LSTM, attention and softmax per target word
    length = 13.0
    d = s["lstm1_size"]
    step = 2 * (s["word_dim"] + d + d) * 4 * d + 2 * length * top * d + 2 * (top + d) * d
    primary = step + 2 * d * labels
    auxiliary = 2 * (2 * length * top * d + 2 * (top + d) * d + 2 * d * labels)
  else:
    primary = 2 * (top * h + h * labels)
    auxiliary = 4 * 2 * (top // 4 * h + h * labels) + primary
  labeled = 3 * (encoder_flops(s) + primary)
  unlabeled = (encoder_flops(s) + primary) + 3 * (encoder_flops(s) + auxiliary)
  return tokens * (labeled + (unlabeled if mode != "supervised" else 0.0))


def measure(model: str, mode: str):
  import numpy as np  # pylint: disable=g-import-not-at-top

  from official_rtd.cvt import runner  # pylint: disable=g-import-not-at-top
  tasks, data_dir, unlabeled = MODELS[model]
  stamps, clock = [], common.Stopwatch()  # the seconds at each 10-step log line

  def log(line):
    if " step " in line and "/" in line:
      stamps.append(clock.seconds)

  built = runner.CvtRunner(runner.CvtRunConfig(
      tasks=tasks, data_dir=data_dir, model_dir=tempfile.mkdtemp(), mode=mode,
      unlabeled_data="" if mode == "supervised" else unlabeled, train_steps=FLAGS.steps,
      train_batch_size=FLAGS.batch_size, eval_every_steps=0, save_checkpoints_steps=0,
      log_every_steps=10, max_train_sentences=2000, **SIZES), log)
  labels = (max(len(v) for v in built.labels.values()) if hasattr(built, "labels")  # before
            else max(t.num_labels for t in built.tasks.values()))  # the task contract
  encoded = built.encoded[built.task_names[0]]  # (word ids, char ids) per sentence
  tokens = float(np.mean([len(words) for words, _ in encoded])) * FLAGS.batch_size
  built.run()
  intervals = [b - a for a, b in zip(stamps, stamps[1:])][FLAGS.warmup_steps // 10:]
  seconds = common.spread(intervals).median / 10
  return seconds, tokens, labels


def main(_):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if FLAGS.threads:
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
  print(common.cpu_summary())
  print(f"threads {FLAGS.threads or 'default'}, batch {FLAGS.batch_size}, sizes {SIZES}")
  table = common.TableWriter(["model", "mode", "ms/step", "sentences/s", "GFLOP/s"])
  for model in FLAGS.models:
    for mode in FLAGS.modes:
      runs = [measure(model, mode) for _ in range(FLAGS.repeats)]
      seconds = common.spread(r[0] for r in runs).median
      _, tokens, labels = runs[0]
      flops = model_flops(model, mode, tokens, labels)
      table.row(model, mode, f"{1000 * seconds:.1f}", f"{FLAGS.batch_size / seconds:.1f}",
                f"{flops / seconds / 1e9:.2f}")


if __name__ == "__main__":
  app.run(main)
