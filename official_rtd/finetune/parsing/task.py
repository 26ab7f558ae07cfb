"""Dependency parsing as a fine-tuning task (`run_parsing`), on a Universal Dependencies treebank.

Per trial: each sentence whole through the encoder (`parsing_data.EncodedTreebank`: a word is its
first piece, ROOT the `[CLS]` output), dropout, and CVT's edge scorer
s(z1, z2, r) = ReLU(W_head z1 + b_head)ᵀ (W_r + W) ReLU(W_dep z2 + b_dep)
(`modeling/layers/edge_scorer.py`, the dissertation §4.2.3) with a softmax over every (head,
relation) edge into a word; cross-entropy of the gold edge; ELECTRA's fine-tuning protocol
(AdamW, layer-wise decay, warmup, trials). Prediction: with `--decode=mst` the best tree
(`ops.mst.mst_heads` on each arc's log-sum over relations, then each word's best relation for its
head), with `argmax` each word's best edge. Dev UAS/LAS over words with punctuation (CoNLL 2018,
the primary LAS) and without it (the dissertation's PTB convention); words of dev sentences longer
than `--max_seq_length` pieces count as wrong. Each trial writes `predictions.conllu`.
"""
import os
from typing import Callable

import tensorflow as tf
import tf_keras

from official_rtd.data import conllu
from official_rtd.data import parsing_data
from official_rtd.data import parsing_scores
from official_rtd.finetune import configs
from official_rtd.finetune import task as task_lib
from official_rtd.modeling.layers.dropout import Dropout
from official_rtd.modeling.layers.edge_scorer import edge_log_probabilities
from official_rtd.modeling.layers.edge_scorer import EdgeScorer
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.ops import mst
from official_rtd.trials import steps as trial_steps

PREDICTIONS_NAME = "predictions.conllu"
DECODERS = ("mst", "argmax")
ParsingConfig = configs.ParsingConfig


