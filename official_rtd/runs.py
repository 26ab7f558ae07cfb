"""The composition root of pre-training runs: what builds a run from gin files, bindings and
flags (every configurable registered first), runs it as `run_pretraining` does, and rebuilds a
run directory's model. The layers below (`methods/`, `training/`, `finetune/`) never import it.
"""
import contextlib
import dataclasses
import functools
import logging
import math
import os
import re
from typing import Callable, Optional, Sequence

import gin
import tensorflow as tf
import tf_keras

from official_rtd import configurables  # pylint: disable=unused-import; registers the configurables
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import run_dir
from official_rtd.methods import base
from official_rtd.methods import objectives
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.probes import probe
from official_rtd.training import ema
from official_rtd.training import evaluation
from official_rtd.training import optimization
from official_rtd.training import precision
from official_rtd.training import run_inputs
from official_rtd.training import strategies
from official_rtd.training import structure_monitor
from official_rtd.training import trainer as trainer_lib
from official_rtd.utils import checkpoint_files
from official_rtd.utils import run_lock
from official_rtd.utils import textio

REPO_GIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gin")


def resolve_gin_file(path: str) -> str:
  """`path` if it exists, else the same name in the repository's `gin/` directory."""
  if os.path.exists(path):
    return path
  candidate = os.path.join(REPO_GIN_DIR, path.removeprefix("gin/"))
  if os.path.exists(candidate):
    return candidate
  raise FileNotFoundError(f"gin file {path} not found (also looked in {REPO_GIN_DIR})")


def _each_binding():
  """((scope, configurable, parameter), value) of every gin binding so far."""
  for (scope, selector), values in gin.config._CONFIG.items():  # pylint: disable=protected-access
    for name, value in values.items():
      yield (scope, selector, name), value


def _bindings() -> dict:
  """Every gin binding so far: {(scope, configurable, parameter): repr(value)}."""
  return {key: repr(value) for key, value in _each_binding()}


def _binding_name(key) -> str:
  scope, selector, name = key
  if selector == "gin.macro":
    return scope
  return f"{scope + '/' if scope else ''}{selector.rsplit('.', 1)[-1]}.{name}"


RECIPE_DIR = "recipes"


def parse_gin(gin_files: Sequence[str], gin_params: Sequence[str] = (),
              log: Callable[[str], None] = print):
  """Registers our configurables and parses the files in order, then the bindings; errors become
  one clear line (a ValueError).

  A file that re-binds a value an earlier file set is reported (both files, the parameter, both
  values); re-binding a value set by a recipe (`gin/recipes/`, which the README applies after the
  model and task files) is refused, since the run would not be the recipe. `--gin_param`
  bindings override the files, as intended."""
  files = [resolve_gin_file(f) for f in gin_files]
  gin.add_config_file_search_path(REPO_GIN_DIR)  # for `include 'tasks/electra.gin'`
  set_by = {}
  for path in files:
    before = _bindings()
    try:
      with _quiet_include_search():
        gin.parse_config_files_and_bindings([path], None, finalize_config=False)
    except (ValueError, KeyError, SyntaxError, OSError) as e:
      message = " ".join(str(e).split())
      raise ValueError(f"bad gin configuration in {path}: {message}") from None
    rebound = []
    for key, value in _bindings().items():
      if key in before and before[key] != value:
        earlier = set_by.get(key, "an earlier file")
        if _binding_name(key) == METHOD_BINDING:
          raise ValueError(
              f"--gin_file={path} changes the pre-training method to {value}, which {earlier} "
              f"set to {before[key]}: give one method (a recipe that includes its task file "
              f"replaces it: drop --gin_file={earlier})")
        if os.path.basename(os.path.dirname(earlier)) == RECIPE_DIR:
          raise ValueError(
              f"--gin_file={path} re-binds {_binding_name(key)} = {value}, which the recipe "
              f"{earlier} set to {before[key]}: give the recipe after the model and task files "
              f"(--gin_file=<model> --gin_file=<task> --gin_file={earlier})")
        rebound.append(f"{_binding_name(key)} = {value} (was {before[key]} from {earlier})")
      if key not in before or before[key] != value:
        set_by[key] = path
    if rebound:
      log(f"gin: {path} re-binds {len(rebound)} value(s) set by an earlier file: "
          + "; ".join(rebound))
  with _quiet_include_search():
    _parse_bindings(gin_params)
  _check_method_bindings(set_by)
  unbound = sorted({(value.config_key[0], set_by.get(key, "--gin_param"))
                    for key, value in _each_binding()
                    if isinstance(value, gin.config.ConfigurableReference)
                    and value.config_key[1] == "gin.macro"
                    and value.config_key not in gin.config._CONFIG})  # pylint: disable=protected-access
  if unbound:
    name, where = unbound[0]
    raise ValueError(f"{where} uses %{name}, which nothing binds: pass "
                     f"--gin_param=\"{name} = '<value>'\" (e.g. the stage-1 run's model_dir for "
                     "two-stage ELECTRA)")


