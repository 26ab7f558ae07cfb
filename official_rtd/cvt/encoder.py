"""CVT's shared encoder (dissertation §4.2.1): a CNN-BiLSTM over words and characters.

v_t = word embedding + character CNN (filter widths 2, 3, 4, max-pooled over the word); two
Bi-LSTM layers whose LSTMs have projection layers (LSTMP); h1 = [h→1; h←1], h2 = [h→2; h←2].
Every task's prediction modules (`tagger.py`, `parser.py`, `translator.py`) read its views.
"""
from typing import Dict

import tensorflow as tf
import tf_keras

from official_rtd.cvt import settings

CvtConfig = settings.CvtConfig  # the encoder's sizes (TensorFlow-free, for --help)


def lstmp_cell(x_gates, r, c, recurrent_kernel, projection):
  """One LSTMP step (Sak et al., 2014) for a stack of LSTMs `[..., batch, ·]`: gates =
  x W_x + b (given, `x_gates`) + r_{t−1} W_r; c_t = f ⊙ c_{t−1} + i ⊙ g, h_t = o ⊙ tanh(c_t),
  r_t = h_t W_p (the output and the recurrent state). Returns (r_t, c_t)."""
  i, f, g, o = tf.split(x_gates + tf.matmul(r, recurrent_kernel), 4, axis=-1)
  c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)  # forget-gate bias 1
  return tf.matmul(tf.sigmoid(o) * tf.tanh(c), projection), c


@tf.custom_gradient
def lstmp_recurrence(x_gates, keep, recurrent_kernel, projection):
  """The recurrence of a stack of Z LSTMPs (`lstmp_cell`), state held where `keep` is False.

  Args:
    x_gates: `[Z, time, batch, 4·units]`, x_t W_x + b.
    keep: `[time, 1, batch, 1]` bool: False at padding (the state is carried unchanged).
    recurrent_kernel: W_r `[Z, projection, 4·units]`.
    projection: W_p `[Z, units, projection]`.
  Returns:
    r `[time, Z, batch, projection]` (the state after each step).

  Its gradient is backpropagation through time written out: the loop computes only each step's
  gate gradients; the weight gradients are then one matmul each over all steps (`[time·batch]`
  rows), where autodiff of the loop would accumulate a small matmul per step. The forward loop
  slices step t out of `x_gates` (`x_gates[:, t]`): the gates stay in the input matmul's layout,
  and their gradient is returned in it, so no `[time, ..., 4·units]` tensor is transposed to
  time-major and back.
  """
  z, time, batch = tf.shape(x_gates)[0], tf.shape(x_gates)[1], tf.shape(x_gates)[2]
  units, proj = tf.shape(projection)[1], tf.shape(projection)[2]
  zeros = (tf.zeros([z, batch, proj], x_gates.dtype), tf.zeros([z, batch, units], x_gates.dtype))
  arrays = lambda: tf.TensorArray(x_gates.dtype, size=time)

  def forward(t, r_prev, c_prev, r_all, c_all, gates_all):
    gates = x_gates[:, t] + tf.matmul(r_prev, recurrent_kernel)
    i, f, g, o = tf.split(gates, 4, axis=-1)
    c = tf.sigmoid(f + 1.0) * c_prev + tf.sigmoid(i) * tf.tanh(g)
    r = tf.matmul(tf.sigmoid(o) * tf.tanh(c), projection)
    keep_t = keep[t]
    r, c = tf.where(keep_t, r, r_prev), tf.where(keep_t, c, c_prev)
    return t + 1, r, c, r_all.write(t, r), c_all.write(t, c), gates_all.write(t, gates)

  # The loop keeps only the states and the gates' pre-activations; the gradient recomputes the
  # rest for all steps at once (large element-wise ops outside the loop, 3 values per step
  # written instead of 10).
  _, _, _, r_states, c_states, gates = tf.while_loop(
      lambda t, *_: t < time, forward, (0,) + zeros + (arrays(), arrays(), arrays()))
  r_states, c_states, gates = r_states.stack(), c_states.stack(), gates.stack()

  def grad(d_outputs):
    r_prev = tf.concat([zeros[0][tf.newaxis], r_states[:-1]], 0)  # the state before each step
    c_prev = tf.concat([zeros[1][tf.newaxis], c_states[:-1]], 0)
    i, f, g, o = tf.split(gates, 4, axis=-1)
    i, f, g, o = tf.sigmoid(i), tf.sigmoid(f + 1.0), tf.tanh(g), tf.sigmoid(o)
    tanh_c = tf.tanh(f * c_prev + i * g)
    h = o * tanh_c
    # ∂gates = [∂c·g·i(1−i), ∂c·c_{t−1}·f(1−f), ∂c·i(1−g²), ∂h·tanh(c)·o(1−o)]: the factors.
    factors = tf.concat([g * i * (1.0 - i), c_prev * f * (1.0 - f), i * (1.0 - g * g),
                         tanh_c * o * (1.0 - o)], -1)
    dh_to_dc = o * (1.0 - tanh_c * tanh_c)
    keep_f = tf.cast(keep, x_gates.dtype)
    # Kernels transposed once: a matmul with `transpose_b` is ~3× slower on CPU (measured).
    recurrent_t = tf.transpose(recurrent_kernel, [0, 2, 1])
    projection_t = tf.transpose(projection, [0, 2, 1])

    def backward(t, dr_next, dc_next, d_gates_all, d_r_all):
      keep_t = keep_f[t]  # sliced once: each `[t]` is an op of the loop
      dr = d_outputs[t] + dr_next  # ∂L/∂(state r_t)
      d_new_r, d_new_c = keep_t * dr, keep_t * dc_next
      dh = tf.matmul(d_new_r, projection_t)
      d_new_c += dh * dh_to_dc[t]
      d_gates = tf.concat([d_new_c, d_new_c, d_new_c, dh], -1) * factors[t]
      dr_prev = tf.matmul(d_gates, recurrent_t) + (1.0 - keep_t) * dr
      dc_prev = d_new_c * f[t] + (1.0 - keep_t) * dc_next
      return t - 1, dr_prev, dc_prev, d_gates_all.write(t, d_gates), d_r_all.write(t, d_new_r)

    _, _, _, d_gates, d_new_r = tf.while_loop(
        lambda t, *_: t >= 0, backward, (time - 1,) + zeros + (arrays(), arrays()))
    d_gates = tf.transpose(d_gates.stack(), [1, 0, 2, 3])  # [Z, time, batch, 4·units]
    return (d_gates, None, _over_steps(r_prev, d_gates),
            _over_steps(h, tf.transpose(d_new_r.stack(), [1, 0, 2, 3])))

  return r_states, grad


