"""The part of every fine-tuning tool's runner that does not depend on the task: the export (its
config, vocabulary and tokenizer) loaded once, the per-size defaults resolved, one trial's
training loop over numpy features, N resumable trials and the results file."""
import dataclasses
import math
import os
import shutil
from typing import Callable, Dict, List, Sequence

import numpy as np
import tensorflow as tf

from official_rtd.data import records
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import fingerprint
from official_rtd.finetune import trials as trials_lib
from official_rtd.training import export
from official_rtd.training import precision

RESULTS_NAME = "eval_results.json"


class FinetuneRunner:
  """Subclasses load their data in `__init__` (after this one's) and implement `run_trial(k)`
  returning `{"dev": {...metrics}, ...}` (see `fit`).

  Optimisation settings: the config's value if set, else `defaults[name]` (a task family's own,
  e.g. BAM's), else the per-size defaults (learning rate, layer-wise decay), the "electra"
  decay convention and batch 32.
  """

  def __init__(self, config, log: Callable[[str], None] = print, defaults: Dict = None):
    self.config = config
    self.log = log
    defaults = defaults or {}
    precision.check(config.mixed_precision)
    precision.warn_if_emulated(config.mixed_precision, log)
    self.export_config = export.read_export_config(config.init_checkpoint)
    self.encoder_config = self.export_config["encoder"]
    self.size = trials_lib.model_size(self.encoder_config, config.model_size)
    default_lr, default_decay = trials_lib.SIZE_DEFAULTS[self.size]
    self.learning_rate = (config.learning_rate or defaults.get("learning_rate") or default_lr)
    self.decay = (config.layerwise_lr_decay or defaults.get("layerwise_lr_decay")
                  or default_decay)
    self.convention = (config.lr_decay_convention or defaults.get("lr_decay_convention")
                       or "electra")
    trials_lib.check_convention(self.convention)
    self.batch_size = config.train_batch_size or defaults.get("train_batch_size") or 32
    if self.batch_size < 1:
      raise ValueError(f"--train_batch_size={self.batch_size} must be >= 1")
    self.vocab = vocab_lib.load_vocab(vocab_lib.find_vocab(config.init_checkpoint))
    self.do_lower_case = self.export_config.get("do_lower_case", True)
    self.tokenizer = tokenizer_lib.for_vocab(self.vocab, self.do_lower_case)

  def check_max_seq_length(self):
    positions = self.encoder_config["max_position_embeddings"]
    if self.config.max_seq_length > positions:
      raise ValueError(f"--max_seq_length={self.config.max_seq_length} exceeds the encoder's "
                       f"max_position_embeddings {positions}")

  def defaults_line(self, epochs: float) -> str:
    return (f"{self.size} defaults: lr {self.learning_rate:g}, layer-wise decay {self.decay} "
            f"({self.convention} convention), batch {self.batch_size}, {epochs:g} epochs, "
            f"{self.config.num_trials} trial(s)")

  def subset(self, items: Sequence) -> list:
    """A `--max_train_examples` random subset of `items` (in their order), or all of them."""
    items = list(items)
    if not self.config.max_train_examples:
      return items
    keep = np.random.default_rng(self.config.seed).permutation(len(items))
    return [items[i] for i in sorted(keep[:self.config.max_train_examples])]

  def num_steps(self, rows: int, epochs: float) -> int:
    return int(math.ceil(max(rows // self.batch_size, 1) * epochs))

  def shuffled_batches(self, features, labels, trial: int) -> tf.data.Dataset:
    """`(features, labels)` (numpy nests, one row per example) shuffled with the trial's seed,
    repeated, in batches."""
    rows = len(tf.nest.flatten(labels)[0])
    return (tf.data.Dataset.from_tensor_slices((features, labels))
            .shuffle(rows, seed=self.config.seed + trial).repeat()
            .batch(self.batch_size, drop_remainder=True).prefetch(2))

  def fit(self, trial: int, features, labels, epochs: float, make_model, loss_fn):
    """Trains `make_model(encoder)` for `epochs` over `(features, labels)`: see `fit_dataset`."""
    rows = len(tf.nest.flatten(labels)[0])
    return self.fit_dataset(trial, self.shuffled_batches(features, labels, trial),
                            self.num_steps(rows, epochs), make_model, loss_fn)

  def fit_dataset(self, trial: int, dataset, num_steps: int, make_model, loss_fn,
                  callback=None, callback_every_steps: int = 0):
    """Builds the trial's model (`make_model(encoder)`, which must create its variables) and
    optimizer (kept as `self.optimizer` for losses that read its step), and trains it for
    `num_steps` batches of `dataset` (deterministic for the trial: a killed trial resumes from
    its last `--save_checkpoints_steps` checkpoint by replaying it); `callback(step)` runs every
    `callback_every_steps` steps.

    Returns `(model, result)`, `result` holding the trial, seed, steps and final loss.
    """
    cfg = self.config
    model, self.optimizer = trials_lib.build_trial_model(
        cfg, trial, self.learning_rate, self.decay, self.convention, num_steps, make_model)
    checkpoint_dir = trials_lib.trial_dir(cfg.model_dir, trial, "checkpoint")
    final_loss = trials_lib.train(model, self.optimizer, dataset, num_steps, loss_fn, self.log,
                                  cfg.log_every_steps, f"trial {trial + 1}/{cfg.num_trials}",
                                  cfg.jit_compile, checkpoint_dir, cfg.save_checkpoints_steps,
                                  callback, callback_every_steps, seed=cfg.seed + trial)
    shutil.rmtree(checkpoint_dir, ignore_errors=True)  # the trial's results replace it
    return model, {"trial": trial, "seed": cfg.seed + trial, "train_steps": num_steps,
                   "final_train_loss": final_loss}

  def run_trial(self, trial: int) -> dict:
    raise NotImplementedError

  def run_trials(self, brief: Callable[[dict], str]) -> List[dict]:
    """The trials (see `trials.run_trials`) after checking that `--model_dir` is new or holds
    this same run (`fingerprint`): a directory of another run is refused before anything is
    written."""
    fingerprint.check_or_record(self.config.model_dir,
                                fingerprint.fingerprint(type(self).__name__, self.config))
    return trials_lib.run_trials(self.config.model_dir, self.config.num_trials, self.run_trial,
                                 self.log, brief)

  def summary(self, trials: List[dict], resolved: Dict[str, float], **fields) -> dict:
    """The results file's common fields: median and spread of each dev split's metrics (or of
    the flat `dev` dict), the trials, the flags and the resolved defaults."""
    devs = [t["dev"] for t in trials]
    if all(isinstance(v, dict) for v in devs[0].values()):
      median, spread = {}, {}
      for split in devs[0]:
        median[split], spread[split] = trials_lib.median_and_spread([d[split] for d in devs])
    else:
      median, spread = trials_lib.median_and_spread(devs)
    return {**fields, "init_checkpoint": os.path.abspath(self.config.init_checkpoint),
            "random_init": self.config.random_init, "median": median, "spread": spread,
            "trials": trials, "flags": dataclasses.asdict(self.config),
            "resolved": {"learning_rate": self.learning_rate, "layerwise_lr_decay": self.decay,
                         "lr_decay_convention": self.convention,
                         "train_batch_size": self.batch_size, **resolved}}

  def write_summary(self, summary: dict) -> dict:
    records.write_json_atomic(os.path.join(self.config.model_dir, RESULTS_NAME), summary)
    return summary

  def publish_best(self, trial: int, names: Sequence[str]):
    """Copies `trial_<trial>/<name>` to `<model_dir>/<name>`, each replaced atomically."""
    for name in names:
      tmp = os.path.join(self.config.model_dir, f"{name}.tmp-{os.getpid()}")
      shutil.copyfile(trials_lib.trial_dir(self.config.model_dir, trial, name), tmp)
      os.replace(tmp, os.path.join(self.config.model_dir, name))
