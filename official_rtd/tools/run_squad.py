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
# First: quiets TensorFlow's C++ start-up output before anything imports TensorFlow.
from official_rtd.tools import cli  # pylint: disable=unused-import
from official_rtd.tools import finetune_flags
from official_rtd.finetune import configs  # pylint: disable=g-bad-import-order

COMMAND_LINE = finetune_flags.common_spec(configs.SquadConfig, {
    "train_file": "SQuAD JSON to fine-tune on.",
    "predict_file": "SQuAD JSON to predict and score (e.g. dev-v2.0.json).",
    "version_2_with_negative": "SQuAD 2.0: some questions are unanswerable (adds the "
                               "answerability classifier and null_odds.json).",
    "doc_stride": "Context tokens between the starts of two windows.",
    "max_query_length": "Question tokens kept (the rest are cut).",
    "max_answer_length": "Longest answer span predicted, in word pieces.",
    "joint_prediction": "ELECTRA/XLNet head: end conditioned on the start, beam search. False: "
                        "BERT's independent start/end head.",
    "beam_size": "Starts (and ends per start) kept by the joint head.",
    "n_best_size": "Starts and ends considered by the independent head.",
    "answerable_weight": "Weight of the answerability loss (2.0).",
    "na_threshold": "2.0: answer \"\" when the no-answer logit exceeds this.",
})


run = finetune_flags.tool(__name__, "run_squad", COMMAND_LINE)


if __name__ == "__main__":
  run()
