r"""Fine-tunes an exported encoder on dependency parsing (a Universal Dependencies treebank).

  run_parsing --data_dir=../shared/data/parsing/ud_ewt --init_checkpoint=/runs/electra/export \
      --model_dir=/runs/ud [--random_init] [--num_trials=3]

--data_dir holds one `*-ud-train.conllu` and one `*-ud-dev.conllu`. The head is CVT's edge scorer
(`finetune/parsing/task.py`). Writes `<model_dir>/eval_results.json` (UAS and LAS with and without
punctuation, per trial and median) and the best trial's `predictions.conllu`. Re-running resumes
with the first unfinished trial.
"""
# First: quiets TensorFlow's C++ start-up output before anything imports TensorFlow.
from official_rtd.tools import cli  # pylint: disable=unused-import
from official_rtd.tools import finetune_flags
from official_rtd.finetune import configs  # pylint: disable=g-bad-import-order

COMMAND_LINE = finetune_flags.common_spec(configs.ParsingConfig, {
    "task": "ud (a Universal Dependencies treebank).",
    "data_dir": "Treebank folder: one *-ud-train.conllu and one *-ud-dev.conllu.",
    "decode": "mst: the best well-formed tree (Chu-Liu-Edmonds, one word on ROOT); argmax: "
              "each word's best (head, relation), which may form cycles.",
    "projection_size": "Size of the edge scorer's ReLU head/dependent projections.",
}, enums={"decode": ["mst", "argmax"]})


run = finetune_flags.tool(__name__, "run_parsing", COMMAND_LINE)


if __name__ == "__main__":
  run()
