r"""Pre-trains a discriminator (ELECTRA and family), configured by composable gin files.

  run_pretraining --gin_file=gin/models/small.gin --gin_file=gin/tasks/electra.gin \
      --input_records=/data/records --model_dir=/runs/electra_small \
      [--gin_param='TrainConfig.num_train_steps = 1000'] [--distribution_strategy=mirrored]

Re-running with the same --model_dir resumes from the latest checkpoint.
"""
import os

from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

REPO_GIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "gin")

flags.DEFINE_multi_string("gin_file", None, "Gin files, applied in order (model, task, ...). "
                          f"Relative paths are also looked up in {REPO_GIN_DIR}.")
flags.DEFINE_multi_string("gin_param", None, "Gin bindings applied after the files.")
flags.DEFINE_string("input_records", None, "Records directories (comma list / globs) written by "
                    "create_pretraining_data.")
flags.DEFINE_string("vocab_file", None, "Defaults to the vocab named in the records' sidecar.")
flags.DEFINE_string("model_dir", None, "Checkpoints, TensorBoard logs and the export.")
flags.DEFINE_enum("distribution_strategy", "one_device",
                  ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "multi_worker_mirrored reads the cluster from TF_CONFIG.")
flags.DEFINE_string("tpu", "", "TPU name or address for --distribution_strategy=tpu.")
flags.DEFINE_integer("num_cpu_devices", 1, "Split the CPU into this many logical devices "
                     "(data parallelism on a CPU-only machine with 'mirrored').")
flags.DEFINE_enum("mode", "train", ["train", "eval", "train_and_eval"],
                  "eval: evaluate the latest checkpoint (--all_checkpoints: every kept one) on "
                  "--eval_input; train_and_eval: evaluate every EvalConfig.eval_every_steps.")
flags.DEFINE_string("eval_input", None, "Held-out records directories (create_pretraining_data "
                    "on held-out documents, fixed --seed).")
flags.DEFINE_bool("all_checkpoints", False, "With --mode=eval: one row per kept checkpoint.")
flags.DEFINE_enum("mixed_precision", None, ["float32", "bfloat16", "float16"],
                  "Compute precision (variables stay float32; float16 adds dynamic loss "
                  "scaling). Same as --gin_param=\"TrainConfig.mixed_precision='bfloat16'\"; "
                  "default: the gin value (float32).")
flags.DEFINE_bool("jit_compile", None, "XLA-compile each replica's forward and backward pass "
                  "(TrainConfig.jit_compile).")
flags.mark_flags_as_required(["gin_file", "input_records", "model_dir"])
FLAGS = flags.FLAGS


def _resolve_gin_file(path: str) -> str:
  if os.path.exists(path):
    return path
  candidate = os.path.join(REPO_GIN_DIR, path.removeprefix("gin/"))
  if os.path.exists(candidate):
    return candidate
  raise FileNotFoundError(f"gin file {path} not found (also looked in {REPO_GIN_DIR})")


def parse_gin(gin_files, gin_params):
  """Registers our configurables and parses gin; errors become one clear line."""
  import gin  # pylint: disable=g-import-not-at-top
  from official_rtd import configurables  # pylint: disable=g-import-not-at-top,unused-import
  files = [_resolve_gin_file(f) for f in gin_files]
  gin.add_config_file_search_path(REPO_GIN_DIR)  # for `include 'tasks/electra.gin'`
  try:
    gin.parse_config_files_and_bindings(files, gin_params or [], finalize_config=False)
  except (ValueError, KeyError, SyntaxError, OSError) as e:
    message = " ".join(str(e).split())
    raise ValueError(f"bad gin configuration: {message}") from None


def train(gin_files, gin_params, input_records, model_dir, distribution_strategy="one_device",
          tpu="", vocab_file=None, num_cpu_devices=1, mode="train", eval_input=None,
          all_checkpoints=False):
  """Parses gin, builds the strategy and trainer, then trains and/or evaluates; returns the
  trainer and the last metrics (or evaluation rows)."""
  if mode != "train" and not eval_input:
    raise ValueError(f"--mode={mode} needs --eval_input (held-out records)")
  from official_rtd.training import strategies  # pylint: disable=g-import-not-at-top
  strategies.split_cpu(num_cpu_devices)
  parse_gin(gin_files, gin_params)
  import gin  # pylint: disable=g-import-not-at-top
  from official_rtd.training import trainer as trainer_lib  # pylint: disable=g-import-not-at-top
  strategy = strategies.get_strategy(distribution_strategy, tpu)
  logging.info("strategy %s with %d replica(s)", type(strategy).__name__,
               strategy.num_replicas_in_sync)
  trainer = trainer_lib.Trainer(model_dir, input_records, strategy,
                                train_config=trainer_lib.TrainConfig(), vocab_file=vocab_file,
                                log=logging.info)
  evaluator = None
  if mode != "train":
    from official_rtd.training import evaluation  # pylint: disable=g-import-not-at-top
    evaluator = evaluation.Evaluator(trainer, eval_input, evaluation.EvalConfig())
  if mode == "eval":
    return trainer, trainer.evaluate_checkpoints(evaluator, all_checkpoints)
  if trainer.is_chief:
    trainer_lib.write_run_config(model_dir, gin.config_str(), {
        "gin_file": list(gin_files), "gin_param": list(gin_params or []),
        "input_records": input_records, "distribution_strategy": distribution_strategy},
        trainer)
  metrics = trainer.train(evaluator, evaluator.config.eval_every_steps if evaluator else 0)
  logging.info("done: checkpoints in %s, TensorBoard logs in %s (tensorboard --logdir %s), "
               "fine-tunable export in %s", model_dir, os.path.join(model_dir, "train"),
               model_dir, os.path.join(model_dir, "export"))
  return trainer, metrics


def main(_):
  gin_params = list(FLAGS.gin_param or [])
  if FLAGS.mixed_precision is not None:
    gin_params.append(f"TrainConfig.mixed_precision = '{FLAGS.mixed_precision}'")
  if FLAGS.jit_compile is not None:
    gin_params.append(f"TrainConfig.jit_compile = {FLAGS.jit_compile}")
  train(FLAGS.gin_file, gin_params, FLAGS.input_records, FLAGS.model_dir,
        FLAGS.distribution_strategy, FLAGS.tpu, FLAGS.vocab_file, FLAGS.num_cpu_devices,
        FLAGS.mode, FLAGS.eval_input, FLAGS.all_checkpoints)


def run():
  cli.run_main(main, "run_pretraining")


if __name__ == "__main__":
  run()
