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
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

from official_rtd.tools import finetune_flags  # pylint: disable=g-bad-import-order

finetune_flags.define_common_flags()

flags.DEFINE_string("train_file", None, "SQuAD JSON to fine-tune on.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict and score (e.g. dev-v2.0.json).")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: some questions are unanswerable "
                  "(adds the answerability classifier and null_odds.json).")
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
flags.mark_flags_as_required(["train_file", "predict_file", "init_checkpoint", "model_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.finetune import squad  # pylint: disable=g-import-not-at-top
  config = finetune_flags.config_from_flags(squad.SquadConfig)
  summary = squad.SquadRunner(config, log=logging.info).run()
  logging.info("median results: %s (written to %s/eval_results.json)", summary["median"],
               FLAGS.model_dir)


def run():
  cli.run_main(main, "run_squad")


if __name__ == "__main__":
  run()
