"""Flags every fine-tuning tool shares (`run_glue`, `run_squad`); each tool adds its own data and
batch flags. Their names are the fields of the tools' config dataclasses."""
import dataclasses

from absl import flags


def define_common_flags():
  if "init_checkpoint" in flags.FLAGS:  # already defined by another fine-tuning tool's import
    return
  flags.DEFINE_string("init_checkpoint", None,
                      "An encoder export (<pretraining model_dir>/export, or import_checkpoint's).")
  flags.DEFINE_string("model_dir", None, "Where trials, results and predictions go.")
  flags.DEFINE_bool("random_init", False, "Same encoder shape, randomly initialized (a baseline).")
  flags.DEFINE_enum("model_size", "auto", ["auto", "small", "base", "large"],
                    "Picks the Table 5.2 defaults; auto: by hidden size (<=256 small, <=768 base).")
  flags.DEFINE_float("learning_rate", None, "Default 3e-4 small / 1e-4 base / 5e-5 large.")
  flags.DEFINE_float("layerwise_lr_decay", None, "Default 0.8 (0.9 large).")
  flags.DEFINE_enum("lr_decay_convention", "electra", ["electra", "corrected"],
                    "electra: the original code's exponents (top layer lr*d^2); corrected: top "
                    "layer lr*d. See official_rtd/training/layerwise_decay.py.")
  flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps of linear warmup.")
  flags.DEFINE_float("weight_decay_rate", 0.0, "AdamW weight decay (0 in the dissertation).")
  flags.DEFINE_integer("num_trials", 1, "Fine-tuning runs with seeds seed..seed+N-1 (papers: 10).")
  flags.DEFINE_integer("seed", 0, "First trial's seed.")
  flags.DEFINE_integer("max_train_examples", 0, "Use a random subset of the training set (0: all).")
  flags.DEFINE_integer("log_every_steps", 100, "Progress line interval.")
  flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"],
                    "Compute precision; variables stay float32, float16 adds dynamic loss scaling.")
  flags.DEFINE_bool("jit_compile", False, "XLA-compile each step's forward and backward pass.")


def config_from_flags(config_class):
  """`config_class(**{field: --field})` for every field of the dataclass."""
  values = {f.name: flags.FLAGS[f.name].value for f in dataclasses.fields(config_class)}
  return config_class(**values)
