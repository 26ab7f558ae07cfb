r"""Fine-tunes an exported encoder on dependency parsing (a Universal Dependencies treebank).

  run_parsing --data_dir=../shared/data/parsing/ud_ewt --init_checkpoint=/runs/electra/export \
      --model_dir=/runs/ud [--random_init] [--num_trials=3]

--data_dir holds one `*-ud-train.conllu` and one `*-ud-dev.conllu`. The head is CVT's edge scorer
(`finetune/parsing.py`). Writes `<model_dir>/eval_results.json` (UAS and LAS with and without
punctuation, per trial and median) and the best trial's `predictions.conllu`. Re-running resumes
with the first unfinished trial.
"""
from absl import logging

from official_rtd.finetune import configs
from official_rtd.tools import cli
from official_rtd.tools import finetune_flags

COMMAND_LINE = finetune_flags.common_spec(configs.ParsingConfig, {
    "task": "ud (a Universal Dependencies treebank).",
    "data_dir": "Treebank folder: one *-ud-train.conllu and one *-ud-dev.conllu.",
    "decode": "mst: the best well-formed tree (Chu-Liu-Edmonds, one word on ROOT); argmax: "
              "each word's best (head, relation), which may form cycles.",
    "projection_size": "Size of the edge scorer's ReLU head/dependent projections.",
}, enums={"decode": ["mst", "argmax"]})


def main(config):
  from official_rtd.finetune import parsing  # pylint: disable=g-import-not-at-top,unused-import
  from official_rtd.finetune import runner  # pylint: disable=g-import-not-at-top
  summary = runner.Runner(config, log=logging.info).run()
  logging.info("median dev results: %s (written to %s/eval_results.json)", summary["median"],
               config.model_dir)


def run():
  cli.run_main(main, "run_parsing", COMMAND_LINE)


if __name__ == "__main__":
  run()