METHOD_BINDING = "pretraining_model.method"


def _check_method_bindings(set_by: dict):
  """Refuses bindings of another method's builder than the one `pretraining_model.method` names
  (e.g. the ELECTRA recipe's switches with `gin/tasks/mlm.gin`): they would never be read."""
  bindings = dict(_each_binding())
  chosen = next((value for key, value in bindings.items() if _binding_name(key) == METHOD_BINDING),
                None)
  if chosen is None:
    return
  builders = {registry.get(name).builder.__name__: name for name in registry.names()}
  for key in bindings:
    owner = builders.get(key[1].rsplit(".", 1)[-1])
    if owner is not None and owner != chosen:
      raise ValueError(
          f"{set_by.get(key, '--gin_param')} binds {_binding_name(key)}, a setting of the method "
          f"{owner!r}, but the run's method is {chosen!r} ({METHOD_BINDING}): it would never be "
          "read; drop it or choose that method")


class _IncludeSearchFilter(logging.Filter):
  """gin logs "Path not found: tasks/electra.gin" at ERROR for each search path an `include`
  misses before the one that holds it: not an error of the run."""

  def filter(self, record):
    return not str(record.msg).startswith("Path not found:")


@contextlib.contextmanager
def _quiet_include_search():
  root, quiet = logging.getLogger(), _IncludeSearchFilter()
  root.addFilter(quiet)
  try:
    yield
  finally:
    root.removeFilter(quiet)


def _parse_bindings(gin_params):
  for binding in gin_params or []:
    try:
      gin.parse_config_files_and_bindings(None, [binding], finalize_config=False)
    except (ValueError, KeyError, SyntaxError, OSError) as e:
      message = " ".join(str(e).split())
      several = re.findall(r"[\w./]+\s*=", binding)
      hint = (": it holds several bindings; give each its own --gin_param (e.g. "
              + " ".join(f"--gin_param='{part.strip()}'"
                         for part in re.split(r",\s*(?=[\w./]+\s*=)", binding)) + ")"
              if len(several) > 1 else "")
      raise ValueError(f"bad --gin_param='{binding}'{hint} ({message})") from None