def run_lstmp(inputs, mask, input_kernel, bias, recurrent_kernel, projection):
  """Z stacked LSTMPs over `inputs` `[Z, batch, time, features]` (`mask` `[batch, time]`, False
  at padding): the input's share of the gates for every step as one matmul (rows in time-major
  order, so the recurrence slices each step's gates without a transpose), then
  `lstmp_recurrence`. Returns `[Z, batch, time, projection]`."""
  z, batch, time = tf.shape(inputs)[0], tf.shape(inputs)[1], tf.shape(inputs)[2]
  inputs = tf.transpose(inputs, [0, 2, 1, 3])  # [Z, time, batch, features]
  x_gates = tf.matmul(tf.reshape(inputs, [z, time * batch, -1]), input_kernel) + bias
  x_gates = tf.reshape(x_gates, [z, time, batch, -1])
  keep = tf.transpose(mask)[:, tf.newaxis, :, tf.newaxis]  # [time, 1, batch, 1]
  outputs = lstmp_recurrence(x_gates, keep, tf.convert_to_tensor(recurrent_kernel),
                             tf.convert_to_tensor(projection))  # [time, Z, batch, projection]
  return tf.transpose(outputs, [1, 2, 0, 3])


def _over_steps(a, b):
  """Σ_t a_tᵀ b_t per stacked LSTM: `a` `[time, Z, batch, m]`, `b` `[Z, time, batch, n]` →
  `[Z, m, n]`, as one matmul over time·batch rows (an explicit transpose and matmul: 2× faster
  than einsum)."""
  a = tf.reshape(tf.transpose(a, [1, 3, 0, 2]), [tf.shape(a)[1], tf.shape(a)[3], -1])
  return tf.matmul(a, tf.reshape(b, [tf.shape(b)[0], -1, tf.shape(b)[3]]))


