"""Flags of the fine-tuning tools (`run_glue`, `run_squad`, `run_tagging`,
`run_multiple_choice`). Their names are the fields of the tool's config dataclass
(`finetune/configs.py`), and their defaults are that class's: a default is written once, in the
dataclass."""
import dataclasses

from absl import flags


# Help of every field of `configs.FinetuneConfig` (the flags every fine-tuning tool shares).
COMMON_HELP = {
    "init_checkpoint": "An encoder export (<pretraining model_dir>/export, or import_checkpoint's).",
    "model_dir": "Where trials, results and predictions go.",
    "random_init": "Same encoder shape, randomly initialized (a baseline).",
    "model_size": "Picks the Table 5.2 defaults; auto: by hidden size (<=256 small, <=768 base).",
    "max_seq_length": "Tokens per example (at most the encoder's positions).",
    "train_batch_size": "Batch size; unset: 32 (run_multiple_choice 16 questions, multi-task "
                        "run_glue 128).",
    "eval_batch_size": "Evaluation / prediction batch size.",
    "num_train_epochs": "Epochs over the training set; unset: the tool's default (run_glue 3, "
                        "10 for RTE and STS-B; run_squad 2; run_tagging 3; "
                        "run_multiple_choice 2).",
    "learning_rate": "Default 3e-4 small / 1e-4 base / 5e-5 large.",
    "layerwise_lr_decay": "Default 0.8 (0.9 large).",
    "lr_decay_convention": "electra: the original code's exponents (top layer lr*d^2); "
                           "corrected: top layer lr*d (the BAM chapter's lr*a^d). Unset: electra "
                           "(corrected for multi-task run_glue). See "
                           "official_rtd/training/layerwise_decay.py.",
    "warmup_proportion": "Fraction of steps of linear warmup.",
    "weight_decay_rate": "AdamW weight decay (0 in the dissertation).",
    "num_trials": "Fine-tuning runs with seeds seed..seed+N-1 (papers: 10).",
    "seed": "First trial's seed.",
    "max_train_examples": "Use a random subset of the training set (0: all).",
    "log_every_steps": "Progress line interval.",
    "save_checkpoints_steps": "Checkpoint a trial every N steps; a killed run resumes there "
                              "(0: only finished trials are kept).",
    "mixed_precision": "Compute precision; variables stay float32, float16 adds dynamic loss "
                       "scaling.",
    "jit_compile": "XLA-compile each step's forward and backward pass.",
}
ENUMS = {"model_size": ["auto", "small", "base", "large"],
         "lr_decay_convention": ["electra", "corrected"],
         "mixed_precision": ["float32", "bfloat16", "float16"],
         "tag_scheme": ["iob1", "iob2", "bioes"],
         "teacher_annealing": ["linear", "fixed"],
         "mode": ["cvt", "supervised", "word_dropout"],
         "on_decode_error": ["fail", "skip"]}


def define_flags(config_class, help_texts, enums=None):
  """Defines a flag per field of `config_class` named in `help_texts`, with the field's default
  (None for required fields) and type; `enums` adds the tool's own enumerations to `ENUMS`."""
  enums = {**ENUMS, **(enums or {})}
  from official_rtd.finetune import configs  # pylint: disable=g-import-not-at-top
  fields = {f.name: f for f in dataclasses.fields(config_class)}
  for name, help_text in help_texts.items():
    field = fields[name]
    if name in configs.RANGES:
      help_text = f"{help_text} ({configs.range_text(name)})"
    default = None if field.default is dataclasses.MISSING else field.default
    kind = str(field.type)
    if name in enums:
      flags.DEFINE_enum(name, default, enums[name], help_text)
    elif "bool" in kind:
      flags.DEFINE_bool(name, default, help_text)
    elif "int" in kind:
      flags.DEFINE_integer(name, default, help_text)
    elif "float" in kind:
      flags.DEFINE_float(name, default, help_text)
    else:
      flags.DEFINE_string(name, default, help_text)


def define_common_flags(config_class):
  """The `FinetuneConfig` flags, with `config_class`'s defaults."""
  define_flags(config_class, COMMON_HELP)


def config_from_flags(config_class):
  """`config_class(**{field: --field})` for every field of the dataclass."""
  values = {f.name: flags.FLAGS[f.name].value for f in dataclasses.fields(config_class)}
  return config_class(**values)