def run_pretraining(gin_files, gin_params, input_records, model_dir,
                    distribution_strategy="one_device", tpu="", vocab_file=None,
                    num_cpu_devices=1, mode="train", eval_input=None, all_checkpoints=False,
                    onset_monitor=True, log=print):
  """Parses gin, builds the strategy and trainer, then trains and/or evaluates (`mode`: train,
  eval, train_and_eval); returns the trainer and the last metrics (or evaluation rows). Arguments
  are `run_pretraining`'s flags; `log` takes one line."""
  if mode != "train" and not eval_input:
    raise ValueError(f"--mode={mode} needs --eval_input (held-out records)")
  strategies.split_cpu(num_cpu_devices)
  parse_gin(gin_files, gin_params, log)
  strategy = strategies.get_strategy(distribution_strategy, tpu)
  log(f"strategy {type(strategy).__name__} with {strategy.num_replicas_in_sync} replica(s)")
  trainer = build_trainer(model_dir, input_records, strategy, vocab_file=vocab_file, log=log)
  evaluator = None
  if mode != "train":
    eval_config = evaluation.EvalConfig()
    evaluator = evaluation.Evaluator(
        trainer.model, trainer.vocab, trainer.input_config, eval_input, eval_config,
        probe=probe.from_eval_config(eval_config, trainer.vocab, trainer.do_lower_case))
  if mode == "eval":
    with (run_lock.holding(model_dir, keep=checkpoint_files.latest, log=log) if trainer.is_chief
          else contextlib.nullcontext()):
      return trainer, trainer.evaluate_checkpoints(evaluator, all_checkpoints)
  # One run at a time in model_dir; a start that fails before its first checkpoint leaves the
  # directory as it was (or absent).
  with (run_lock.holding(model_dir, keep=checkpoint_files.latest, log=log) if trainer.is_chief
        else contextlib.nullcontext()):
    if trainer.is_chief:
      # Nothing is written before the directory is known to hold this run (or none) and its
      # checkpoint restores into this model.
      run_dir.check_same_run(model_dir, gin.config_str())
    trainer.restore()
    if trainer.is_chief:
      run_dir.write_run_config(model_dir, gin.config_str(), {
          "gin_file": list(gin_files), "gin_param": list(gin_params or []),
          "input_records": input_records, "distribution_strategy": distribution_strategy},
          trainer.vocab, trainer.do_lower_case)
    monitor = build_monitor(trainer, eval_input) if onset_monitor and trainer.is_chief else None
    metrics = trainer.train(evaluator, evaluator.config.eval_every_steps if evaluator else 0,
                            monitor)
  log(f"done: checkpoints in {model_dir}, TensorBoard logs in {os.path.join(model_dir, 'train')} "
      f"(tensorboard --logdir {model_dir}), fine-tunable export in "
      f"{os.path.join(model_dir, 'export')}")
  return trainer, metrics


def build_trainer(model_dir: str, input_path: str, strategy: tf.distribute.Strategy,
                  train_config: Optional[trainer_lib.TrainConfig] = None,
                  optimizer_config: Optional[optimization.OptimizerConfig] = None,
                  encoder_config: Optional[EncoderConfig] = None, vocab_file: Optional[str] = None,
                  model_fn: Optional[Callable[..., base.PretrainingModel]] = None,
                  log: Callable[[str], None] = print) -> trainer_lib.Trainer:
  """Builds a run's parts and hands them to a `Trainer`: the inputs (records, vocab and phases
  checked before any model exists), the model (variables created), a FLOPs budget turned into
  steps, and the optimizer (slots created, so a restore fills them at once and is verified).

  Args:
    model_dir: the run directory.
    input_path: records directories (comma list / globs).
    strategy: a `tf.distribute.Strategy`.
    train_config: defaults to the gin-bound `TrainConfig`; likewise `optimizer_config`.
    encoder_config: `vocab_size=None` takes the vocab's size.
    vocab_file: defaults to the one named in the records' sidecar.
    model_fn: `encoder_config -> PretrainingModel`; defaults to the gin-chosen method, given the
      vocab and the records' token counts.
  """
  train_config = train_config or trainer_lib.TrainConfig()
  optimizer_config = optimizer_config or optimization.OptimizerConfig()
  inputs = run_inputs.RunInputs(train_config, input_path, model_dir, vocab_file, encoder_config)
  tf_keras.utils.set_random_seed(train_config.seed)
  precision.warn_if_emulated(train_config.mixed_precision, log)
  with strategy.scope():
    with precision.policy(train_config.mixed_precision):
      resources = {} if model_fn else {"vocab": inputs.vocab, "token_counts": functools.partial(
          inputs.token_counts, strategies.is_chief(strategy), log)}
      model = (model_fn or registry.pretraining_model)(
          encoder_config=inputs.encoder_config, **resources)
      objectives.check_warmup_taken(model)
      model(base.dummy_inputs(train_config.max_seq_length, train_config.max_predictions_per_seq),
            training=False)  # creates the variables
    train_config = _apply_flops_budget(train_config, inputs, model, log)
    _check_detection_start(train_config, inputs, model, log)
    warning = optimization.schedule_warning(optimizer_config, train_config.num_train_steps)
    if warning:
      log(warning)
    optimizer = precision.wrap_optimizer(
        optimization.build_optimizer(optimizer_config, train_config.num_train_steps),
        train_config.mixed_precision)
    model.bind_step(lambda: optimizer.iterations)  # for step-dependent schedules
    optimizer._create_all_weights(model.trainable_variables)  # pylint: disable=protected-access
  return trainer_lib.Trainer(model_dir, strategy, inputs, model, optimizer, train_config,
                             optimizer_config, log)


