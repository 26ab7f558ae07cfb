"""CVT's sequence tagger (dissertation §4.2.1–4.2.2): a CNN-BiLSTM encoder, a primary prediction
module per task and the auxiliary modules that see restricted views of the input.

Encoder: v_t = word embedding + character CNN (filter widths 2, 3, 4, max-pooled over the word);
two Bi-LSTM layers whose LSTMs have projection layers (LSTMP); h1 = [h→1; h←1], h2 = [h→2; h←2].
Prediction modules: NN(x) = U·ReLU(W x) + b (logits; softmax gives p).
  primary  p(y_t | x)      = NN(h1_t ⊕ h2_t)
  fwd      p_fwd(y_t | x)    = NN_fwd(h→1_t)       sees x_1..x_t
  bwd      p_bwd(y_t | x)    = NN_bwd(h←1_t)       sees x_t..x_T
  future   p_future(y_t | x) = NN_future(h→1_{t−1})  sees x_1..x_{t−1}
  past     p_past(y_t | x)   = NN_past(h←1_{t+1})    sees x_{t+1}..x_T
  full     p_full(y_t | x)   = NN_full(dropout(h1_t ⊕ h2_t))  (§4.3.1: the whole input, with dropout)
"""
import dataclasses
from typing import Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

from official_rtd.cvt import parsing

AUXILIARY = ("fwd", "bwd", "future", "past", "full")


@dataclasses.dataclass(frozen=True)
class CvtConfig:
  """Table 4.1's sizes by default. v_t is the sum of the word embedding and the char CNN's
  output, so the CNN has `word_dim` filters in all, split evenly over the widths (300: 100 each)."""
  word_dim: int = 300
  char_dim: int = 50
  char_filter_widths: Sequence[int] = (2, 3, 4)
  lstm1_size: int = 1024
  lstm2_size: int = 512
  projection_size: int = 512
  hidden_size: int = 512

  def filters(self):
    """Filters per width, summing to `word_dim`."""
    n = len(self.char_filter_widths)
    return [self.word_dim // n + (i < self.word_dim % n) for i in range(n)]


class LSTMP(tf_keras.layers.Layer):
  """LSTM with a projection layer (Sak et al., 2014) over `[batch, time, features]`:
  gates from [x_t; r_{t−1}], c_t = f ⊙ c_{t−1} + i ⊙ g, h_t = o ⊙ tanh(c_t), r_t = W_p h_t (the
  output and the recurrent state). State is carried unchanged through padding (`mask` False), so
  a sentence's outputs do not depend on how far it is padded."""

  def __init__(self, units: int, projection: int, **kwargs):
    super().__init__(**kwargs)
    self.units, self.projection = units, projection

  def build(self, input_shape):
    self.gates = tf_keras.layers.Dense(4 * self.units, name="gates")
    self.gates.build([None, input_shape[-1] + self.projection])
    self.project = tf_keras.layers.Dense(self.projection, use_bias=False, name="projection")
    self.project.build([None, self.units])
    super().build(input_shape)

  def call(self, inputs, mask):
    batch = tf.shape(inputs)[0]
    zero_r = tf.zeros([batch, self.projection], inputs.dtype)
    zero_c = tf.zeros([batch, self.units], inputs.dtype)

    def step(state, elements):
      r, c = state
      x, keep = elements
      i, f, g, o = tf.split(self.gates(tf.concat([x, r], -1)), 4, axis=-1)
      new_c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)  # forget-gate bias 1
      new_r = self.project(tf.sigmoid(o) * tf.tanh(new_c))
      keep = keep[:, None]
      return tf.where(keep, new_r, r), tf.where(keep, new_c, c)

    time_major = (tf.transpose(inputs, [1, 0, 2]), tf.transpose(mask, [1, 0]))
    outputs, _ = tf.scan(step, time_major, initializer=(zero_r, zero_c))
    return tf.transpose(outputs, [1, 0, 2])


class PredictionModule(tf_keras.layers.Layer):
  """NN(x) = U·ReLU(W x) + b, returning logits `[..., num_tags]`."""

  def __init__(self, hidden_size: int, num_tags: int, **kwargs):
    super().__init__(**kwargs)
    self.hidden = tf_keras.layers.Dense(hidden_size, activation="relu", name="hidden")
    self.out = tf_keras.layers.Dense(num_tags, name="out")

  def call(self, x):
    return self.out(self.hidden(x))


