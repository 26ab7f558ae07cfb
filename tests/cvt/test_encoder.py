"""CVT's encoder and the tagger's views: each auxiliary module sees only its part of the sentence;
the LSTMP recurrence and its written-out gradient against a plain loop differentiated by
TensorFlow; padding, batch mates and the character cut change nothing."""
import numpy as np
import tensorflow as tf

from official_rtd.cvt import data
from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import tagger

SMALL = encoder_lib.CvtConfig(word_dim=30, char_dim=8, lstm1_size=24, lstm2_size=16,
                              projection_size=12, hidden_size=16)
SENTENCE = "The market rallied strongly after the central bank cut rates today".split()


class Tagger:
  """A tiny encoder and chunk modules: `outputs(sentences)` → {module: logits}."""

  def __init__(self, seed=0):
    tf.random.set_seed(seed)
    self.vocab = data.WordCharVocab.build([SENTENCE + ["zebra", "quietly", "x" * 19]])
    self.encoder = encoder_lib.CnnBiLstmEncoder(SMALL, len(self.vocab.words),
                                                len(self.vocab.chars))
    self.modules = tagger.TaggerModules(SMALL.hidden_size, 7)

  def __call__(self, inputs, dropout_rate=0.0, names=("primary",) + tagger.AUXILIARY):
    return self.modules(self.encoder(inputs, dropout_rate), inputs["lengths"], dropout_rate,
                        names)

  def outputs(self, sentences):
    out = self(data.make_batch(sentences, self.vocab).inputs())
    return {name: value.numpy() for name, value in out.items()}


def plain_recurrence(x_gates, keep, recurrent_kernel, projection):
  """The LSTMP recurrence as a Python loop of `lstmp_cell` (TensorFlow differentiates it)."""
  r = tf.zeros(x_gates.shape[1:3] + [projection.shape[-1]])
  c = tf.zeros(x_gates.shape[1:3] + [projection.shape[1]])
  outputs = []
  for t in range(x_gates.shape[0]):
    new_r, new_c = encoder_lib.lstmp_cell(x_gates[t], r, c, recurrent_kernel, projection)
    r, c = tf.where(keep[t], new_r, r), tf.where(keep[t], new_c, c)
    outputs.append(r)
  return tf.stack(outputs)


class RecurrenceTest(tf.test.TestCase):

  def test_outputs_and_gradients_equal_autodiff_of_a_plain_loop(self):
    rng = np.random.default_rng(0)
    time, stack, batch, units, proj = 7, 2, 3, 5, 4
    x_gates = tf.constant(rng.normal(size=[time, stack, batch, 4 * units]), tf.float32)
    lengths = np.array([7, 3, 5])
    keep = tf.constant((np.arange(time)[:, None] < lengths[None])[:, None, :, None])
    recurrent = tf.constant(rng.normal(size=[stack, proj, 4 * units]) * 0.5, tf.float32)
    projection = tf.constant(rng.normal(size=[stack, units, proj]) * 0.5, tf.float32)
    weights = tf.constant(rng.normal(size=[time, stack, batch, proj]), tf.float32)
    z_major = lambda x: tf.transpose(x, [1, 0, 2, 3])  # lstmp_recurrence's gates' layout
    results = []
    for fn, layout in ((plain_recurrence, tf.identity),
                       (encoder_lib.lstmp_recurrence, z_major)):
      gates = layout(x_gates)
      with tf.GradientTape() as tape:
        tape.watch([gates, recurrent, projection])
        outputs = fn(gates, keep, recurrent, projection)
        loss = tf.reduce_sum(outputs * weights)
      d_gates, d_recurrent, d_projection = tape.gradient(loss, [gates, recurrent, projection])
      results.append([outputs, layout(d_gates), d_recurrent, d_projection])
    for expected, got in zip(*results):
      self.assertAllClose(expected, got, atol=1e-5)
    # Padding steps carry the state: a sentence's last output repeats past its end.
    self.assertAllClose(results[1][0][3:, :, 1], tf.repeat(results[1][0][2:3, :, 1], 4, 0))


