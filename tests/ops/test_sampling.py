"""Gumbel-max sampling, position scatter and the distributed-exact weighted mean."""
import numpy as np
import tensorflow as tf

from official_rtd.ops import losses
from official_rtd.ops import sampling


class SamplingTest(tf.test.TestCase):

  def test_gumbel_max_matches_softmax(self):
    logits = tf.constant([[[2.0, 1.0, 0.0, -1.0]]])
    n = 20000
    samples = sampling.gumbel_max_sample(tf.tile(logits, [n, 1, 1])).numpy().ravel()
    frequencies = np.bincount(samples, minlength=4) / n
    self.assertAllClose(frequencies, tf.nn.softmax(logits[0, 0]), atol=0.015)
    hot = sampling.gumbel_max_sample(tf.tile(logits, [n, 1, 1]), temperature=0.5).numpy().ravel()
    self.assertAllClose(np.bincount(hot, minlength=4) / n, tf.nn.softmax(logits[0, 0] / 0.5),
                        atol=0.015)
    self.assertAllEqual(sampling.gumbel_max_sample(logits, temperature=0.0), [[0]])
    disallowed = sampling.gumbel_max_sample(tf.tile(logits, [500, 1, 1]), temperature=0.0,
                                            disallow_ids=tf.zeros([500, 1], tf.int32))
    self.assertAllEqual(disallowed, np.ones([500, 1]))

  def test_scatter_and_unmask(self):
    sequence = tf.constant([[5, 6, 7, 8], [1, 2, 3, 4]])
    out = sampling.scatter_positions(sequence, tf.constant([[1, 3], [2, 0]]),
                                     tf.constant([[60, 80], [30, 99]]),
                                     tf.constant([[1.0, 1.0], [1.0, 0.0]]))
    self.assertAllEqual(out, [[5, 60, 7, 80], [1, 2, 30, 4]])
    inputs = {"input_word_ids": tf.constant([[2, 4, 9, 3]]), "masked_lm_positions": tf.constant([[1, 0]]),
              "masked_lm_ids": tf.constant([[17, 0]]), "masked_lm_weights": tf.constant([[1.0, 0.0]])}
    self.assertAllEqual(sampling.unmask(inputs), [[2, 17, 9, 3]])

  def test_global_weighted_mean(self):
    values, weights = tf.constant([1.0, 2.0, 3.0]), tf.constant([1.0, 0.0, 1.0])
    self.assertAllClose(losses.global_weighted_mean(values, weights), 2.0)
    self.assertAllClose(losses.global_weighted_mean(values, tf.zeros(3)), 0.0)


if __name__ == "__main__":
  tf.test.main()
