r"""Pre-trains a discriminator (ELECTRA and family), configured by composable gin files.

  run_pretraining --gin_file=gin/models/small.gin --gin_file=gin/tasks/electra.gin \
      --input_records=/data/records --model_dir=/runs/electra_small \
      [--gin_param='TrainConfig.num_train_steps = 1000'] [--distribution_strategy=mirrored]

Re-running with the same --model_dir resumes from the latest checkpoint. A new run can start from
another run's weights, or from an import_checkpoint output (released ELECTRA weights), with
--init_checkpoint=DIR: the generator, discriminator and heads are restored, the optimizer, step and
learning-rate schedule start fresh.
"""
from official_rtd import runs
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_multi_string("gin_file", None, "Gin files, applied in order (model, task, ...). "
                          f"Relative paths are also looked up in {runs.REPO_GIN_DIR}.")
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
flags.DEFINE_string("init_checkpoint", None, "Warm start: a run_pretraining model_dir, an "
                    "import_checkpoint output_dir or a checkpoint prefix whose weights start this "
                    "run (ignored once the run has checkpoints of its own). Its vocab.txt must be "
                    "the records' vocab. Same as TrainConfig.init_checkpoint.")
flags.DEFINE_list("init_checkpoint_allow_missing", None, "Components (checkpoint path parts, e.g. "
                  "mws_head,mws_layer) that may be absent from --init_checkpoint and then start "
                  "freshly initialised; any other missing or mis-shaped variable is an error.")
flags.mark_flags_as_required(["gin_file", "input_records", "model_dir"])
FLAGS = flags.FLAGS


def main(_):
  gin_params = list(FLAGS.gin_param or [])
  if FLAGS.mixed_precision is not None:
    gin_params.append(f"TrainConfig.mixed_precision = '{FLAGS.mixed_precision}'")
  if FLAGS.jit_compile is not None:
    gin_params.append(f"TrainConfig.jit_compile = {FLAGS.jit_compile}")
  if FLAGS.init_checkpoint is not None:
    gin_params.append(f"TrainConfig.init_checkpoint = {FLAGS.init_checkpoint!r}")
  if FLAGS.init_checkpoint_allow_missing is not None:
    gin_params.append("TrainConfig.init_checkpoint_allow_missing = "
                      f"{tuple(FLAGS.init_checkpoint_allow_missing)!r}")
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  runs.run_pretraining(FLAGS.gin_file, gin_params, FLAGS.input_records, FLAGS.model_dir,
                            FLAGS.distribution_strategy, FLAGS.tpu, FLAGS.vocab_file,
                            FLAGS.num_cpu_devices, FLAGS.mode, FLAGS.eval_input,
                            FLAGS.all_checkpoints, log=logging.info)


def run():
  cli.run_main(main, "run_pretraining")


if __name__ == "__main__":
  run()
