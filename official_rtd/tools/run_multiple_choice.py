r"""Fine-tunes an exported encoder on multiple-choice reading comprehension (RACE).

  run_multiple_choice --task=race --data_dir=../shared/data/race \
      --init_checkpoint=/runs/electra_small/export --model_dir=/runs/race --num_trials=3

--data_dir holds `<split>*.jsonl` (one passage per line: id, article, questions, options,
answers) or RACE's original `<split>/{middle,high}/*.txt` layout. Writes
`<model_dir>/eval_results.json` (accuracy overall and for middle / high, per trial and median) and
`predictions.jsonl` (per question: id, level, predicted and gold letter, option probabilities)
from the best trial. Re-running resumes with the first unfinished trial.
"""
# First: quiets TensorFlow's C++ start-up output before anything imports TensorFlow.
from official_rtd.tools import cli  # pylint: disable=unused-import
from official_rtd.tools import finetune_flags
from official_rtd.finetune import configs  # pylint: disable=g-bad-import-order

COMMAND_LINE = finetune_flags.common_spec(configs.MultipleChoiceConfig, {
    "task": "race.",
    "data_dir": "Directory with the splits (JSONL or the original layout).",
    "train_splits": "Comma list of training splits (`train` reads train*.jsonl, e.g. "
                    "train_middle_sample.jsonl and train_high_sample.jsonl).",
    "dev_split": "Split evaluated at the end of each trial.",
    "max_dev_examples": "Evaluate a fixed random subset of N dev questions (0: all).",
    "protocol": "electra: [CLS] article [SEP] question+option [SEP], ELECTRA's fine-tuning; "
                "shao: Shao's BERT RACE protocol ([CLS] article [SEP] question [SEP] option "
                "[SEP], at most 384 tokens, lr 5e-5, no layer-wise decay, 3 epochs; the results' "
                "spread holds the mean he reports). Flags given still win.",
}, enums={"protocol": ["electra", "shao"]})


run = finetune_flags.tool(__name__, "run_multiple_choice", COMMAND_LINE)


if __name__ == "__main__":
  run()
