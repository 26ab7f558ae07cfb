"""Multiple-choice reading comprehension (RACE) with the ELECTRA fine-tuning protocol.

Per trial: the exported encoder scores each `[CLS] article [SEP] question+option [SEP]` with a
linear layer on `[CLS]` (all options of a batch in one `[batch × options, seq_len]` pass); softmax
over the options, cross-entropy; AdamW with layer-wise LR decay, 10% warmup, 2 epochs (the epoch
count of Shao's RACE protocol). Dev accuracy overall and for the middle / high levels; each
trial's `predictions.jsonl`, the best trial's published to `<model_dir>`.
"""
import json
import os
from typing import Callable

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.finetune import configs
from official_rtd.finetune import heads
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import task as task_lib
from official_rtd.finetune.race import data as race_data
from official_rtd.trials import steps as trial_steps
from official_rtd.utils import subsets
from official_rtd.utils import textio

PREDICTIONS_NAME = "predictions.jsonl"
TASKS = ("race",)
PROTOCOLS = ("electra", "shao")
SHAO_MAX_SEQ_LENGTH = 384
MultipleChoiceConfig = configs.MultipleChoiceConfig


class MultipleChoiceModel(tf_keras.Model):
  """`call` on `[batch, options, seq_len]` inputs returns `{"logits": [batch, options]}`."""

  def __init__(self, encoder, dropout_rate: float = 0.1, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.dropout, self.scorer = heads.dropout_and_dense(encoder, 1, "scorer", dropout_rate)

  def call(self, inputs, training=None):
    shape = tf.shape(inputs["input_word_ids"])  # [batch, options, seq_len]
    flat = {k: tf.reshape(v, [-1, shape[2]]) for k, v in inputs.items()}
    cls = self.encoder(flat, training=training)["sequence_output"][:, 0]
    scores = tf.cast(self.scorer(self.dropout(cls, training=training)), tf.float32)
    return {"logits": tf.reshape(scores, shape[:2])}


def options_loss(outputs, labels) -> tf.Tensor:
  """Mean cross-entropy of the softmax over the options."""
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=outputs["logits"]))


@task_lib.register(*TASKS)
class MultipleChoice(task_lib.Task):
  """Reads and encodes the questions once; a trial's model is `MultipleChoiceModel`."""

  run_name = "MultipleChoiceRunner"
  protocols = PROTOCOLS
  default_epochs = configs.task_epochs("race")
  published = (PREDICTIONS_NAME,)

  def __init__(self, config: MultipleChoiceConfig, export, log: Callable[[str], None]):
    super().__init__(config, export, log)
    shao = config.protocol == "shao"
    if shao:
      self.default_epochs = configs.PROTOCOL_EPOCHS["shao"]
    positions = export.encoder_config["max_position_embeddings"]
    caps = [(positions, "the encoder's max_position_embeddings")]
    if shao:
      caps.append((SHAO_MAX_SEQ_LENGTH, "Shao's RACE protocol"))
    self.max_seq_length = config.max_seq_length
    for cap, what in caps:
      if cap < self.max_seq_length:
        log(f"--max_seq_length={self.max_seq_length} capped at {cap} ({what})")
        self.max_seq_length = cap
    if config.max_dev_examples < 0:
      raise ValueError(f"--max_dev_examples={config.max_dev_examples} must be >= 0 (0: all)")
    train = [q for split in config.train_splits.split(",") if split.strip()
             for q in race_data.read_split(config.data_dir, split.strip())]
    self.train_questions = self.subset(train)
    dev = race_data.read_split(config.data_dir, config.dev_split)
    self.dev_questions = subsets.random_subset(dev, config.max_dev_examples, 0)
    self.train_inputs = race_data.encode(self.train_questions, self.tokenizer,
                                         self.max_seq_length, config.protocol)
    self.dev_inputs = race_data.encode(self.dev_questions, self.tokenizer, self.max_seq_length,
                                       config.protocol)

  def describe(self) -> str:
    return (f"run_multiple_choice ({self.config.protocol} protocol): "
            f"{len(self.train_questions)} train questions, "
            f"{len(self.dev_questions)} dev questions, "
            f"{self.train_inputs['input_word_ids'].shape[1]} options of {self.max_seq_length} "
            "tokens")

  # --- training ----------------------------------------------------------------------------------
  def train_arrays(self):
    return self.train_inputs, np.array([q.answer for q in self.train_questions], np.int32)

  def build_model(self, encoder):
    model = MultipleChoiceModel(encoder, name="multiple_choice")
    model({k: v[:1] for k, v in self.train_inputs.items()})
    return model

  def loss(self, model, batch, progress):
    del progress  # unused
    return options_loss(model(batch[0], training=True), batch[1])

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate(self, model, trial_dir):
    probabilities = trial_steps.predict(
        lambda batch: {"p": tf.nn.softmax(model(batch, training=False)["logits"])},
        self.dev_inputs, self.config.eval_batch_size, self.log,
        f"scoring {len(self.dev_questions)} questions")["p"]
    if trial_dir is not None:
      self.write_predictions(os.path.join(trial_dir, PREDICTIONS_NAME), probabilities)
    return self.metrics(probabilities.argmax(-1))

  def metrics(self, predicted) -> dict:
    """Accuracy overall and `accuracy_<level>` for each level present."""
    answers = np.array([q.answer for q in self.dev_questions])
    levels = np.array([q.level for q in self.dev_questions])
    out = {"accuracy": metrics_lib.accuracy(answers, predicted)}
    for level in race_data.LEVELS:
      if np.any(levels == level):
        out[f"accuracy_{level}"] = metrics_lib.accuracy(answers[levels == level],
                                                        np.asarray(predicted)[levels == level])
    return out

  def write_predictions(self, path: str, probabilities: np.ndarray):
    """One JSON line per question: id, level, predicted and gold letters, option probabilities."""
    textio.write_lines_atomic(path, [
        json.dumps({"id": q.id, "level": q.level, "prediction": chr(65 + int(p.argmax())),
                    "answer": chr(65 + q.answer),
                    "probabilities": [round(float(x), 6) for x in p]})
        for q, p in zip(self.dev_questions, probabilities)])

  def summary_fields(self, median):
    return {"task": self.config.task}

  def resolved(self):
    return {"max_seq_length": self.max_seq_length}