def _apply_flops_budget(train_config, inputs, model, log):
  """`train_config` with `num_train_steps` as many as fit in `train_flops_budget`, if set."""
  budget = train_config.train_flops_budget
  if budget <= 0:
    return train_config
  per_step = inputs.train_flops(1, model)
  steps = inputs.steps_within(budget, model)
  if steps < 1:
    raise trainer_lib.TrainingSetupError(f"train_flops_budget {budget:.3g} is less than one step "
                                         f"({per_step:.3g} FLOPs)")
  later = inputs.train_flops(steps, model) - inputs.train_flops(steps - 1, model)
  log(f"FLOPs budget {budget:.3g}: {steps} steps of {per_step:.3g} FLOPs"
      + (f" (from {later:.3g} FLOPs per step once the model's cost changes)"
         if abs(later - per_step) > 1e-9 * per_step else ""))
  return dataclasses.replace(train_config, num_train_steps=steps)


# A replaced-token detector that starts late (`rtd_start_step`) should train for at least this
# share of the run's steps, else the run says so (the one-machine ELECTRA recipe at 1e14: 55%).
MIN_DETECTION_SHARE = 0.5


def _check_detection_start(train_config, inputs, model, log):
  """Refuses a run whose replaced-token detection would start at or after its last step (its
  discriminator would never train) and warns when it trains for less than MIN_DETECTION_SHARE
  of the steps, naming the FLOPs budget that gives it that share."""
  start, steps = model.detection_start_step(), train_config.num_train_steps
  if not start:
    return
  setting = model.detection_start_setting()
  fits = inputs.train_flops(int(math.ceil(start / (1 - MIN_DETECTION_SHARE))), model)
  length = (f"the run's {steps} steps (TrainConfig.train_flops_budget = "
            f"{train_config.train_flops_budget:.3g})" if train_config.train_flops_budget
            else f"TrainConfig.num_train_steps = {steps}")
  if start >= steps:
    raise trainer_lib.TrainingSetupError(
        f"{setting} = {start} is not before {length}: the "
        f"discriminator's replaced-token detection would never train (a train_flops_budget of "
        f"{fits:.3g} gives it {MIN_DETECTION_SHARE:.0%} of the steps), or lower {setting}")
  if steps - start < MIN_DETECTION_SHARE * steps:
    log(f"WARNING: replaced-token detection starts at step {start} "
        f"({setting}) and trains for {steps - start} of "
        f"{length}, {(steps - start) / steps:.0%}: a train_flops_budget of {fits:.3g} or more "
        f"gives it {MIN_DETECTION_SHARE:.0%}")


def build_monitor(trainer, eval_input=None) -> structure_monitor.StructureMonitor:
  """The structure-onset monitor (`OnsetConfig`) on rows of the held-out records, or without
  them of the training records."""
  config = structure_monitor.OnsetConfig()
  source = trainer.input_config
  if eval_input:
    source = dataclasses.replace(source, input_path=eval_input)
  width = min(config.width, trainer.train_config.max_seq_length)
  ids = structure_monitor.rows_from_records(source, trainer.vocab, width, config.num_rows)
  return structure_monitor.StructureMonitor(ids, config.every_steps, config.order_rows)


