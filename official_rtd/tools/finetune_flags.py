"""Flags of the fine-tuning tools (`run_glue`, `run_squad`, `run_tagging`,
`run_multiple_choice`, `run_parsing`): their help texts; names, types and defaults
are the fields of the tool's config dataclass (`finetune/configs.py`), as every tool's
(`cli.Flags`); and the `run()` they share (`tool`)."""
import functools

# Help of every field of `configs.FinetuneConfig` (the flags every fine-tuning tool shares).
COMMON_HELP = {
    "init_checkpoint": "An encoder export (<pretraining model_dir>/export, or "
                       "import_checkpoint's).",
    "model_dir": "Where trials, results and predictions go.",
    "random_init": "Same encoder shape, randomly initialized (a baseline).",
    "model_size": "Picks the Table 5.2 defaults; auto: by hidden size (<=256 small, <=768 base).",
    "max_seq_length": "Tokens per example (at most the encoder's positions).",
    "train_batch_size": "Batch size; unset: 32 (run_multiple_choice 16 questions, multi-task "
                        "run_glue 128).",
    "eval_batch_size": "Evaluation / prediction batch size.",
    "num_train_epochs": "Epochs over the training set; unset: the task's default, ",
    "learning_rate": "Default 3e-4 small / 1e-4 base / 5e-5 large.",
    "layerwise_lr_decay": "Default 0.8 (0.9 large).",
    "lr_decay_convention": "electra: the original code's exponents (top layer lr*d^2); "
                           "corrected: top layer lr*d (the BAM chapter's lr*a^d). Unset: electra "
                           "(corrected for multi-task run_glue). See "
                           "official_rtd/finetune/layerwise_decay.py.",
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
         "teacher_annealing": ["linear", "fixed"]}


def spec(config_class, help_texts, enums=None, ranges=None, **kwargs):
  """The tool's `cli.Flags`: `help_texts`' fields of `config_class` (a fine-tuning config: the
  shared `COMMON_HELP` flags first), with `ENUMS` and the tool's `enums`, and `ranges` (default:
  the shared `configs.RANGES`)."""
  from official_rtd.tools import cli  # pylint: disable=g-import-not-at-top
  from official_rtd.finetune import configs  # pylint: disable=g-import-not-at-top
  enums = {**ENUMS, **(enums or {})}
  ranges = configs.RANGES if ranges is None else ranges
  return cli.Flags(config_class, help_texts,
                   enums={k: v for k, v in enums.items() if k in help_texts},
                   ranges={k: v for k, v in ranges.items() if k in help_texts}, **kwargs)


def common_spec(config_class, help_texts, enums=None, **kwargs):
  """`spec` of the shared `FinetuneConfig` flags followed by the tool's own; the help of
  `--num_train_epochs` ends with the tool's tasks' defaults, read from the task registry."""
  return spec(config_class, {**COMMON_HELP, **help_texts}, enums,
              notes={"num_train_epochs": functools.partial(epochs_defaults, config_class)},
              **kwargs)


def epochs_defaults(config_class) -> str:
  """The default epochs of the tasks built from `config_class`, and its protocols' where it has
  `--protocol`: `configs.EPOCHS_HELP` (TensorFlow-free data, so our tools' `--help` imports no
  task), else (a config of a task added elsewhere) the registry's."""
  from official_rtd.finetune import configs  # pylint: disable=g-import-not-at-top
  if config_class.__name__ in configs.EPOCHS_HELP:
    return configs.EPOCHS_HELP[config_class.__name__]
  return epochs_defaults_from_registry(config_class)


def epochs_defaults_from_registry(config_class) -> str:
  """`epochs_defaults` as the task registry computes it (the test that keeps
  `configs.EPOCHS_HELP` true): each task's `epochs_default` and its protocols'."""
  from official_rtd.finetune import all_tasks  # pylint: disable=g-import-not-at-top,unused-import
  from official_rtd.finetune import configs  # pylint: disable=g-import-not-at-top
  from official_rtd.finetune import task as task_lib  # pylint: disable=g-import-not-at-top
  text = task_lib.epochs_defaults_text(config_class)
  accepted = {p for name in task_lib.names_for(config_class)
              for p in task_lib.get(name).protocols}
  protocols = ", ".join(f"{p} {n:g}" for p, n in sorted(configs.PROTOCOL_EPOCHS.items())
                        if p in accepted)
  if protocols:
    text += f"; --protocol={protocols.replace(', ', ', --protocol=')}"
  return text + "."


# Which tool fine-tunes the tasks built from each config (named in a refusal).
TOOL_OF_CONFIG = {"GlueConfig": "run_glue", "TaggingConfig": "run_tagging",
                  "SquadConfig": "run_squad", "MultipleChoiceConfig": "run_multiple_choice",
                  "ParsingConfig": "run_parsing"}


def check_task_belongs(config, tool_name: str) -> None:
  """Refuses a `--task` registered for another tool (its config has other fields), naming the
  tool's own tasks and the tool the task belongs to."""
  from official_rtd.finetune import task as task_lib  # pylint: disable=g-import-not-at-top
  name = config.task_name
  if not name:
    return
  wanted = task_lib.config_type(task_lib.get(name))  # an unknown name: its own error
  if not isinstance(config, wanted):
    raise ValueError(
        f"--task={name} is not a {tool_name} task (its tasks: "
        f"{', '.join(task_lib.names_for(type(config)))}); {name} is fine-tuned by "
        f"{TOOL_OF_CONFIG.get(wanted.__name__, 'another tool')}")


def tool(module_name: str, tool_name: str, command_line, check=None):
  """The `run()` of a fine-tuning tool: its config's task (every task registered:
  `finetune.all_tasks`) through `runner.Runner`, then the median dev figures logged.
  `check(config)` runs first (a tool's own refusals); `--help` prints `module_name`'s docstring."""
  from official_rtd.tools import cli  # pylint: disable=g-import-not-at-top

  def main(config):
    from absl import logging  # pylint: disable=g-import-not-at-top

    from official_rtd.finetune import all_tasks  # pylint: disable=g-import-not-at-top,unused-import
    from official_rtd.finetune import runner  # pylint: disable=g-import-not-at-top
    check_task_belongs(config, tool_name)
    if check is not None:
      check(config)
    summary = runner.Runner(config, log=logging.info).run()
    logging.info("median dev results: %s (written to %s/eval_results.json)", summary["median"],
                 config.model_dir)

  main.__module__ = module_name
  return functools.partial(cli.run_main, main, tool_name, command_line)
