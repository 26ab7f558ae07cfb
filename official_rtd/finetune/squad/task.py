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

from official_rtd.finetune import configs
from official_rtd.finetune import task as task_lib
from official_rtd.finetune.squad import data as squad_data
from official_rtd.finetune.squad import metrics as squad_metrics
from official_rtd.finetune.squad import predictions as squad_predictions
from official_rtd.finetune.squad import span_head
from official_rtd.trials import steps as trial_steps
from official_rtd.utils import textio

PREDICTIONS_NAME = "predictions.json"
NULL_ODDS_NAME = "null_odds.json"


SquadConfig = configs.SquadConfig


@task_lib.register("squad")
class Squad(task_lib.Task):
  """Reads and converts the data once; a trial's model is `span_head.SpanQuestionAnswerer`."""

  run_name = "SquadRunner"
  default_epochs = configs.task_epochs("squad")
  primary_metric = "f1"

  def __init__(self, config: SquadConfig, export, log: Callable[[str], None]):
    super().__init__(config, export, log)
    self.version_2 = config.version_2_with_negative
    if config.beam_size < 1 or config.n_best_size < 1 or config.max_answer_length < 1:
      raise ValueError("--beam_size, --n_best_size and --max_answer_length must be >= 1")
    self.feature_config = squad_data.FeatureConfig(
        config.max_seq_length, config.doc_stride, config.max_query_length)
    self.feature_config.check(export.encoder_config["max_position_embeddings"])
    if config.beam_size > config.max_seq_length:
      raise ValueError(f"--beam_size={config.beam_size} exceeds --max_seq_length")
    self.published = [PREDICTIONS_NAME] + ([NULL_ODDS_NAME] if self.version_2 else [])
    self.train_questions = self.subset(squad_data.read_squad(config.train_file, self.version_2))
    self.predict_examples = squad_data.read_squad(config.predict_file, self.version_2)
    start = time.time()
    self.train_features = squad_data.convert(self.train_questions, self.tokenizer,
                                             self.feature_config, export.do_lower_case)
    self.predict_features = squad_data.convert(self.predict_examples, self.tokenizer,
                                               self.feature_config, export.do_lower_case)
    self.convert_seconds = time.time() - start

  def describe(self) -> str:
    return (f"run_squad: {'2.0' if self.version_2 else '1.1'}, {len(self.train_questions)} train "
            f"questions -> {len(self.train_features)} windows, {len(self.predict_examples)} "
            f"predict questions -> {len(self.predict_features)} windows "
            f"({self.convert_seconds:.1f}s)")

  # --- training ----------------------------------------------------------------------------------
  def train_arrays(self):
    features = self.train_features
    return features.inputs, {"start_positions": features.start_positions,
                             "end_positions": features.end_positions,
                             "is_impossible": features.is_impossible}

  def build_model(self, encoder):
    cfg = self.config
    model = span_head.SpanQuestionAnswerer(encoder, joint=cfg.joint_prediction,
                                           version_2=self.version_2, beam_size=cfg.beam_size,
                                           name="squad")
    first = {k: v[:1] for k, v in self.train_features.inputs.items()}
    model(first, start_positions=tf.zeros([1], tf.int32))  # builds every layer
    return model

  def loss(self, model, batch, progress):
    del progress  # unused
    inputs, gold = batch
    outputs = model(inputs, start_positions=gold["start_positions"], training=True)
    return span_head.loss(outputs, gold["start_positions"], gold["end_positions"],
                          gold["is_impossible"], self.config.answerable_weight)

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate(self, model, trial_dir):
    cfg = self.config
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
    if trial_dir is not None:
      textio.write_json_atomic(os.path.join(trial_dir, PREDICTIONS_NAME), predictions)
      if self.version_2:
        textio.write_json_atomic(os.path.join(trial_dir, NULL_ODDS_NAME), null_odds)
    return metrics

  def brief(self, dev) -> str:
    return ", ".join(f"{k}={v:.2f}" for k, v in dev.items() if "total" not in k)

  def predict_outputs(self, model) -> Dict[str, np.ndarray]:
    """The head's inference outputs for every predict window, as numpy arrays (XLA-compiled,
    with progress: see `trials.predict`)."""
    return trial_steps.predict(lambda batch: model(batch, training=False),
                              self.predict_features.inputs, self.config.eval_batch_size,
                              self.log, "predicting windows")

  def summary_fields(self, median):
    return {**median, "version": "2.0" if self.version_2 else "1.1",
            "predict_file": os.path.abspath(self.config.predict_file)}
