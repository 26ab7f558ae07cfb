"""SQuAD 1.1 / 2.0 fine-tuning with ELECTRA's question-answering protocol.

Per trial: the exported encoder + ELECTRA's span head (joint start/end with beam search and, for
2.0, the answerability classifier), AdamW with layer-wise LR decay as in `run_glue`, 2 epochs,
then predictions on `--predict_file` scored with the official SQuAD definitions. Finished trials
are kept in `<model_dir>/trial_<k>/` (results.json, predictions.json, null_odds.json), so a killed
run resumes with the next unfinished trial. `<model_dir>/predictions.json` and `null_odds.json`
come from the trial with the best F1; `eval_results.json` holds the median and spread.
"""
import os
import time
from typing import Callable, Dict

import numpy as np
import tensorflow as tf

from official_rtd.data import records
from official_rtd.finetune import configs
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune import span_head
from official_rtd.finetune import squad_data
from official_rtd.finetune import squad_metrics
from official_rtd.finetune import squad_predictions
from official_rtd.finetune import trials as trials_lib

PREDICTIONS_NAME = "predictions.json"
NULL_ODDS_NAME = "null_odds.json"


SquadConfig = configs.SquadConfig


class SquadRunner(runner_lib.FinetuneRunner):
  """Reads and converts the data and loads the export once, then runs trials."""

  def __init__(self, config: SquadConfig, log: Callable[[str], None] = print):
    super().__init__(config, log)
    self.version_2 = config.version_2_with_negative
    if config.beam_size < 1 or config.n_best_size < 1 or config.max_answer_length < 1:
      raise ValueError("--beam_size, --n_best_size and --max_answer_length must be >= 1")
    self.feature_config = squad_data.FeatureConfig(
        config.max_seq_length, config.doc_stride, config.max_query_length)
    self.feature_config.check(self.encoder_config["max_position_embeddings"])
    if config.beam_size > config.max_seq_length:
      raise ValueError(f"--beam_size={config.beam_size} exceeds --max_seq_length")
    train = self.subset(squad_data.read_squad(config.train_file, self.version_2))
    self.predict_examples = squad_data.read_squad(config.predict_file, self.version_2)
    start = time.time()
    self.train_features = squad_data.convert(train, self.tokenizer, self.feature_config,
                                             self.do_lower_case)
    self.predict_features = squad_data.convert(self.predict_examples, self.tokenizer,
                                               self.feature_config, self.do_lower_case)
    log(f"run_squad: {'2.0' if self.version_2 else '1.1'}, {len(train)} train questions -> "
        f"{len(self.train_features)} windows, {len(self.predict_examples)} predict questions -> "
        f"{len(self.predict_features)} windows ({time.time() - start:.1f}s); "
        f"{self.defaults_line(config.num_train_epochs)}")

  # --- one trial ---------------------------------------------------------------------------------
  def make_model(self, encoder):
    cfg = self.config
    model = span_head.SpanQuestionAnswerer(encoder, joint=cfg.joint_prediction,
                                           version_2=self.version_2, beam_size=cfg.beam_size,
                                           name="squad")
    first = {k: v[:1] for k, v in self.train_features.inputs.items()}
    model(first, start_positions=tf.zeros([1], tf.int32))  # builds every layer
    return model

  def run_trial(self, trial: int) -> dict:
    cfg = self.config
    features = self.train_features
    labels = {"start_positions": features.start_positions, "end_positions": features.end_positions,
              "is_impossible": features.is_impossible}

    def loss_fn(m, batch):
      inputs, gold = batch
      outputs = m(inputs, start_positions=gold["start_positions"], training=True)
      return span_head.loss(outputs, gold["start_positions"], gold["end_positions"],
                            gold["is_impossible"], cfg.answerable_weight)

    model, result = self.fit(trial, features.inputs, labels, cfg.num_train_epochs,
                             self.make_model, loss_fn)
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
    records.write_json_atomic(trials_lib.trial_dir(cfg.model_dir, trial, PREDICTIONS_NAME),
                              predictions)
    if self.version_2:
      records.write_json_atomic(trials_lib.trial_dir(cfg.model_dir, trial, NULL_ODDS_NAME),
                                null_odds)
    return {**result, "dev": metrics}

  def predict_outputs(self, model) -> Dict[str, np.ndarray]:
    """The head's inference outputs for every predict window, as numpy arrays (XLA-compiled,
    with progress: see `trials.predict`)."""
    return trials_lib.predict(lambda batch: model(batch, training=False),
                              self.predict_features.inputs, self.config.eval_batch_size,
                              self.log, "predicting windows")

  # --- all trials --------------------------------------------------------------------------------
  def run(self) -> dict:
    trials = self.run_trials(
        lambda r: ", ".join(f"{k}={v:.2f}" for k, v in r["dev"].items() if "total" not in k))
    best = max(trials, key=lambda t: t["dev"]["f1"])
    self.publish_best(best["trial"],
                      [PREDICTIONS_NAME] + ([NULL_ODDS_NAME] if self.version_2 else []))
    summary = self.summary(trials, {}, version="2.0" if self.version_2 else "1.1",
                           predict_file=os.path.abspath(self.config.predict_file),
                           best_trial=best["trial"])
    return self.write_summary({**summary["median"], **summary})
