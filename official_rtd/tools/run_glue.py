r"""Fine-tunes an exported encoder on a GLUE task with the ELECTRA protocol.

  run_glue --task=rte --data_dir=../shared/data/glue/RTE \
      --init_checkpoint=/runs/electra_small/export --model_dir=/runs/glue/rte --num_trials=10

Writes `<model_dir>/eval_results.json` (per-trial and median dev metrics, spread, flags) and, with
`--do_predict`, `<TASK>.tsv` test predictions in the GLUE submission format. Re-running resumes
with the first unfinished trial.
"""
import dataclasses

from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("task", None, "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte or wnli.")
flags.DEFINE_string("data_dir", "", "Directory with the task's GLUE train.tsv/dev.tsv(/test.tsv).")
flags.DEFINE_string("tfds_data_dir", "", "A TFDS data dir already holding glue/<task> "
                    "(never downloads).")
flags.DEFINE_string("init_checkpoint", None, "An encoder export (<pretraining model_dir>/export).")
flags.DEFINE_string("model_dir", None, "Where trials, eval_results.json and predictions go.")
flags.DEFINE_bool("random_init", False, "Same encoder shape, randomly initialized (a baseline).")
flags.DEFINE_enum("model_size", "auto", ["auto", "small", "base", "large"],
                  "Picks the Table 5.2 defaults; auto: by hidden size (<=256 small, <=768 base).")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example.")
flags.DEFINE_integer("train_batch_size", 32, "Batch size.")
flags.DEFINE_integer("eval_batch_size", 128, "Evaluation batch size.")
flags.DEFINE_float("num_train_epochs", None, "Default 3 (10 for RTE and STS-B).")
flags.DEFINE_float("learning_rate", None, "Default 3e-4 small / 1e-4 base / 5e-5 large.")
flags.DEFINE_float("layerwise_lr_decay", None, "Default 0.8 (0.9 large).")
flags.DEFINE_enum("lr_decay_convention", "electra", ["electra", "corrected"],
                  "electra: the original code's exponents (top layer lr*d^2); corrected: top "
                  "layer lr*d. See official_rtd/training/layerwise_decay.py.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps of linear warmup.")
flags.DEFINE_float("weight_decay_rate", 0.0, "AdamW weight decay (0 for GLUE in the papers).")
flags.DEFINE_integer("num_trials", 1, "Fine-tuning runs with seeds seed..seed+N-1 (papers: 10).")
flags.DEFINE_integer("seed", 0, "First trial's seed.")
flags.DEFINE_bool("double_unordered", False, "MRPC/STS-B: train on both sentence orders and "
                  "average both orders' predictions.")
flags.DEFINE_integer("max_train_examples", 0, "Use a random subset of the training set (0: all).")
flags.DEFINE_bool("do_predict", False, "Also write test-set predictions (<TASK>.tsv).")
flags.DEFINE_integer("log_every_steps", 100, "Progress line interval.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"],
                  "Compute precision; variables stay float32, float16 adds dynamic loss scaling.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile each step's forward and backward pass.")
flags.mark_flags_as_required(["task", "init_checkpoint", "model_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.finetune import glue  # pylint: disable=g-import-not-at-top
  values = {f.name: FLAGS[f.name].value for f in dataclasses.fields(glue.GlueConfig)}
  summary = glue.GlueRunner(glue.GlueConfig(**values), log=logging.info).run()
  logging.info("median dev results: %s (written to %s/eval_results.json)", summary["median"],
               FLAGS.model_dir)


def run():
  cli.run_main(main, "run_glue")


if __name__ == "__main__":
  run()
