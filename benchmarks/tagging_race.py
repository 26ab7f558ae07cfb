r"""Is pre-training visible on token tagging and multiple choice? `run_tagging` (PTB POS, all of
train, dev) and `run_multiple_choice` (RACE, a training subset) from an encoder export and from a
random initialisation of the same shape, N seeds each: median / min / max dev figures and training
examples/s. `--mode=memory` instead measures the peak RSS of RACE fine-tuning at the default batch
(16 questions × 4 options × 512 tokens; `--memory_batch_size` another) with an
ELECTRA-Small-shaped encoder.

  python benchmarks/tagging_race.py --init_checkpoint=/tmp/qs5k/model/export
  python benchmarks/tagging_race.py --mode=memory

Results are recorded in benchmarks/RESULTS.md.
"""
import dataclasses
import os
import re
import resource
import tempfile
import types

from absl import app
from absl import flags
from absl import logging

import common
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.race import task as multiple_choice
from official_rtd.finetune.tagging import task as tagging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
flags.DEFINE_enum("mode", "accuracy", ["accuracy", "memory"], "What to measure.")
flags.DEFINE_string("init_checkpoint", None, "Encoder export to evaluate (accuracy mode).")
flags.DEFINE_list("tasks", ["pos", "race"], "pos and/or race.")
flags.DEFINE_integer("num_trials", 3, "Seeds per setting.")
flags.DEFINE_integer("race_train_examples", 4000, "RACE training questions (a random subset).")
flags.DEFINE_integer("race_dev_examples", 0, "RACE dev questions (0: all 4,887).")
flags.DEFINE_integer("memory_steps", 4, "Training steps of the memory measurement.")
flags.DEFINE_integer("memory_batch_size", 0, "Questions per batch of the memory measurement "
                     "(0: run_multiple_choice's default).")
FLAGS = flags.FLAGS


def runs(task, out):
  """(random_init, config) for the pre-trained export and for a random init of its shape."""
  for random_init in (False, True):
    shared_settings = dict(init_checkpoint=FLAGS.init_checkpoint, random_init=random_init,
                  num_trials=FLAGS.num_trials, log_every_steps=50,
                  model_dir=os.path.join(out, f"{task}_{'random' if random_init else 'pre'}"))
    if task == "pos":
      yield random_init, tagging.TaggingConfig(
          task="pos", data_dir=os.path.join(SHARED, "tagging", "pos_ptb"), **shared_settings)
    else:
      yield random_init, multiple_choice.MultipleChoiceConfig(
          data_dir=os.path.join(SHARED, "race"), max_train_examples=FLAGS.race_train_examples,
          max_dev_examples=FLAGS.race_dev_examples, **shared_settings)


def accuracy_mode():
  out = tempfile.mkdtemp()
  rows = []
  for task in FLAGS.tasks:
    for random_init, config in runs(task, out):
      rates = []

      def log(line, rates=rates):
        logging.info(line)
        match = re.search(r"step (\d+)/\1 .*examples/s=([\d.]+)", line)
        if match:
          rates.append(float(match.group(2)))

      watch = common.Stopwatch()
      runner = runner_lib.Runner(config, log=log)
      summary = runner.run()
      primary = summary["primary_metric"]
      spread = summary["spread"][primary]
      extra = {k: v for k, v in summary["median"].items() if k.startswith("accuracy_")}
      rows.append((task, "random init" if random_init else "pre-trained", primary,
                   summary["median"][primary], spread["min"], spread["max"],
                   sum(rates) / max(len(rates), 1), summary["trials"][0]["train_steps"],
                   (watch.seconds) / FLAGS.num_trials, extra))
  print(f"init_checkpoint: {FLAGS.init_checkpoint}; {FLAGS.num_trials} trials each")
  table = common.TableWriter(["task", "encoder", "metric", "median", "min", "max",
                              "train examples/s", "steps", "s/trial", "median by level"])
  for task, encoder, metric, median, low, high, rate, steps, seconds, extra in rows:
    levels = ", ".join(f"{k[9:]} {v:.4f}" for k, v in extra.items())
    table.row(task, encoder, metric, f"{median:.4f}", f"{low:.4f}", f"{high:.4f}", f"{rate:.1f}",
              steps, f"{seconds:.0f}", levels)


def memory_mode():
  """Peak RSS of a few RACE training steps at the default batch with a Small-shaped encoder."""
  from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import export  # pylint: disable=g-import-not-at-top
  from official_rtd.modeling import encoder_config  # pylint: disable=g-import-not-at-top
  out = tempfile.mkdtemp()
  vocab = vocab_lib.load_vocab(os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"))
  small = encoder_config.EncoderConfig(vocab_size=vocab.size, hidden_size=256, num_layers=12,
                        num_attention_heads=4, intermediate_size=1024, embedding_size=128,
                        max_position_embeddings=512)
  encoder = export.build_encoder({"encoder": dataclasses.asdict(small)})
  export_dir = export.export_encoder(types.SimpleNamespace(exported_encoder=encoder,
                                                           name="electra"),
                                     vocab, os.path.join(out, "small"), max_seq_length=512)
  defaults = multiple_choice.MultipleChoiceConfig(data_dir="", init_checkpoint="", model_dir="")
  batch = FLAGS.memory_batch_size or defaults.train_batch_size
  before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  config = multiple_choice.MultipleChoiceConfig(
      data_dir=os.path.join(SHARED, "race"), init_checkpoint=export_dir,
      model_dir=os.path.join(out, "race"), random_init=True,
      max_train_examples=batch * FLAGS.memory_steps, num_train_epochs=1, train_batch_size=batch,
      max_dev_examples=defaults.eval_batch_size, log_every_steps=1)
  watch = common.Stopwatch()
  runner_lib.Runner(config, log=logging.info).run()
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  print(f"RACE, ELECTRA-Small shape (12 layers, hidden 256), batch {batch} "
        f"questions x 4 options x {defaults.max_seq_length} tokens, eval batch "
        f"{defaults.eval_batch_size}: peak RSS {peak:.0f} MiB (before fine-tuning {before:.0f} "
        f"MiB), {FLAGS.memory_steps} steps + eval in {watch.seconds:.0f}s")


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  if FLAGS.mode == "memory":
    memory_mode()
  else:
    if not FLAGS.init_checkpoint:
      raise app.UsageError("--init_checkpoint is required in accuracy mode")
    accuracy_mode()


if __name__ == "__main__":
  app.run(main)
