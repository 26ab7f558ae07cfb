"""CVT's sequence taggers (dissertation §4.2.2): POS, chunking and NER on the shared encoder.

Prediction modules NN(x) = U·ReLU(W x) + b (logits; softmax gives p), each on its view:
  primary  p(y_t | x)        = NN(h1_t ⊕ h2_t)
  fwd      p_fwd(y_t | x)    = NN_fwd(h→1_t)         sees x_1..x_t
  bwd      p_bwd(y_t | x)    = NN_bwd(h←1_t)         sees x_t..x_T
  future   p_future(y_t | x) = NN_future(h→1_{t−1})  sees x_1..x_{t−1}
  past     p_past(y_t | x)   = NN_past(h←1_{t+1})    sees x_{t+1}..x_T
  full     p_full(y_t | x)   = NN_full(h1_t ⊕ h2_t)  (§4.3.1: the whole input, with dropout)
Chunking and NER train on BIOES tags (§4.3.1) and are scored as conlleval does (IOB2 output).
"""
import os
from typing import Sequence

import tensorflow as tf
import tf_keras

from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import task as task_lib
from official_rtd.data import tagging_data
from official_rtd.data import tagging_scores
from official_rtd.utils import textio

AUXILIARY = ("fwd", "bwd", "future", "past", "full")
CARVED_DEV = 1000  # a task without a dev file (CoNLL-2000 chunking): its last sentences are dev


class PredictionModule(tf_keras.layers.Layer):
  """NN(x) = U·ReLU(W x) + b, returning logits `[..., num_tags]`."""

  def __init__(self, hidden_size: int, num_tags: int, **kwargs):
    super().__init__(**kwargs)
    self.hidden = tf_keras.layers.Dense(hidden_size, activation="relu", name="hidden")
    self.out = tf_keras.layers.Dense(num_tags, name="out")

  def call(self, x):
    return self.out(self.hidden(x))


def views(states, dropout_rate: float, names: Sequence[str]):
  """The input `[batch, time, ·]` of each module in `names` from the encoder's states, dropout
  applied. Only the states those modules read are dropped out: `tf.function` keeps stateful ops,
  so an unused view's random numbers would still be drawn."""
  drop = lambda x: encoder_lib.dropout(x, dropout_rate)
  wanted, out = set(names), {}
  if wanted & {"primary", "full"}:
    out["primary"] = out["full"] = tf.concat([drop(states["h1"]), drop(states["h2"])], -1)
  if wanted & {"fwd", "future"}:
    out["fwd"] = drop(states["fwd1"])
    out["future"] = tf.pad(out["fwd"][:, :-1], [[0, 0], [1, 0], [0, 0]])  # h→1_{t−1}, 0 at t = 1
  if wanted & {"bwd", "past"}:
    out["bwd"] = drop(states["bwd1"])
    out["past"] = tf.pad(out["bwd"][:, 1:], [[0, 0], [0, 1], [0, 0]])  # h←1_{t+1}, 0 past the end
  return {name: out[name] for name in names}


class TaggerModules(tf_keras.layers.Layer):
  """`call(states, lengths, dropout_rate, names)` → `{module: logits [batch, time, tags]}`."""

  def __init__(self, hidden_size: int, num_tags: int, **kwargs):
    super().__init__(**kwargs)
    self.modules = {name: PredictionModule(hidden_size, num_tags, name=name)
                    for name in ("primary",) + AUXILIARY}

  def call(self, states, lengths=None, dropout_rate: float = 0.0,
           names: Sequence[str] = ("primary",) + AUXILIARY):
    del lengths
    inputs = views(states, dropout_rate, names)
    return {name: self.modules[name](inputs[name]) for name in names}