class BiLSTMP(tf_keras.layers.Layer):
  """A forward and a backward LSTMP over `[batch, time, features]`, run in one loop (the two
  directions' weights stacked, `[2, ...]`), the input's share of the gates computed for every
  step at once before the loop. State is carried unchanged through padding (`mask` False), so a
  sentence's outputs do not depend on how far it is padded. Returns (h→, h←) `[batch, time,
  projection]`, zero at padding."""

  def __init__(self, units: int, projection: int, **kwargs):
    super().__init__(**kwargs)
    self.units, self.projection = units, projection

  def build(self, input_shape):
    self.input_kernel = self.add_weight(
        "input_kernel", [2, input_shape[-1], 4 * self.units], initializer="glorot_uniform")
    self.recurrent_kernel = self.add_weight(
        "recurrent_kernel", [2, self.projection, 4 * self.units], initializer="glorot_uniform")
    self.bias = self.add_weight("bias", [2, 1, 4 * self.units], initializer="zeros")
    self.projection_kernel = self.add_weight(
        "projection_kernel", [2, self.units, self.projection], initializer="glorot_uniform")
    super().build(input_shape)

  def call(self, inputs, lengths, mask):
    reverse = tf.reverse_sequence(inputs, lengths, seq_axis=1, batch_axis=0)
    outputs = run_lstmp(tf.stack([inputs, reverse]), mask, self.input_kernel, self.bias,
                        self.recurrent_kernel, self.projection_kernel)  # [2, b, time, p]
    # `unstack`, not `outputs[0]`, `outputs[1]`: its gradient is one stack, not two zero-filled
    # slice gradients of the whole.
    forward, backward = tf.unstack(outputs * tf.cast(mask, inputs.dtype)[None, :, :, None])
    return forward, tf.reverse_sequence(backward, lengths, seq_axis=1, batch_axis=0)


class CnnBiLstmEncoder(tf_keras.layers.Layer):
  """`call(inputs, dropout_rate)` with `words` `[batch, time]`, `chars` `[batch, time,
  max_word_length]`, `lengths` `[batch]` returns the views every prediction module reads:
  `{"fwd1", "bwd1"}` `[batch, time, projection]`, `{"h1", "h2"}` `[batch, time, 2·projection]`
  (zero at padding). `dropout_rate` (0 at inference) applies to v and to h1."""

  def __init__(self, config: CvtConfig, num_words: int, num_chars: int, word_embeddings=None,
               **kwargs):
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
    self.bilstm1 = BiLSTMP(config.lstm1_size, config.projection_size, name="bilstm1")
    self.bilstm2 = BiLSTMP(config.lstm2_size, config.projection_size, name="bilstm2")

  def call(self, inputs, dropout_rate: float = 0.0) -> Dict[str, tf.Tensor]:
    words, chars, lengths = inputs["words"], inputs["chars"], inputs["lengths"]
    time = tf.shape(chars)[1]
    v = self.word_embedding(words) + self.char_features(chars)
    mask = tf.sequence_mask(lengths, time)
    fwd1, bwd1 = self.bilstm1(dropout(v, dropout_rate), lengths, mask)
    h1 = tf.concat([fwd1, bwd1], -1)
    fwd2, bwd2 = self.bilstm2(dropout(h1, dropout_rate), lengths, mask)
    return {"fwd1": fwd1, "bwd1": bwd1, "h1": h1, "h2": tf.concat([fwd2, bwd2], -1)}

  def char_features(self, chars):
    """`[batch, time, word_dim]`: each position's character CNN, max-pooled over the word, for
    `chars` `[batch, time, max_word_length]`."""
    batch, time = tf.shape(chars)[0], tf.shape(chars)[1]
    # Character positions past the longest word + the widest filter only add all-padding windows,
    # which shorter words have anyway: cut them (the max-pooled features do not change).
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(chars > 0, tf.int32), -1))
    chars = tf.reshape(chars[:, :, :longest + max(self.config.char_filter_widths)],
                       [batch * time, -1])
    # The CNN runs once per distinct spelling in the batch (a batch repeats most of its words,
    # and every padding position is the same empty row), then each position takes its row.
    # (`UniqueV2` over rows: 12× faster than joining each row into a string for `tf.unique`.)
    distinct, index = tf.raw_ops.UniqueV2(x=chars, axis=[0])
    char_vectors = self.char_embedding(distinct)  # [distinct, chars, char_dim]
    pooled = tf.concat([tf.reduce_max(cnn(char_vectors), axis=1) for cnn in self.char_cnns], -1)
    return tf.reshape(tf.gather(pooled, index), [batch, time, self.config.word_dim])


def dropout(x, rate):
  return tf.nn.dropout(x, rate) if rate > 0 else x
