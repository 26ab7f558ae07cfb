r"""Fine-tunes an exported encoder on SQuAD 1.1 or 2.0 with ELECTRA's question-answering head.

  run_squad --train_file=train-v2.0.json --predict_file=dev-v2.0.json \
      --version_2_with_negative --init_checkpoint=/runs/electra_small/export \
      --model_dir=/runs/squad2 --num_trials=10

Writes `<model_dir>/predictions.json` (`{qid: text}`, `""` = no answer), for 2.0
`null_odds.json` (`{qid: no-answer logit}`; to score it with the official `evaluate-v2.0.py`, pass
`--na-prob-thresh` equal to this run's `--na_threshold`), and `eval_results.json` (EM/F1 as the
official scripts define them, HasAns/NoAns and best-threshold figures for 2.0; median over trials
and per-trial). Re-running resumes with the first unfinished trial.
"""
import dataclasses

from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("train_file", None, "SQuAD JSON to fine-tune on.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict and score (e.g. dev-v2.0.json).")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: some questions are unanswerable "
                  "(adds the answerability classifier and null_odds.json).")
flags.DEFINE_string("init_checkpoint", None, "An encoder export (<pretraining model_dir>/export).")
flags.DEFINE_string("model_dir", None, "Where trials, predictions and eval_results.json go.")
flags.DEFINE_bool("random_init", False, "Same encoder shape, randomly initialized (a baseline).")
flags.DEFINE_enum("model_size", "auto", ["auto", "small", "base", "large"],
                  "Picks the Table 5.2 defaults; auto: by hidden size (<=256 small, <=768 base).")
flags.DEFINE_integer("max_seq_length", 512, "Tokens per window ([CLS] question [SEP] context [SEP]).")
flags.DEFINE_integer("doc_stride", 128, "Context tokens between the starts of two windows.")
flags.DEFINE_integer("max_query_length", 64, "Question tokens kept (the rest are cut).")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer span predicted, in word pieces.")
flags.DEFINE_bool("joint_prediction", True, "ELECTRA/XLNet head: end conditioned on the start, "
                  "beam search. False: BERT's independent start/end head.")
flags.DEFINE_integer("beam_size", 20, "Starts (and ends per start) kept by the joint head.")
flags.DEFINE_integer("n_best_size", 20, "Starts and ends considered by the independent head.")
flags.DEFINE_float("answerable_weight", 0.5, "Weight of the answerability loss (2.0).")
flags.DEFINE_float("na_threshold", -2.75, "2.0: answer \"\" when the no-answer logit exceeds this.")
flags.DEFINE_integer("train_batch_size", 32, "Batch size.")
flags.DEFINE_integer("eval_batch_size", 32, "Prediction batch size.")
flags.DEFINE_float("num_train_epochs", 2.0, "Epochs over the training windows.")
flags.DEFINE_float("learning_rate", None, "Default 3e-4 small / 1e-4 base / 5e-5 large.")
flags.DEFINE_float("layerwise_lr_decay", None, "Default 0.8 (0.9 large).")
flags.DEFINE_enum("lr_decay_convention", "electra", ["electra", "corrected"],
                  "See official_rtd/training/layerwise_decay.py.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps of linear warmup.")
flags.DEFINE_float("weight_decay_rate", 0.0, "AdamW weight decay (0 in the dissertation).")
flags.DEFINE_integer("num_trials", 1, "Fine-tuning runs with seeds seed..seed+N-1 (papers: 10).")
flags.DEFINE_integer("seed", 0, "First trial's seed.")
flags.DEFINE_integer("max_train_examples", 0, "Use a random subset of the training questions.")
flags.DEFINE_integer("log_every_steps", 100, "Progress line interval.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"],
                  "Compute precision; variables stay float32, float16 adds dynamic loss scaling.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile each step's forward and backward pass.")
flags.mark_flags_as_required(["train_file", "predict_file", "init_checkpoint", "model_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.finetune import squad  # pylint: disable=g-import-not-at-top
  values = {f.name: FLAGS[f.name].value for f in dataclasses.fields(squad.SquadConfig)}
  summary = squad.SquadRunner(squad.SquadConfig(**values), log=logging.info).run()
  logging.info("median results: %s (written to %s/eval_results.json)", summary["median"],
               FLAGS.model_dir)


def run():
  cli.run_main(main, "run_squad")


if __name__ == "__main__":
  run()
