r"""Pre-trains a discriminator (ELECTRA and family), configured by composable gin files.

  run_pretraining --gin_file=gin/models/small.gin --gin_file=gin/tasks/electra.gin \
      --input_records=/data/records --model_dir=/runs/electra_small \
      [--gin_param='TrainConfig.num_train_steps = 1000'] [--distribution_strategy=mirrored]

Re-running with the same --model_dir resumes from the latest checkpoint. A new run can start from
another run's weights, or from an import_checkpoint output (released ELECTRA weights), with
--warm_start_from=DIR (formerly --init_checkpoint, the name fine-tuning tools use for an export):
the generator, discriminator and heads are restored, the optimizer, step and
learning-rate schedule start fresh.
"""
import dataclasses
from typing import List, Optional

from absl import logging  # pylint: disable=g-bad-import-order

# First: quiets TensorFlow's C++ start-up output before anything imports TensorFlow.
from official_rtd.tools import cli  # pylint: disable=g-bad-import-order


@dataclasses.dataclass(frozen=True)
class RunPretrainingConfig:
  gin_file: tuple
  input_records: str
  model_dir: str
  gin_param: tuple = ()
  vocab_file: str = ""
  distribution_strategy: str = "one_device"
  tpu: str = ""
  num_cpu_devices: int = 1
  mode: str = "train"
  eval_input: str = ""
  all_checkpoints: bool = False
  mixed_precision: Optional[str] = None
  jit_compile: Optional[bool] = None
  warm_start_from: Optional[str] = None
  warm_start_allow_missing: Optional[List[str]] = None
  onset_monitor: bool = True


COMMAND_LINE = cli.Flags(RunPretrainingConfig, {
    "gin_file": "Gin files, applied in order (model, task, ...). Relative paths are also looked "
                "up in the repository's gin/ directory.",
    "gin_param": "Gin bindings applied after the files: one whole binding per flag (repeat the "
                 "flag for several; a value may hold commas, e.g. TrainConfig.phases = "
                 "({'start_step': 900, 'max_seq_length': 512},)).",
    "input_records": "Records directories (comma list / globs) written by "
                     "create_pretraining_data.",
    "vocab_file": "Defaults to the vocab named in the records' sidecar.",
    "model_dir": "Checkpoints, TensorBoard logs and the export.",
    "distribution_strategy": "multi_worker_mirrored reads the cluster from TF_CONFIG.",
    "tpu": "TPU name or address for --distribution_strategy=tpu.",
    "num_cpu_devices": "Split the CPU into this many logical devices (data parallelism on a "
                       "CPU-only machine with 'mirrored').",
    "mode": "eval: evaluate the latest checkpoint (--all_checkpoints: every kept one) on "
            "--eval_input; train_and_eval: evaluate every EvalConfig.eval_every_steps.",
    "eval_input": "Held-out records directories (create_pretraining_data on held-out documents, "
                  "fixed --seed).",
    "all_checkpoints": "With --mode=eval: one row per kept checkpoint.",
    "mixed_precision": "Compute precision (variables stay float32; float16 adds dynamic loss "
                       "scaling). Same as --gin_param=\"TrainConfig.mixed_precision='bfloat16'\"; "
                       "unset: the gin value (float32).",
    "jit_compile": "XLA-compile each replica's forward and backward pass "
                   "(TrainConfig.jit_compile).",
    "warm_start_from": "Warm start: a run_pretraining model_dir, an import_checkpoint "
                       "output_dir or a checkpoint prefix whose weights start this run (ignored "
                       "once the run has checkpoints of its own). Its vocab.txt must be the "
                       "records' vocab. Same as TrainConfig.warm_start_from.",
    "warm_start_allow_missing": "Components (checkpoint path parts, e.g. mws_head,mws_layer) "
                                "that may be absent from --warm_start_from and then start "
                                "freshly initialised; any other missing or mis-shaped variable "
                                "is an error. Same as TrainConfig.warm_start_allow_missing.",
    "onset_monitor": "Measure the structure-onset figures (largest head's attention on the "
                     "previous/next token, attention entropy ratio, order sensitivity) of the "
                     "encoder every OnsetConfig.every_steps steps and at the end, on rows of "
                     "--eval_input (else of the training records): log line, TensorBoard and "
                     "<model_dir>/onset.jsonl.",
}, enums={"distribution_strategy": ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
          "mode": ["train", "eval", "train_and_eval"],
          "mixed_precision": ["float32", "bfloat16", "float16"]},
    ranges={"num_cpu_devices": (1, None, True)}, whole=("gin_param",),
    # Fine-tuning tools' --init_checkpoint is an export; here the name meant a warm start.
    renamed={"init_checkpoint": "warm_start_from",
             "init_checkpoint_allow_missing": "warm_start_allow_missing"})


def main(config):
  gin_params = list(config.gin_param or [])
  if config.mixed_precision is not None:
    gin_params.append(f"TrainConfig.mixed_precision = '{config.mixed_precision}'")
  if config.jit_compile is not None:
    gin_params.append(f"TrainConfig.jit_compile = {config.jit_compile}")
  if config.warm_start_from is not None:
    gin_params.append(f"TrainConfig.warm_start_from = {config.warm_start_from!r}")
  if config.warm_start_allow_missing is not None:
    gin_params.append("TrainConfig.warm_start_allow_missing = "
                      f"{tuple(config.warm_start_allow_missing)!r}")
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  runs.run_pretraining(list(config.gin_file), gin_params, config.input_records,
                       config.model_dir, config.distribution_strategy, config.tpu,
                       config.vocab_file or None, config.num_cpu_devices, config.mode,
                       config.eval_input or None, config.all_checkpoints,
                       onset_monitor=config.onset_monitor, log=logging.info)


def run():
  cli.run_main(main, "run_pretraining", COMMAND_LINE)


if __name__ == "__main__":
  run()
