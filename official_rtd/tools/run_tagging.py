r"""Fine-tunes an exported encoder on token tagging: part-of-speech, chunking or NER.

  run_tagging --task=ner --data_dir=../shared/data/tagging/ner_conll2003 \
      --init_checkpoint=/runs/electra_small/export --model_dir=/runs/tagging/ner --num_trials=5

Files under --data_dir by task (override with --train_file/--dev_file): pos `train.tsv`,
`dev.tsv`; chunk `train.txt` (dev: its last --carve_dev_sentences sentences); ner `eng.train`,
`eng.testa`. Writes `<model_dir>/eval_results.json` (token accuracy, or span precision/recall/F1
overall and `f1_<type>`, per trial and median) and `predictions.txt` (`word gold predicted`, the
input of the CoNLL `conlleval` script) from the best trial. Re-running resumes with the first
unfinished trial.
"""
# First: quiets TensorFlow's C++ start-up output before anything imports TensorFlow.
from official_rtd.tools import cli  # pylint: disable=unused-import
from official_rtd.tools import finetune_flags
from official_rtd.finetune import configs  # pylint: disable=g-bad-import-order

COMMAND_LINE = finetune_flags.common_spec(configs.TaggingConfig, {
    "task": "pos (token accuracy), chunk or ner (span F1).",
    "data_dir": "Directory with the task's column files.",
    "train_file": "Training file under --data_dir (or an absolute path); unset: the task's.",
    "dev_file": "Dev file under --data_dir (or an absolute path); unset: the task's.",
    "carve_dev_sentences": "Without a dev file (chunk): the last N training sentences are dev.",
    "label_column": "Column of the label (the word is column 0); -1: the last.",
    "tag_scheme": "Span tasks train on tags in this scheme (predictions are written as IOB2).",
    "window_stride": "Word pieces between the starts of two windows of a long sentence; "
                     "0: half a window.",
    "crf": "Linear-chain CRF over the words' scores, Viterbi decoding.",
    "protocol": "electra: ELECTRA's fine-tuning (the size defaults, layer-wise decay); shao: "
                "Shao's BERT PTB POS protocol (lr 5e-5, no layer-wise decay, 3 epochs; the "
                "results' spread holds the mean he reports). Flags given still win.",
    "allow_unseen_dev_tags": "Accept dev tags (span types) the training sentences lack, counted "
                             "as errors; otherwise they are refused.",
    "write_train_predictions": "Write the best trial's word logits for every training sentence "
                               "(train_predictions_<task>.npz): a teacher for a multi-task "
                               "run_glue --tasks=...,<task> (not with --crf).",
}, enums={"protocol": ["electra", "shao"]})


run = finetune_flags.tool(__name__, "run_tagging", COMMAND_LINE)


if __name__ == "__main__":
  run()
