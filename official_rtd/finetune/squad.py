"""SQuAD 1.1 / 2.0 fine-tuning with ELECTRA's question-answering protocol.

Per trial: the exported encoder + ELECTRA's span head (joint start/end with beam search and, for
2.0, the answerability classifier), AdamW with layer-wise LR decay as in `run_glue`, 2 epochs,
then predictions on `--predict_file` scored with the official SQuAD definitions. Finished trials
are kept in `<model_dir>/trial_<k>/` (results.json, predictions.json, null_odds.json), so a killed
run resumes with the next unfinished trial. `<model_dir>/predictions.json` and `null_odds.json`
come from the trial with the best F1; `eval_results.json` holds the median and spread.
"""
import dataclasses
import math
import os
import shutil
import time
from typing import Callable, Dict

import numpy as np
import tensorflow as tf

from official_rtd.data import records
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import configs
from official_rtd.finetune import span_head
from official_rtd.finetune import squad_data
from official_rtd.finetune import squad_metrics
from official_rtd.finetune import squad_predictions
from official_rtd.finetune import trials as trials_lib
from official_rtd.training import export
from official_rtd.training import precision

PREDICTIONS_NAME = "predictions.json"
NULL_ODDS_NAME = "null_odds.json"


SquadConfig = configs.SquadConfig