def load_model(model_dir: str, weight_average: bool = False):
  """Rebuilds the pre-training model of a run directory from its operative gin config and
  restores the latest checkpoint (with `weight_average`, the average of the weights it kept:
  `TrainConfig.ema_decay`). Returns (model, tokenizer)."""
  config_path = os.path.join(model_dir, run_dir.OPERATIVE_CONFIG)
  if not os.path.isfile(config_path):
    if os.path.isfile(os.path.join(model_dir, "encoder_config.json")):
      raise run_dir.RunDirError(
          f"{model_dir} is an export (the encoder alone, without the heads that score text): give "
          f"the run directory it was exported from "
          f"({os.path.dirname(os.path.abspath(model_dir))} if it is <model_dir>/export)")
    raise run_dir.RunDirError(
        f"{model_dir} is not a run_pretraining directory: no {run_dir.OPERATIVE_CONFIG}")
  latest = checkpoint_files.latest(model_dir)
  if not latest:
    raise run_dir.RunDirError(f"no checkpoint in {model_dir}")
  flags = textio.load_json(os.path.join(model_dir, run_dir.RUN_FLAGS))
  vocab = vocab_lib.load_vocab(vocab_lib.find_vocab(model_dir))
  gin.clear_config()
  try:  # the run's bindings are used to build the model, then dropped again
    gin.parse_config_file(config_path)
    model = registry.pretraining_model(EncoderConfig(vocab_size=vocab.size), vocab=vocab)
    train_config = trainer_lib.TrainConfig()
  except (ValueError, KeyError) as e:
    raise run_dir.RunDirError(f"{config_path} does not build a model: {' '.join(str(e).split())}"
                      ) from None
  finally:
    gin.clear_config()
  model(base.dummy_inputs(2, train_config.max_predictions_per_seq),
        training=False)  # creates the variables (any length does)
  trained_with = checkpoint_vocab_size(latest)
  if trained_with is not None and trained_with != vocab.size:
    raise run_dir.RunDirError(
        f"the run's {vocab_lib.find_vocab(model_dir)} has {vocab.size} entries but its checkpoint "
        f"{latest} was trained with {trained_with}: the vocabulary file was replaced; put back "
        "the one the run was trained with")
  try:
    with checkpoint_files.quiet_restore_warnings():
      _restore(model, train_config, latest, weight_average, model_dir)
  except (AssertionError, IndexError, tf.errors.OpError) as e:
    first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
    raise run_dir.RunDirError(checkpoint_files.damaged_message(latest) or (
        f"{latest} does not restore into the model of {config_path}: {first[:300]}")) from None
  return model, tokenizer_lib.for_vocab(vocab, flags.get("do_lower_case", True))


def checkpoint_vocab_size(prefix: str) -> Optional[int]:
  """The vocabulary size a checkpoint's token embedding table has (its first dimension), or None
  if it holds none (by name: `embedding_table` or `word_embeddings`)."""
  try:
    variables = tf.train.list_variables(prefix)
  except (tf.errors.OpError, ValueError):
    return None  # a damaged checkpoint: the restore below says what is wrong
  sizes = {shape[0] for name, shape in variables
           if len(shape) == 2 and "OPTIMIZER_SLOT" not in name
           and ("embedding_table" in name or "word_embeddings" in name)}
  return sizes.pop() if len(sizes) == 1 else None


def _restore(model, train_config, latest: str, weight_average: bool, model_dir: str):
  """Restores `latest` into `model` (with `weight_average`: the weights' average it kept)."""
  if not weight_average:
    tf.train.Checkpoint(model=model).restore(latest).expect_partial()
  elif not train_config.ema_decay:
    raise run_dir.RunDirError(f"{model_dir} kept no weight average (its TrainConfig.ema_decay is "
                              "0): export it without --ema")
  else:
    average = ema.WeightAverage(model.trainable_variables, train_config.ema_decay)
    tf.train.Checkpoint(model=model, weight_average=average.checkpoint()).restore(
        latest).expect_partial()
    for variable, value in zip(average.variables, average.averages):
      variable.assign(value)
