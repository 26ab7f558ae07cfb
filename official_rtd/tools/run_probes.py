r"""Frozen-feature linear probes of an encoder export, each next to a random initialisation.

  run_probes --init_checkpoint=/runs/electra/export --pos_data_dir=../shared/data/tagging/pos_ptb \
      --glue_data_dir=../shared/data/glue/SST-2 --output_file=/tmp/probes.json

Probes (logistic regression on features the encoder computes and never updates, dev accuracy):
`pos` (PTB part-of-speech tags from each word's first word piece, `--pos_data_dir` with
`train.tsv` / `dev.tsv`) and a GLUE sentence classification task (`--glue_task`, mean-pooled
sequence output over `--glue_max_train_examples` training rows) and `ud` (dependency parsing: a
bilinear head selector on each word's first-piece vector, `--ud_data_dir` with `*-ud-train.conllu`
/ `*-ud-dev.conllu`, dev UAS; `probes/parsing_probe.py`). Every probe also runs on an
encoder of the export's shape with random weights (seeds `--seed` ..), the baseline its figure
needs. Every block's output is probed (`--all_layers`): each figure is the last block's, the best
block's beside it (`<name>_best_layer`, `<name>_best_layer_index`). Writes one JSON object:
`{"pretrained": {...}, "random_init": {...}}`.
"""
import dataclasses

from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.utils import textio


@dataclasses.dataclass(frozen=True)
class RunProbesConfig:
  init_checkpoint: str
  output_file: str
  pos_data_dir: str = ""
  glue_data_dir: str = ""
  ud_data_dir: str = ""
  ud_max_train_sentences: int = 2000
  glue_task: str = "sst-2"
  glue_max_train_examples: int = 2000
  pos_max_train_sentences: int = 0
  max_seq_length: int = 128
  random_init_seeds: int = 1
  seed: int = 0
  all_layers: bool = True
  overwrite: bool = False


COMMAND_LINE = cli.Flags(RunProbesConfig, {
    "init_checkpoint": "An encoder export (<pretraining model_dir>/export, or "
                       "import_checkpoint's).",
    "pos_data_dir": "PTB POS folder (train.tsv, dev.tsv); unset: no POS probe.",
    "glue_data_dir": "A GLUE task folder (train.tsv, dev.tsv); unset: no sentence probe.",
    "ud_data_dir": "A Universal Dependencies treebank folder (*-ud-train.conllu, "
                   "*-ud-dev.conllu); unset: no parsing probe.",
    "ud_max_train_sentences": "Training sentences of the parsing probe (0: all).",
    "glue_task": "The GLUE classification task in --glue_data_dir.",
    "glue_max_train_examples": "Training rows of the GLUE probe.",
    "pos_max_train_sentences": "Training sentences of the POS probe (0: all).",
    "max_seq_length": "Tokens per window / example (at most the encoder's positions).",
    "random_init_seeds": "Random initialisations probed.",
    "seed": "Seed of the probes' subsets and of the first random initialisation.",
    "all_layers": "Probe every block's output (one classifier each): each figure is the last "
                  "block's, with the best block's as <name>_best_layer and its number (1: the "
                  "first) as <name>_best_layer_index; --noall_layers: the last block only.",
    "output_file": "Where the JSON results go.",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, ranges={"glue_max_train_examples": (1, None, True), "ud_max_train_sentences": (0, None, True),
           "pos_max_train_sentences": (0, None, True),
           "max_seq_length": (3, None, True), "random_init_seeds": (0, None, True)})


def main(config):
  import time  # pylint: disable=g-import-not-at-top

  import numpy as np  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top

  from official_rtd.interop import export as export_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.probes import parsing_probe  # pylint: disable=g-import-not-at-top
  from official_rtd.probes import probe as probe_lib  # pylint: disable=g-import-not-at-top
  if not (config.pos_data_dir or config.glue_data_dir or config.ud_data_dir):
    raise ValueError("give at least one of --pos_data_dir, --glue_data_dir and --ud_data_dir")
  export = export_lib.Export(config.init_checkpoint)
  positions = export.encoder_config["max_position_embeddings"]
  if config.max_seq_length > positions:
    raise ValueError(f"--max_seq_length={config.max_seq_length} exceeds the encoder's "
                     f"{positions} positions")
  cli.claim_output_file(config.output_file, config.overwrite)
  vocab, lower = export.vocab, export.do_lower_case
  probes = []
  if config.pos_data_dir:
    probes.append(probe_lib.TokenProbe("pos", config.pos_data_dir, vocab, lower,
                                       config.pos_max_train_sentences, config.max_seq_length,
                                       config.seed, config.all_layers))
  if config.glue_data_dir:
    probes.append(probe_lib.LinearProbe(config.glue_task, config.glue_data_dir, vocab, lower,
                                        config.glue_max_train_examples, config.max_seq_length,
                                        config.seed, config.all_layers))
  if config.ud_data_dir:
    probes.append(parsing_probe.ParsingProbe(config.ud_data_dir, vocab, lower,
                                             config.ud_max_train_sentences, config.max_seq_length,
                                             config.seed, all_layers=config.all_layers))
  encoders = [("pretrained", None)] + [("random_init", config.seed + k)
                                       for k in range(config.random_init_seeds)]
  results = {"init_checkpoint": config.init_checkpoint, "pretrained": {}, "random_init": {},
             "random_init_seeds": config.random_init_seeds}
  runs = []
  for name, seed in encoders:
    if seed is not None:
      tf_keras.utils.set_random_seed(seed)
    encoder = export.encoder(restore=seed is None)
    figures = {}
    for probe in probes:
      start = time.time()
      figures.update(probe(encoder))
      logging.info("%s%s: %s (%.0f s)", name, "" if seed is None else f" seed {seed}",
                   figures, time.time() - start)
    runs.append((name, figures))
  results["pretrained"] = runs[0][1]
  random_runs = [figures for name, figures in runs[1:]]
  for key in (random_runs[0] if random_runs else {}):
    values = [figures[key] for figures in random_runs]
    results["random_init"][key] = float(np.median(values))
    results["random_init"][key + "_all"] = values
  textio.write_json_atomic(config.output_file, results)
  for key, value in results["pretrained"].items():
    baseline = results["random_init"].get(key)
    print(f"{key}: pretrained {value:.4f}" +
          ("" if baseline is None else f", random init {baseline:.4f}"))


def run():
  cli.run_main(main, "run_probes", COMMAND_LINE)


if __name__ == "__main__":
  run()