class SquadRunner:
  """Reads and converts the data and loads the export once, then runs trials."""

  def __init__(self, config: SquadConfig, log: Callable[[str], None] = print):
    self.config = config
    self.log = log
    self.version_2 = config.version_2_with_negative
    trials_lib.check_convention(config.lr_decay_convention)
    precision.check(config.mixed_precision)
    precision.warn_if_emulated(config.mixed_precision, log)
    if config.beam_size < 1 or config.n_best_size < 1 or config.max_answer_length < 1:
      raise ValueError("--beam_size, --n_best_size and --max_answer_length must be >= 1")
    self.export_config = export.read_export_config(config.init_checkpoint)
    encoder = self.export_config["encoder"]
    self.feature_config = squad_data.FeatureConfig(
        config.max_seq_length, config.doc_stride, config.max_query_length)
    self.feature_config.check(encoder["max_position_embeddings"])
    if config.beam_size > config.max_seq_length:
      raise ValueError(f"--beam_size={config.beam_size} exceeds --max_seq_length")
    size = trials_lib.model_size(encoder, config.model_size)
    default_lr, default_decay = trials_lib.SIZE_DEFAULTS[size]
    self.learning_rate = config.learning_rate or default_lr
    self.decay = config.layerwise_lr_decay or default_decay
    self.vocab = vocab_lib.load_vocab(os.path.join(config.init_checkpoint, export.VOCAB_NAME))
    do_lower_case = self.export_config.get("do_lower_case", True)
    self.tokenizer = tokenizer_lib.WordPieceTokenizer(self.vocab, do_lower_case)
    train = squad_data.read_squad(config.train_file, self.version_2)
    if config.max_train_examples:
      rng = np.random.default_rng(config.seed)
      train = [train[i] for i in sorted(rng.permutation(len(train))[:config.max_train_examples])]
    self.predict_examples = squad_data.read_squad(config.predict_file, self.version_2)
    start = time.time()
    self.train_features = squad_data.convert(train, self.tokenizer, self.feature_config,
                                             do_lower_case)
    self.predict_features = squad_data.convert(self.predict_examples, self.tokenizer,
                                               self.feature_config, do_lower_case)
    log(f"run_squad: {'2.0' if self.version_2 else '1.1'}, {len(train)} train questions -> "
        f"{len(self.train_features)} windows, {len(self.predict_examples)} predict questions -> "
        f"{len(self.predict_features)} windows ({time.time() - start:.1f}s); {size} defaults: "
        f"lr {self.learning_rate:g}, layer-wise decay {self.decay}, "
        f"{config.num_train_epochs:g} epochs, {config.num_trials} trial(s)")

  # --- one trial ---------------------------------------------------------------------------------
  def _build(self, trial: int, num_steps: int):
    cfg = self.config

    def make_model(encoder):
      model = span_head.SpanQuestionAnswerer(encoder, joint=cfg.joint_prediction,
                                             version_2=self.version_2, beam_size=cfg.beam_size,
                                             name="squad")
      first = {k: v[:1] for k, v in self.train_features.inputs.items()}
      model(first, start_positions=tf.zeros([1], tf.int32))  # builds every layer
      return model

    return trials_lib.build_trial_model(cfg, trial, self.learning_rate, self.decay, num_steps,
                                        make_model)

  def run_trial(self, trial: int) -> dict:
    cfg = self.config
    features = self.train_features
    steps_per_epoch = max(len(features) // cfg.train_batch_size, 1)
    num_steps = int(math.ceil(steps_per_epoch * cfg.num_train_epochs))
    model, optimizer = self._build(trial, num_steps)
    labels = {"start_positions": features.start_positions, "end_positions": features.end_positions,
              "is_impossible": features.is_impossible}
    dataset = (tf.data.Dataset.from_tensor_slices((features.inputs, labels))
               .shuffle(len(features), seed=cfg.seed + trial).repeat()
               .batch(cfg.train_batch_size, drop_remainder=True).prefetch(2))

    def loss_fn(m, batch):
      inputs, gold = batch
      outputs = m(inputs, start_positions=gold["start_positions"], training=True)
      return span_head.loss(outputs, gold["start_positions"], gold["end_positions"],
                            gold["is_impossible"], cfg.answerable_weight)

    final_loss = trials_lib.train(model, optimizer, dataset, num_steps, loss_fn, self.log,
                                  cfg.log_every_steps, f"trial {trial + 1}/{cfg.num_trials}",
                                  cfg.jit_compile)
    outputs = self.predict_outputs(model)
    start = time.time()
    predictions, non_null, null_odds = squad_predictions.best_answers(
        self.predict_examples, self.predict_features, outputs,
        squad_predictions.AnswerConfig(cfg.max_answer_length, cfg.n_best_size, cfg.na_threshold),
        self.version_2)
    self.log(f"answers for {len(self.predict_examples)} questions from "
             f"{len(self.predict_features)} windows in {time.time() - start:.1f}s")
    metrics = squad_metrics.evaluate(self.predict_examples, predictions, self.version_2,
                                     null_odds if self.version_2 else None, non_null)
    os.makedirs(trials_lib.trial_dir(cfg.model_dir, trial), exist_ok=True)
    records.write_json_atomic(trials_lib.trial_dir(cfg.model_dir, trial, PREDICTIONS_NAME),
                              predictions)
    if self.version_2:
      records.write_json_atomic(trials_lib.trial_dir(cfg.model_dir, trial, NULL_ODDS_NAME),
                                null_odds)
    return {"trial": trial, "seed": cfg.seed + trial, "train_steps": num_steps,
            "final_train_loss": final_loss, "dev": metrics}

  def predict_outputs(self, model) -> Dict[str, np.ndarray]:
    """The head's inference outputs for every predict window, as numpy arrays (XLA-compiled,
    with progress: see `trials.predict`)."""
    return trials_lib.predict(lambda batch: model(batch, training=False),
                              self.predict_features.inputs, self.config.eval_batch_size,
                              self.log, "predicting windows")

  # --- all trials --------------------------------------------------------------------------------
  def run(self) -> dict:
    cfg = self.config
    trials = trials_lib.run_trials(
        cfg.model_dir, cfg.num_trials, self.run_trial, self.log,
        lambda r: ", ".join(f"{k}={v:.2f}" for k, v in r["dev"].items() if "total" not in k))
    median, spread = trials_lib.median_and_spread([t["dev"] for t in trials])
    best = max(trials, key=lambda t: t["dev"]["f1"])
    names = [PREDICTIONS_NAME] + ([NULL_ODDS_NAME] if self.version_2 else [])
    for name in names:  # the best trial's files, each replaced atomically
      tmp = os.path.join(cfg.model_dir, f"{name}.tmp-{os.getpid()}")
      shutil.copyfile(trials_lib.trial_dir(cfg.model_dir, best["trial"], name), tmp)
      os.replace(tmp, os.path.join(cfg.model_dir, name))
    summary = {"version": "2.0" if self.version_2 else "1.1",
               "predict_file": os.path.abspath(cfg.predict_file),
               "init_checkpoint": os.path.abspath(cfg.init_checkpoint),
               "random_init": cfg.random_init, **median, "median": median, "spread": spread,
               "best_trial": best["trial"], "trials": trials,
               "flags": dataclasses.asdict(cfg),
               "resolved": {"learning_rate": self.learning_rate,
                            "layerwise_lr_decay": self.decay}}
    records.write_json_atomic(os.path.join(cfg.model_dir, "eval_results.json"), summary)
    return summary