def read_sentences(name: str, spec, folder: str):
  """(train, dev) sentences of task `name` (`spec`, in `folder`); without a dev file the last
  `CARVED_DEV` training sentences are dev, as `run_tagging` does by default."""
  try:
    return tagging_data.load_task(spec, folder, carve_dev_sentences=CARVED_DEV)
  except tagging_data.CarveError as e:
    raise ValueError(
        f"{name}: {os.path.join(folder, spec.train_file)} holds {e.sentences} sentences and the "
        f"task has no dev file, so run_cvt sets its last {CARVED_DEV} sentences aside as dev: "
        f"give it more than {CARVED_DEV} training sentences (then --train_fraction or "
        "--max_train_sentences picks the training subset from the rest)") from None


@task_lib.register(*tagging_data.TASKS)
class TaggingTask(task_lib.PerWordTask):
  """A CoNLL tagging task as `run_tagging` reads it (`--data_dir` holding the task's folder, e.g.
  chunk_conll2000/, or tagging/chunk_conll2000/, or the task's files)."""
  auxiliary_modules = AUXILIARY

  def __init__(self, name, labels, settings):
    super().__init__(name, labels, settings)
    self.spec = tagging_data.get_task(name)
    self.primary_metric = self.primary_metric_of(name)
    self.labels = list(labels["tags"])
    self._ids = {tag: i for i, tag in enumerate(self.labels)}

  @classmethod
  def read(cls, name, config, rng):
    spec = tagging_data.get_task(name)
    folder = task_lib.task_folder(config, name, [
        os.path.join(config.data_dir, *parts, spec.folder) for parts in ((), ("tagging",))],
                                  spec.folder)
    train, dev = read_sentences(name, spec, folder)
    train, remainder = task_lib.labeled_subset(train, rng, config)
    if spec.spans:  # §4.3.1: BIOES for chunking and NER
      train = tagging_data.with_scheme(train, "bioes")
    labels = {"tags": sorted({t for s in train for t in s.tags})}
    return cls(name, labels, config).with_data(train, dev, remainder)

  @classmethod
  def primary_metric_of(cls, name):
    return "f1" if tagging_data.get_task(name).spans else "accuracy"

  def source_words(self, example):
    return example.words

  def targets(self, example):
    return [self._ids[tag] for tag in example.tags]

  @property
  def num_labels(self):
    return len(self.labels)

  def vocabulary_json(self):
    return {"tags": self.labels}

  def build_head(self, config):
    return TaggerModules(config.hidden_size, len(self.labels), name=f"{self.name}_modules")

  def predict(self, head, states, inputs):
    """Each module's tag ids `[batch, time]`: the primary's (`primary`) is the prediction; the
    auxiliary ones' are scored too, as evidence that each learns from its view."""
    logits = head(states, inputs["lengths"])
    return {name: tf.argmax(x, -1, output_type=tf.int32) for name, x in logits.items()}

  def decoded_tags(self, rows, sentences, module: str = "primary"):
    """Each sentence's tags from module `module`'s `predict` rows, as written and scored (IOB2
    for span tasks)."""
    return tagging_scores.output_tags(
        self.spec, [[self.labels[i] for i in row[module][:len(s.words)]] if row is not None else []
                    for row, s in zip(rows, sentences)])  # no row: an empty sentence

  def write_predictions(self, path, sentences, rows):
    """`word tag` lines (CoNLL columns), a blank line after each sentence."""
    lines = []
    for sentence, tags in zip(sentences, self.decoded_tags(rows, sentences)):
      lines.extend(f"{word} {tag}" for word, tag in zip(sentence.words, tags))
      lines.append("")
    textio.write_lines_atomic(path, lines)

  def evaluate(self, rows, path, log):
    """The primary module's metrics (written to `path`), and `<module>_<metric>` of each
    auxiliary module's own predictions."""
    del log
    tags = {name: self.decoded_tags(rows, self.dev, name) for name in rows[0]}
    if path:
      tagging_scores.write_predictions(path, self.dev, tags["primary"])
    out = tagging_scores.evaluate(self.spec, self.dev, tags["primary"])
    for name in AUXILIARY:
      out[f"{name}_{self.primary_metric}"] = tagging_scores.evaluate(
          self.spec, self.dev, tags[name])[self.primary_metric]
    return out
