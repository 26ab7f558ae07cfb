"""The CVT tagger's views: each auxiliary module sees only its part of the sentence."""
import numpy as np
import tensorflow as tf

from official_rtd.cvt import data
from official_rtd.cvt import model as model_lib

SMALL = model_lib.CvtConfig(word_dim=30, char_dim=8, lstm1_size=24, lstm2_size=16,
                            projection_size=12, hidden_size=16)
SENTENCE = "The market rallied strongly after the central bank cut rates today".split()


def build(seed=0):
  tf.random.set_seed(seed)
  vocab = data.WordCharVocab.build([SENTENCE + ["zebra", "quietly"]])
  model = model_lib.CvtTagger(SMALL, len(vocab.words), len(vocab.chars), {"chunk": 7})
  return model, vocab


def outputs(model, vocab, sentences):
  out = model(data.make_batch(sentences, vocab).inputs())["chunk"]
  return {name: value.numpy() for name, value in out.items()}


class ViewsTest(tf.test.TestCase):

  def test_each_module_sees_only_its_view(self):
    model, vocab = build()
    t = 5
    base = outputs(model, vocab, [SENTENCE])
    right = list(SENTENCE)
    right[t + 1:] = ["zebra"] * (len(SENTENCE) - t - 1)  # every token right of t changes
    changed_right = outputs(model, vocab, [right])
    at_t = list(SENTENCE)
    at_t[t] = "quietly"  # token t changes
    changed_t = outputs(model, vocab, [at_t])
    left = list(SENTENCE)
    left[:t] = ["zebra"] * t  # every token left of t changes
    changed_left = outputs(model, vocab, [left])
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

  def test_padding_and_batch_mates_do_not_matter(self):
    model, vocab = build()
    alone = outputs(model, vocab, [SENTENCE[:6]])
    padded = outputs(model, vocab, [SENTENCE[:6], SENTENCE])  # padded to 12 words
    for name in model_lib.AUXILIARY + ("primary",):
      self.assertAllClose(alone[name][0], padded[name][0, :6], atol=1e-5)

  def test_char_filters_sum_to_word_dim(self):
    self.assertEqual(model_lib.CvtConfig().filters(), [100, 100, 100])  # Table 4.1
    self.assertEqual(model_lib.CvtConfig(word_dim=128).filters(), [43, 43, 42])


if __name__ == "__main__":
  tf.test.main()
