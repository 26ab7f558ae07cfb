"""CVT's dependency parser (dissertation §4.2.3): edge scorers on the CVT encoder's views.

A sentence's nodes are ROOT (node 0) and its words (1..T). Each module scores every candidate
edge (head u, dependent t, relation r) with the edge scorer of `modeling/layers/edge_scorer.py`,
  s(z1, z2, r) = ReLU(W_head z1 + b_head)ᵀ (W_r + W) ReLU(W_dep z2 + b_dep),
on its own views of head and dependent, and p((u, t, r) | x) is a softmax over every edge into t:
  primary   s(h1^u ⊕ h2^u, h1^t ⊕ h2^t, r)
  fwd-fwd   s(h→1^u, h→1^t, r)      fwd-bwd   s(h→1^u, h←1^t, r)
  bwd-fwd   s(h←1^u, h→1^t, r)      bwd-bwd   s(h←1^u, h←1^t, r)
(the four auxiliary modules each miss the preceding or the following words of head or
dependent). ROOT is a learned vector per view (§4.3.1: "a fixed vector"); words are the only input
(no POS tags), as in the dissertation's parser.

Ours, not the paper's: the scorers' projection size (`projection_size`, 512 there); the CVT tagger's
label smoothing is applied over the allowed edges only.

Outputs are per dependent, flattened over (head, relation): `[batch, T, (T + 1)·R]` log-
probabilities (disallowed edges −1e9), so CVT's per-word losses (`task.PerWordTask`) treat an edge
like a tag: the target of word t is `head · R + relation`.
"""
import os
from typing import Dict, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import task as task_lib
from official_rtd.data import conllu
from official_rtd.data import parsing_data
from official_rtd.data import parsing_scores
from official_rtd.modeling.layers.edge_scorer import edge_log_probabilities
from official_rtd.modeling.layers.edge_scorer import EdgeScorer
from official_rtd.ops import mst

# module: (the head's view, the dependent's view)
MODULES = {"primary": ("top", "top"), "fwd-fwd": ("fwd1", "fwd1"), "fwd-bwd": ("fwd1", "bwd1"),
           "bwd-fwd": ("bwd1", "fwd1"), "bwd-bwd": ("bwd1", "bwd1")}
AUXILIARY = tuple(m for m in MODULES if m != "primary")


def allowed_word_edges(lengths: tf.Tensor, nodes: tf.Tensor) -> tf.Tensor:
  """`[batch, head, dependent]` over `nodes` = T + 1: u may head t when u is ROOT or a word, t is
  a word (1..length) and u != t."""
  node = tf.range(nodes)[tf.newaxis]
  word = (node >= 1) & (node <= lengths[:, tf.newaxis])
  head = word | (node == 0)
  return head[:, :, None] & word[:, None, :] & ~tf.eye(nodes, dtype=tf.bool)[tf.newaxis]


class ParserModules(tf_keras.layers.Layer):
  """The primary and auxiliary edge scorers and ROOT vectors of one parsing task.

  `call(states, lengths, dropout_rate, names)`: the encoder's states; returns
  {module: `[batch, T, (T + 1)·R]` log p((head, relation) | dependent)}.
  """

  def __init__(self, num_relations: int, projection_size: int, **kwargs):
    super().__init__(**kwargs)
    self.num_relations = num_relations
    self.scorers = {name: EdgeScorer(num_relations, projection_size,
                                     name=f"scorer_{name.replace('-', '_')}")
                    for name in MODULES}

  def build(self, input_shape):
    projection = input_shape["fwd1"][-1]
    widths = {"top": 4 * projection, "fwd1": projection, "bwd1": projection}
    self.roots = {view: self.add_weight(f"root_{view}", [width], initializer="random_normal")
                  for view, width in widths.items()}
    super().build(input_shape)

  def call(self, states: Dict[str, tf.Tensor], lengths=None, dropout_rate: float = 0.0,
           names: Sequence[str] = tuple(MODULES)):
    drop = lambda x: encoder_lib.dropout(x, dropout_rate)
    # Only the views `names` read are dropped out (`tf.function` keeps stateful ops: an unused
    # view's random numbers would still be drawn).
    wanted = {view for name in names for view in MODULES[name]}
    views = {view: (tf.concat([drop(states["h1"]), drop(states["h2"])], -1) if view == "top"
                    else drop(states[view])) for view in sorted(wanted)}
    batch, time = tf.shape(states["h1"])[0], tf.shape(states["h1"])[1]
    nodes = {view: tf.concat([tf.tile(tf.cast(self.roots[view], x.dtype)[None, None],
                                      [batch, 1, 1]), x], 1)
             for view, x in views.items()}  # [batch, T + 1, width]: ROOT first
    allowed = allowed_word_edges(lengths, time + 1)
    out = {}
    for name in names:
      head_view, dependent_view = MODULES[name]
      scores = self.scorers[name](nodes[head_view], nodes[dependent_view])  # [b, h, d, r]
      log_p = tf.transpose(edge_log_probabilities(scores, allowed), [0, 2, 1, 3])[:, 1:]
      out[name] = tf.reshape(log_p, [batch, time, (time + 1) * self.num_relations])
    return out


