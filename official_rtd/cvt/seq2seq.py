"""Translation's modules (dissertation §4.2.4; Luong et al., 2015): the decoder LSTMP over the
target embeddings, each decoder's bilinear attention and softmax, and the primary decoder's beam
search. Shapes in each docstring; the equations in the task's module, `translator.py`."""
from typing import Sequence

import tensorflow as tf
import tf_keras

from official_rtd.cvt import encoder as encoder_lib


class Attention(tf_keras.layers.Layer):
  """One decoder's bilinear attention and softmax: `call(memory, memory_mask, h, drop_rate)`
  with memory `[batch, src, width]`, h `[batch, tgt, dec]` → (logits `[batch, tgt, vocab]`,
  α `[batch, tgt, src]`)."""

  def __init__(self, hidden_size: int, vocab_size: int, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size, self.vocab_size = hidden_size, vocab_size

  def build(self, input_shape):
    width, dec = input_shape[0][-1], input_shape[1][-1]
    self.w_alpha = self.add_weight("w_alpha", [width, dec], initializer="glorot_uniform")
    self.w_a = self.add_weight("w_a", [width + dec, self.hidden_size], initializer="glorot_uniform")
    self.w_s = self.add_weight("w_s", [self.hidden_size, self.vocab_size],
                               initializer="glorot_uniform")
    self.b_s = self.add_weight("b_s", [self.vocab_size], initializer="zeros")
    super().build(input_shape)

  def call(self, inputs, memory_mask=None, attention_dropout: float = 0.0):
    memory, h = inputs
    scores = tf.einsum("bjw,wd,btd->btj", memory, self.w_alpha, h)  # h^j W_α h̄^t
    scores += (1.0 - tf.cast(memory_mask, scores.dtype))[:, None, :] * -1e9
    alpha = tf.nn.softmax(scores, -1)
    if attention_dropout > 0:  # zero a fraction of the attention weights
      alpha *= tf.cast(tf.random.uniform(tf.shape(alpha)) >= attention_dropout, alpha.dtype)
    context = tf.matmul(alpha, memory)  # c_t = Σ_j α_j h^j
    a = tf.tanh(tf.matmul(tf.concat([context, h], -1), self.w_a))  # a_t = tanh(W_a [c_t, h̄_t])
    return tf.matmul(a, self.w_s) + self.b_s, alpha  # W_s a_t


class TranslatorModules(tf_keras.layers.Layer):
  """Target embeddings, the decoder LSTMP and the three decoders' attention/softmax layers.

  `call(states, lengths, prev_targets, dropout_rate, names, attention_dropout)` runs the decoder
  with teacher forcing on `prev_targets` `[batch, tgt]` (`<s>` then y^1..y^{K−1}) and returns
  `{decoder: logits [batch, tgt, vocab]}`; `step` is one step of the primary decoder for
  search."""

  def __init__(self, config, vocab_size: int, **kwargs):
    super().__init__(**kwargs)
    self.units, self.projection = config.lstm1_size, config.projection_size
    self.embedding = tf_keras.layers.Embedding(vocab_size, config.word_dim, name="embedding")
    self.decoders = {name: Attention(config.hidden_size, vocab_size, name=name)
                     for name in ("primary", "attention_dropout", "future")}

  def build(self, input_shape):
    dim = self.embedding.output_dim
    self.input_kernel = self.add_weight("input_kernel", [1, dim, 4 * self.units],
                                        initializer="glorot_uniform")
    self.recurrent_kernel = self.add_weight("recurrent_kernel",
                                            [1, self.projection, 4 * self.units],
                                            initializer="glorot_uniform")
    self.bias = self.add_weight("bias", [1, 1, 4 * self.units], initializer="zeros")
    self.projection_kernel = self.add_weight("projection_kernel",
                                             [1, self.units, self.projection],
                                             initializer="glorot_uniform")
    super().build(input_shape)

  @staticmethod
  def memory(states):
    """Source states h^j `[batch, src, 4·projection]`."""
    return tf.concat([states["h1"], states["h2"]], -1)

  def decoder_states(self, prev_targets, target_lengths, dropout_rate: float):
    """h̄ `[batch, tgt, projection]` after reading each previous target word (teacher forcing)."""
    x = self.embedding(prev_targets)  # [batch, tgt, dim]
    h = encoder_lib.run_lstmp(x[None], tf.sequence_mask(target_lengths, tf.shape(x)[1]),
                              self.input_kernel, self.bias, self.recurrent_kernel,
                              self.projection_kernel)
    return encoder_lib.dropout(h[0], dropout_rate)

  def call(self, states, lengths, prev_targets=None, target_lengths=None,
           dropout_rate: float = 0.0, names: Sequence[str] = ("primary",),
           attention_dropout: float = 0.0):
    memory = encoder_lib.dropout(self.memory(states), dropout_rate)
    memory_mask = tf.sequence_mask(lengths, tf.shape(memory)[1])
    h = self.decoder_states(prev_targets, target_lengths, dropout_rate)
    out = {}
    for name in names:
      rate = attention_dropout if name == "attention_dropout" else 0.0
      out[name] = self.decoders[name]((memory, h), memory_mask, rate)[0]
    return out

  def step(self, memory, memory_mask, prev_word, r, c):
    """One primary-decoder step for search: `prev_word` `[n]`, state r `[n, projection]`, c
    `[n, units]` → (log p(y | ·) `[n, vocab]`, r, c)."""
    x = self.embedding(prev_word)
    gates = tf.matmul(x[None], self.input_kernel) + self.bias  # [1, n, 4·units]
    r, c = encoder_lib.lstmp_cell(gates, r[None], c[None], self.recurrent_kernel,
                                  self.projection_kernel)
    logits, _ = self.decoders["primary"]((memory, r[0][:, None]), memory_mask)
    return tf.nn.log_softmax(logits[:, 0]), r[0], c[0]


def beam_search(modules: TranslatorModules, memory, memory_mask, beam_size: int,
                max_length: int, bos: int, eos: int, banned: Sequence[int] = ()):
  """The primary decoder's beam search: at each step every live hypothesis is extended by every
  word but the `banned` ones and the `beam_size` best by total log-probability are kept; a
  hypothesis ends at `</s>` (kept with its score) or after `max_length` words. Returns (tokens
  `[batch, max_length]`, lengths `[batch]` including `</s>` when reached, scores `[batch]`) of
  the best hypothesis."""
  batch = tf.shape(memory)[0]
  k = beam_size
  tile = lambda x: tf.repeat(x, k, axis=0)  # [batch, ...] → [batch·k, ...]
  memory_k, mask_k = tile(memory), tile(memory_mask)
  vocab = modules.decoders["primary"].vocab_size
  r = tf.zeros([batch * k, modules.projection], memory.dtype)
  c = tf.zeros([batch * k, modules.units], memory.dtype)
  # Only the first copy of each beam is live at the start, so no hypothesis is found k times.
  scores = tf.tile(tf.concat([[0.0], tf.fill([k - 1], -1e9)], 0)[None], [batch, 1])
  tokens = tf.zeros([batch, k, max_length], tf.int32)
  finished = tf.zeros([batch, k], tf.bool)
  prev = tf.fill([batch * k], bos)
  eos_row = tf.one_hot(eos, vocab, on_value=0.0, off_value=-1e9)  # a finished beam stays as is
  ban = tf.reduce_sum(tf.one_hot(list(banned), vocab, on_value=-1e9, off_value=0.0), 0
                      ) if banned else tf.zeros([vocab])

  def body(t, prev, r, c, scores, tokens, finished):
    log_p, r, c = modules.step(memory_k, mask_k, prev, r, c)
    log_p = tf.reshape(log_p, [batch, k, vocab]) + ban
    log_p = tf.where(finished[..., None], eos_row[None, None], log_p)
    total = tf.reshape(scores[..., None] + log_p, [batch, k * vocab])
    scores, best = tf.math.top_k(total, k)
    parent, word = best // vocab, best % vocab
    gather = lambda x: tf.gather(x, parent, batch_dims=1)
    tokens = gather(tokens)
    tokens = tf.where(tf.one_hot(t, max_length, on_value=True, off_value=False)[None, None],
                      word[..., None], tokens)
    was_finished = gather(finished)
    finished = was_finished | tf.equal(word, eos)
    flat_parent = tf.reshape(parent + tf.range(batch)[:, None] * k, [-1])
    r, c = tf.gather(r, flat_parent), tf.gather(c, flat_parent)
    return t + 1, tf.reshape(word, [-1]), r, c, scores, tokens, finished

  _, _, _, _, scores, tokens, finished = tf.while_loop(
      lambda t, prev, r, c, scores, tokens, finished: (t < max_length) & ~tf.reduce_all(finished),
      body, (0, prev, r, c, scores, tokens, finished))
  best = tf.argmax(scores, -1, output_type=tf.int32)
  tokens = tf.gather(tokens, best, batch_dims=1)
  is_eos = tf.equal(tokens, eos)
  first_eos = tf.argmax(tf.cast(is_eos, tf.int32), -1, output_type=tf.int32)
  lengths = tf.where(tf.reduce_any(is_eos, -1), first_eos + 1, max_length)
  return tokens, lengths, tf.gather(scores, best, batch_dims=1)


def shifted(targets, bos: int):
  """Teacher forcing inputs: `<s>` followed by the targets without their last word."""
  return tf.concat([tf.fill([tf.shape(targets)[0], 1], bos), targets[:, :-1]], 1)
