r"""Fine-tunes an exported encoder on a GLUE task with the ELECTRA protocol.

  run_glue --task=rte --data_dir=../shared/data/glue/RTE \
      --init_checkpoint=/runs/electra_small/export --model_dir=/runs/glue/rte --num_trials=10

Writes `<model_dir>/eval_results.json` (per-trial and median dev metrics, spread, flags) and, with
`--do_predict`, `<TASK>.tsv` test predictions in the GLUE submission format. Re-running resumes
with the first unfinished trial.
"""
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

from official_rtd.finetune import configs  # pylint: disable=g-bad-import-order
from official_rtd.tools import finetune_flags

finetune_flags.define_common_flags(configs.GlueConfig)
finetune_flags.define_flags(configs.GlueConfig, {
    "task": "cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte or wnli.",
    "data_dir": "Directory with the task's GLUE train.tsv/dev.tsv(/test.tsv).",
    "tfds_data_dir": "A TFDS data dir already holding glue/<task> (never downloads).",
    "double_unordered": "MRPC/STS-B: train on both sentence orders and average both orders' "
                        "predictions.",
    "do_predict": "Also write test-set predictions (<TASK>.tsv).",
})
flags.mark_flags_as_required(["task", "init_checkpoint", "model_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.finetune import glue  # pylint: disable=g-import-not-at-top
  config = finetune_flags.config_from_flags(configs.GlueConfig)
  summary = glue.GlueRunner(config, log=logging.info).run()
  logging.info("median dev results: %s (written to %s/eval_results.json)", summary["median"],
               FLAGS.model_dir)


def run():
  cli.run_main(main, "run_glue")


if __name__ == "__main__":
  run()