@task_lib.register("dep")
class ParsingTask(task_lib.PerWordTask):
  """A UD treebank (`--data_dir` holding parsing/ud_ewt/, or one *-ud-train.conllu and one
  *-ud-dev.conllu): each word's target is its gold edge, `head · R + relation` (head 0: ROOT)."""
  primary_metric = "las"
  label_kind = "relations"
  auxiliary_modules = AUXILIARY

  def __init__(self, name, labels, settings):
    super().__init__(name, labels, settings)
    self.relations = list(labels["relations"])
    self._relation_ids = {r: i for i, r in enumerate(self.relations)}

  @classmethod
  def read(cls, name, config, rng):
    data_dir = task_lib.task_folder(config, name, [os.path.join(config.data_dir, "parsing",
                                                                "ud_ewt")], "parsing/ud_ewt")
    train, remainder = task_lib.labeled_subset(
        conllu.read_conllu(parsing_data.treebank_file(data_dir, "train")), rng, config)
    dev = conllu.read_conllu(parsing_data.treebank_file(data_dir, "dev"))
    labels = {"relations": sorted({r for s in train for r in s.relations})}
    return cls(name, labels, config).with_data(train, dev, remainder)

  def source_words(self, example):
    return example.words

  def targets(self, example):
    ids, r = self._relation_ids, len(self.relations)
    return [h * r + ids[rel] for h, rel in zip(example.heads, example.relations)]

  @property
  def num_labels(self):
    return len(self.relations)

  def vocabulary_json(self):
    return {"relations": self.relations}

  def build_head(self, config):
    return ParserModules(len(self.relations), config.hidden_size, name=f"{self.name}_parser")

  def predict(self, head, states, inputs):
    return {"log_probs": head(states, inputs["lengths"], names=("primary",))["primary"]}

  def predictions_name(self):
    return f"predictions_{self.name}.conllu"

  def decoded_trees(self, rows, sentences):
    """Each sentence (its words, tags and id kept) with the heads and relations of its
    `[T, (T + 1)·R]` log-probabilities decoded into a well-formed tree (MST)."""
    predicted = []
    r = len(self.relations)
    for sentence, row in zip(sentences, rows):
      t = len(sentence)
      if row is None:  # an empty sentence (a blank text line): no tree
        predicted.append(sentence)
        continue
      log_p = row["log_probs"][:t].reshape(t, -1, r)[:, :t + 1]  # [dependent, head, relation]
      arc = np.full([t + 1, t + 1], -1e9)
      best = np.full([t + 1, t + 1], -1e9)
      relation = np.zeros([t + 1, t + 1], np.int64)
      arc[:, 1:] = np.logaddexp.reduce(log_p, axis=-1).T
      best[:, 1:] = log_p.max(-1).T
      relation[:, 1:] = log_p.argmax(-1).T
      heads, relations = mst.decode(arc, best, relation, t + 1, "mst")
      predicted.append(conllu.Sentence(sentence.words, heads,
                                       [self.relations[i] for i in relations], sentence.upos,
                                       sentence.xpos, sentence.sent_id))
    return predicted

  def write_predictions(self, path, sentences, rows):
    """CoNLL-U with the predicted heads and relations (the input's tags and ids kept)."""
    conllu.write_conllu(path, sentences, self.decoded_trees(rows, sentences))

  def evaluate(self, rows, path, log):
    """UAS/LAS of the dev sentences (punctuation included, and `*_no_punct` without) from each
    sentence's `[T, (T + 1)·R]` log-probabilities, decoded into well-formed trees (MST)."""
    del log
    predicted = self.decoded_trees(rows, self.dev)
    if path:
      conllu.write_conllu(path, self.dev, predicted)
    report = parsing_scores.dev_report(self.dev, predicted)
    del report["words"]  # CVT's dev curve keeps the four scores
    return report
