r"""Frozen-feature linear probes of an encoder export, each next to a random initialisation.

  run_probes --init_checkpoint=/runs/electra/export --pos_data_dir=../shared/data/tagging/pos_ptb \
      --glue_data_dir=../shared/data/glue/SST-2 --output_file=/tmp/probes.json

Probes (logistic regression on features the encoder computes and never updates, dev accuracy):
`pos` (PTB part-of-speech tags from each word's first word piece, `--pos_data_dir` with
`train.tsv` / `dev.tsv`) and a GLUE sentence classification task (`--glue_task`, mean-pooled
sequence output over `--glue_max_train_examples` training rows). Every probe also runs on an
encoder of the export's shape with random weights (seeds `--seed` ..), the baseline its figure
needs. Writes one JSON object: `{"pretrained": {...}, "random_init": {...}}`.
"""
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("init_checkpoint", None, "An encoder export (<pretraining model_dir>/export, "
                    "or import_checkpoint's).")
flags.DEFINE_string("pos_data_dir", None, "PTB POS folder (train.tsv, dev.tsv); unset: no POS "
                    "probe.")
flags.DEFINE_string("glue_data_dir", None, "A GLUE task folder (train.tsv, dev.tsv); unset: no "
                    "sentence probe.")
flags.DEFINE_string("glue_task", "sst-2", "The GLUE classification task in --glue_data_dir.")
flags.DEFINE_integer("glue_max_train_examples", 2000, "Training rows of the GLUE probe (>= 1).",
                     lower_bound=1)
flags.DEFINE_integer("pos_max_train_sentences", 0, "Training sentences of the POS probe (0: "
                     "all).", lower_bound=0)
flags.DEFINE_integer("max_seq_length", 128, "Tokens per window / example (>= 3, at most the "
                     "encoder's positions).", lower_bound=3)
flags.DEFINE_integer("random_init_seeds", 1, "Random initialisations probed (>= 0).",
                     lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of the probes' subsets and of the first random "
                     "initialisation.")
flags.DEFINE_string("output_file", None, "Where the JSON results go.")
cli.define_overwrite_flag("--output_file")
flags.mark_flags_as_required(["init_checkpoint", "output_file"])
FLAGS = flags.FLAGS


def main(_):
  import time  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official_rtd.data import records  # pylint: disable=g-import-not-at-top
  from official_rtd.finetune import probe as probe_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import export as export_lib  # pylint: disable=g-import-not-at-top
  if not FLAGS.pos_data_dir and not FLAGS.glue_data_dir:
    raise ValueError("give --pos_data_dir, --glue_data_dir or both")
  export = export_lib.Export(FLAGS.init_checkpoint)
  positions = export.encoder_config["max_position_embeddings"]
  if FLAGS.max_seq_length > positions:
    raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the encoder's "
                     f"{positions} positions")
  cli.claim_output_file(FLAGS.output_file, FLAGS.overwrite)
  vocab, lower = export.vocab, export.do_lower_case
  probes = []
  if FLAGS.pos_data_dir:
    probes.append(probe_lib.TokenProbe("pos", FLAGS.pos_data_dir, vocab, lower,
                                       FLAGS.pos_max_train_sentences, FLAGS.max_seq_length,
                                       FLAGS.seed))
  if FLAGS.glue_data_dir:
    probes.append(probe_lib.LinearProbe(FLAGS.glue_task, FLAGS.glue_data_dir, vocab, lower,
                                        FLAGS.glue_max_train_examples, FLAGS.max_seq_length,
                                        FLAGS.seed))
  encoders = [("pretrained", None)] + [("random_init", FLAGS.seed + k)
                                       for k in range(FLAGS.random_init_seeds)]
  results = {"init_checkpoint": FLAGS.init_checkpoint, "pretrained": {}, "random_init": {},
             "random_init_seeds": FLAGS.random_init_seeds}
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
  records.write_json_atomic(FLAGS.output_file, results)
  for key, value in results["pretrained"].items():
    baseline = results["random_init"].get(key)
    print(f"{key}: pretrained {value:.4f}" +
          ("" if baseline is None else f", random init {baseline:.4f}"))


def run():
  cli.run_main(main, "run_probes")


if __name__ == "__main__":
  run()