class CvtTagger(tf_keras.Model):
  """`call(inputs, dropout_rate)` with `words` `[batch, time]`, `chars`
  `[batch, time, max_word_length]`, `lengths` `[batch]` returns `{task: {"primary": logits,
  "fwd": ..., ...}}`, each `[batch, time, num_tags]` (padding positions are meaningless); a
  parsing task's (`num_relations`) are `{"primary", "fwd-fwd", ...}` edge log-probabilities
  `[batch, time, (time + 1)·relations]` (`parsing.py`).
  `dropout_rate` (0 at inference) applies to v and to each Bi-LSTM's outputs."""

  def __init__(self, config: CvtConfig, num_words: int, num_chars: int,
               num_tags: Dict[str, int], word_embeddings=None,
               num_relations: Optional[Dict[str, int]] = None, **kwargs):
    super().__init__(**kwargs)
    self.config = config
    initializer = (tf_keras.initializers.Constant(word_embeddings)
                   if word_embeddings is not None else "uniform")
    self.word_embedding = tf_keras.layers.Embedding(num_words, config.word_dim,
                                                    embeddings_initializer=initializer,
                                                    name="word_embedding")
    self.char_embedding = tf_keras.layers.Embedding(num_chars, config.char_dim,
                                                    name="char_embedding")
    self.char_cnns = [tf_keras.layers.Conv1D(filters, width, name=f"char_cnn_{width}")
                      for filters, width in zip(config.filters(), config.char_filter_widths)]
    self.lstms = {name: LSTMP(size, config.projection_size, name=name)
                  for name, size in (("fwd1", config.lstm1_size), ("bwd1", config.lstm1_size),
                                     ("fwd2", config.lstm2_size), ("bwd2", config.lstm2_size))}
    self.modules_by_task = {
        task: {name: PredictionModule(config.hidden_size, n, name=f"{task}_{name}")
               for name in ("primary",) + AUXILIARY}
        for task, n in num_tags.items()}
    # Parsing tasks (`parsing.py`, §4.2.3): edge scorers over the same views.
    self.parsers = {task: parsing.ParserModules(n, config.hidden_size, name=f"{task}_parser")
                    for task, n in (num_relations or {}).items()}

  def _dropout(self, x, rate):
    return tf.nn.dropout(x, rate) if rate > 0 else x

  def _bilstm(self, x, lengths, mask, layer: int):
    """(h→, h←), zero at padding."""
    forward = self.lstms[f"fwd{layer}"](x, mask=mask)
    reverse = tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)
    backward = tf.reverse_sequence(self.lstms[f"bwd{layer}"](reverse, mask=mask), lengths,
                                   seq_axis=1, batch_axis=0)
    zero = tf.cast(mask, x.dtype)[:, :, None]
    return forward * zero, backward * zero

  def encode(self, inputs, dropout_rate: float = 0.0) -> Dict[str, tf.Tensor]:
    """`{"fwd1", "bwd1", "h1", "h2"}` `[batch, time, ...]`."""
    words, chars, lengths = inputs["words"], inputs["chars"], inputs["lengths"]
    batch, time = tf.shape(chars)[0], tf.shape(chars)[1]
    char_vectors = self.char_embedding(tf.reshape(chars, [batch * time, -1]))
    pooled = tf.concat([tf.reduce_max(cnn(char_vectors), axis=1) for cnn in self.char_cnns], -1)
    v = self.word_embedding(words) + tf.reshape(pooled, [batch, time, self.config.word_dim])
    mask = tf.sequence_mask(lengths, time)
    fwd1, bwd1 = self._bilstm(self._dropout(v, dropout_rate), lengths, mask, 1)
    h1 = tf.concat([fwd1, bwd1], -1)
    fwd2, bwd2 = self._bilstm(self._dropout(h1, dropout_rate), lengths, mask, 2)
    return {"fwd1": fwd1, "bwd1": bwd1, "h1": h1, "h2": tf.concat([fwd2, bwd2], -1)}

  def call(self, inputs, dropout_rate: float = 0.0, tasks=None, auxiliary: bool = True):
    states = self.encode(inputs, dropout_rate)
    fwd1 = self._dropout(states["fwd1"], dropout_rate)
    bwd1 = self._dropout(states["bwd1"], dropout_rate)
    top = tf.concat([self._dropout(states["h1"], dropout_rate),
                     self._dropout(states["h2"], dropout_rate)], -1)
    views = {
        "primary": top,
        "fwd": fwd1,
        "bwd": bwd1,
        "future": tf.pad(fwd1[:, :-1], [[0, 0], [1, 0], [0, 0]]),  # h→1_{t−1}, zeros at t = 1
        "past": tf.pad(bwd1[:, 1:], [[0, 0], [0, 1], [0, 0]]),  # h←1_{t+1}, zeros past the end
        "full": top,
    }
    out = {}
    for task in tasks or self.task_names:
      if task in self.parsers:
        names = ("primary",) + (parsing.AUXILIARY if auxiliary else ())
        out[task] = self.parsers[task]({"top": top, "fwd1": fwd1, "bwd1": bwd1},
                                       inputs["lengths"], names)
        continue
      modules = self.modules_by_task[task]
      names = ("primary",) + (AUXILIARY if auxiliary else ())
      out[task] = {name: modules[name](views[name]) for name in names}
    return out

  @property
  def task_names(self):
    return list(self.modules_by_task) + list(self.parsers)