class ViewsTest(tf.test.TestCase):

  def test_each_module_sees_only_its_view(self):
    model = Tagger()
    t = 5
    base = model.outputs([SENTENCE])
    right = list(SENTENCE)
    right[t + 1:] = ["zebra"] * (len(SENTENCE) - t - 1)  # every token right of t changes
    changed_right = model.outputs([right])
    at_t = list(SENTENCE)
    at_t[t] = "quietly"  # token t changes
    changed_t = model.outputs([at_t])
    left = list(SENTENCE)
    left[:t] = ["zebra"] * t  # every token left of t changes
    changed_left = model.outputs([left])
    for name in ("fwd", "future"):  # no right context
      self.assertAllClose(base[name][0, t], changed_right[name][0, t], atol=1e-6)
    for name in ("bwd", "past"):  # no left context
      self.assertAllClose(base[name][0, t], changed_left[name][0, t], atol=1e-6)
    for name in ("future", "past"):  # not token t itself
      self.assertAllClose(base[name][0, t], changed_t[name][0, t], atol=1e-6)
    # ...and the views are not trivially constant: each sees what it should.
    for name, changed in (("fwd", changed_t), ("bwd", changed_t), ("future", changed_left),
                          ("past", changed_right), ("primary", changed_right),
                          ("primary", changed_left), ("full", changed_t)):
      self.assertGreater(np.abs(base[name][0, t] - changed[name][0, t]).max(), 1e-4, name)

  def test_padding_batch_mates_and_the_character_cut_do_not_matter(self):
    model = Tagger()
    alone = model.outputs([SENTENCE[:6]])  # characters cut to 9 + 4 positions
    padded = model.outputs([SENTENCE[:6], SENTENCE, ["x" * 19]])  # 12 words; 20 characters
    for name in tagger.AUXILIARY + ("primary",):
      self.assertAllClose(alone[name][0], padded[name][0, :6], atol=1e-5)

  def test_char_features_against_numpy_and_their_gradient_against_every_position(self):
    # Repeated words and padding in one batch: the CNN runs once per spelling; each position
    # must get its own word's features (numpy: embed, valid convolution, max over the word)
    # and the gradient must count every position (TensorFlow's gradient of a per-position CNN).
    model = Tagger()
    batch = data.make_batch([SENTENCE, ["the", "zebra", "the"], ["x" * 19]],
                            model.vocab).inputs()
    chars = tf.constant(batch["chars"])
    features = model.encoder.char_features(chars).numpy()
    table = model.encoder.char_embedding.embeddings.numpy()
    for row in range(chars.shape[0]):
      for t in range(chars.shape[1]):
        ids = batch["chars"][row, t]
        x = table[ids[:max(1, int((ids > 0).sum())) + 4]]  # [chars, char_dim], cut as the model
        expected = []
        for cnn in model.encoder.char_cnns:
          kernel, bias = (w.numpy() for w in cnn.weights)  # [width, char_dim, filters]
          width = kernel.shape[0]
          windows = np.stack([x[i:i + width] for i in range(len(x) - width + 1)])
          expected.append((np.einsum("nwc,wcf->nf", windows, kernel) + bias).max(0))
        self.assertAllClose(features[row, t], np.concatenate(expected), atol=1e-5)

    def per_position(chars):
      flat = tf.reshape(chars, [-1, chars.shape[-1]])
      vectors = model.encoder.char_embedding(flat)
      pooled = tf.concat([tf.reduce_max(cnn(vectors), 1) for cnn in model.encoder.char_cnns], -1)
      return tf.reshape(pooled, list(chars.shape[:2]) + [-1])

    weights = tf.random.stateless_normal(features.shape, [1, 2])
    variables = [model.encoder.char_embedding.embeddings] + [
        w for cnn in model.encoder.char_cnns for w in cnn.weights]
    with tf.GradientTape(persistent=True) as tape:
      ours = tf.reduce_sum(model.encoder.char_features(chars) * weights)
      plain = tf.reduce_sum(per_position(chars) * weights)
    for a, b in zip(tape.gradient(ours, variables), tape.gradient(plain, variables)):
      self.assertAllClose(tf.convert_to_tensor(a), tf.convert_to_tensor(b), atol=1e-4)

  def test_char_filters_sum_to_word_dim(self):
    self.assertEqual(encoder_lib.CvtConfig().filters(), [100, 100, 100])  # Table 4.1
    self.assertEqual(encoder_lib.CvtConfig(word_dim=128).filters(), [43, 43, 42])


if __name__ == "__main__":
  tf.test.main()