class ParsingModel(tf_keras.Model):
  """`call(inputs)` returns `{"scores": [batch, head, dependent, relation]}` over the nodes
  (ROOT + words) at `inputs["word_positions"]`."""

  def __init__(self, encoder, num_relations: int, projection_size: int,
               dropout_rate: float = 0.1, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.dropout = Dropout(dropout_rate)
    self.scorer = EdgeScorer(num_relations, projection_size,
                             initializer=transformer_encoder.initializer(encoder.config),
                             name="edge_scorer")

  def call(self, inputs, training=None):
    encoder_inputs = {k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    sequence = self.encoder(encoder_inputs, training=training)["sequence_output"]
    nodes = tf.gather(sequence, inputs["word_positions"], batch_dims=1)  # [batch, N, hidden]
    nodes = self.dropout(nodes, training=training)
    return {"scores": self.scorer(nodes, nodes)}


def allowed_edges(heads: tf.Tensor) -> tf.Tensor:
  """`[batch, head, dependent]`: h may head d (h ROOT or a word, d a word, h != d); words are
  where the gold `heads` `[batch, N]` are >= 0."""
  size = tf.shape(heads)[1]
  word = heads >= 0
  node = word | (tf.range(size) == 0)[tf.newaxis]
  return node[:, :, None] & word[:, None, :] & ~tf.eye(size, dtype=tf.bool)[tf.newaxis]


def edge_loss(outputs, labels) -> tf.Tensor:
  """Mean over words of −log p(gold head, gold relation | word)."""
  heads, relations = labels["heads"], labels["relations"]
  log_p = edge_log_probabilities(outputs["scores"], allowed_edges(heads))  # [b, h, d, r]
  log_p = tf.transpose(log_p, [0, 2, 1, 3])  # [b, d, h, r]
  per_head = tf.gather(log_p, tf.maximum(heads, 0), batch_dims=2)           # [b, d, r]
  gold = tf.gather(per_head, tf.maximum(relations, 0), batch_dims=2)         # [b, d]
  word = tf.cast((heads >= 0) & (relations >= 0), tf.float32)
  return -tf.reduce_sum(gold * word) / tf.maximum(tf.reduce_sum(word), 1.0)


def edge_summaries(log_p: tf.Tensor):
  """Per (head, dependent) of `[batch, h, d, r]` log-probabilities: the arc's log-probability
  (log-sum over relations), the best relation's and its id (`[batch, h, d]` each)."""
  return {"arc": tf.reduce_logsumexp(log_p, -1), "best": tf.reduce_max(log_p, -1),
          "relation": tf.argmax(log_p, -1, output_type=tf.int32)}


@task_lib.register("ud", "ud_ewt")
class DependencyParsing(task_lib.Task):
  """Reads and encodes the treebank once; a trial's model is `ParsingModel`."""

  run_name = "DependencyParsing"
  default_epochs = configs.DEFAULT_EPOCHS
  primary_metric = "las"
  published = (PREDICTIONS_NAME,)

  def __init__(self, config: ParsingConfig, export, log: Callable[[str], None]):
    super().__init__(config, export, log)
    if config.decode not in DECODERS:
      raise ValueError(f"--decode={config.decode} must be one of {list(DECODERS)}")
    self.check_max_seq_length()
    train = self.subset(conllu.read_conllu(parsing_data.treebank_file(config.data_dir, "train")))
    self.dev_sentences = conllu.read_conllu(parsing_data.treebank_file(config.data_dir, "dev"))
    self.relations = sorted({r for s in train for r in s.relations})
    ids = {r: i for i, r in enumerate(self.relations)}
    self.train = parsing_data.EncodedTreebank(train, self.tokenizer, config.max_seq_length, ids)
    self.dev = parsing_data.EncodedTreebank(self.dev_sentences, self.tokenizer,
                                            config.max_seq_length, ids)

  def describe(self) -> str:
    return (f"run_parsing: {len(self.train)} train sentences ({self.train.skipped} longer than "
            f"{self.config.max_seq_length} pieces left out), {len(self.dev_sentences)} dev "
            f"sentences ({self.dev.skipped} too long: their words count as wrong), "
            f"{len(self.relations)} relations, {self.config.decode} decoding")

  def train_arrays(self):
    return self.train.inputs(), {"heads": self.train.heads, "relations": self.train.relations}

  def build_model(self, encoder):
    model = ParsingModel(encoder, len(self.relations), self.config.projection_size,
                         name="parser")
    model({k: v[:1] for k, v in self.train.inputs().items()})
    return model

  def loss(self, model, batch, progress):
    del progress  # unused
    return edge_loss(model(batch[0], training=True), batch[1])

  def evaluate(self, model, trial_dir):
    def summaries(batch):
      node = tf.range(tf.shape(batch["word_positions"])[1])[tf.newaxis]
      heads = tf.where((node > 0) & (node < batch["nodes"][:, tf.newaxis]), 0, -1)  # >= 0: a word
      scores = model({k: v for k, v in batch.items() if k != "nodes"}, training=False)["scores"]
      return edge_summaries(edge_log_probabilities(scores, allowed_edges(heads)))

    out = trial_steps.predict(summaries, dict(self.dev.inputs(), nodes=self.dev.nodes),
                             self.config.eval_batch_size, self.log,
                             f"parsing {len(self.dev)} sentences")
    predicted = [conllu.Sentence(s.words, [-1] * len(s), ["_"] * len(s), s.upos, s.xpos,
                                 s.sent_id) for s in self.dev_sentences]
    for row, index in enumerate(self.dev.kept):
      heads, relations = mst.decode(out["arc"][row], out["best"][row], out["relation"][row],
                                int(self.dev.nodes[row]), self.config.decode)
      predicted[index].heads = heads
      predicted[index].relations = [self.relations[r] for r in relations]
    if trial_dir is not None:
      conllu.write_conllu(os.path.join(trial_dir, PREDICTIONS_NAME), self.dev_sentences,
                          predicted)
    return dict(parsing_scores.dev_report(self.dev_sentences, predicted),
                sentences_too_long=self.dev.skipped)

  def summary_fields(self, median):
    return {"task": self.config.task, "relations": self.relations}

  def resolved(self):
    return {"decode": self.config.decode}
