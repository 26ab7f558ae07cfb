"""Sampling, position scatter and the distributed-exact weighted mean."""
import numpy as np
import tensorflow as tf

from official_rtd.ops import losses
from official_rtd.ops import sampling


class SamplingTest(tf.test.TestCase):

  def test_sample_matches_softmax(self):
    logits = tf.constant([[[2.0, 1.0, 0.0, -1.0]]])
    n = 20000
    many = tf.tile(logits, [n, 1, 1])
    expected = tf.nn.softmax(logits[0, 0])
    for name, ids in (
        ("multinomial", sampling.sample(many)),
        ("seeded multinomial", sampling.sample(many, seed=tf.constant([3, 4]))),
        ("Gumbel-max", sampling.sample(many, gumbel_noise=sampling.gumbel([n, 1, 4])))):
      frequencies = np.bincount(ids.numpy().ravel(), minlength=4) / n
      self.assertAllClose(frequencies, expected, atol=0.015, msg=name)
    hot = sampling.sample(many, temperature=0.5).numpy().ravel()
    self.assertAllClose(np.bincount(hot, minlength=4) / n, tf.nn.softmax(logits[0, 0] / 0.5),
                        atol=0.015)
    # A scalar tensor (an annealed temperature), also inside a graph.
    annealed = tf.function(lambda t: sampling.sample(many, temperature=t))(tf.constant(0.5))
    self.assertAllClose(np.bincount(annealed.numpy().ravel(), minlength=4) / n,
                        tf.nn.softmax(logits[0, 0] / 0.5), atol=0.015)
    self.assertAllEqual(sampling.sample(logits, temperature=0.0), [[0]])
    disallowed = sampling.sample(tf.tile(logits, [500, 1, 1]), temperature=0.0,
                                 disallow_ids=tf.zeros([500, 1], tf.int32))
    self.assertAllEqual(disallowed, np.ones([500, 1]))
    never_zero = sampling.sample(tf.tile(logits, [500, 1, 1]),
                                 disallow_ids=tf.zeros([500, 1], tf.int32))
    self.assertNotIn(0, never_zero.numpy())

  def test_given_noise_and_seed_make_the_draw_repeatable(self):
    logits = tf.random.normal([4, 3, 50])
    noise = sampling.gumbel([4, 3, 50])
    self.assertAllEqual(sampling.sample(logits, temperature=0.5, gumbel_noise=noise),
                        tf.argmax(logits / 0.5 + noise, axis=-1, output_type=tf.int32))
    seed = tf.constant([7, 8])
    self.assertAllEqual(sampling.sample(logits, seed=seed), sampling.sample(logits, seed=seed))
    self.assertEqual(sampling.sample(logits, seed=seed).dtype, tf.int32)

  def test_scatter_and_unmask(self):
    sequence = tf.constant([[5, 6, 7, 8], [1, 2, 3, 4]])
    out = sampling.scatter_positions(sequence, tf.constant([[1, 3], [2, 0]]),
                                     tf.constant([[60, 80], [30, 99]]),
                                     tf.constant([[1.0, 1.0], [1.0, 0.0]]))
    self.assertAllEqual(out, [[5, 60, 7, 80], [1, 2, 30, 4]])
    inputs = {"input_word_ids": tf.constant([[2, 4, 9, 3]]), "masked_lm_positions": tf.constant([[1, 0]]),
              "masked_lm_ids": tf.constant([[17, 0]]), "masked_lm_weights": tf.constant([[1.0, 0.0]])}
    self.assertAllEqual(sampling.unmask(inputs), [[2, 17, 9, 3]])
    self.assertAllEqual(sampling.original_ids(inputs), [[2, 17, 9, 3]])
    # Unmasked records: the ids as they are.
    self.assertAllEqual(sampling.original_ids({"input_word_ids": tf.constant([[2, 4, 9, 3]])}),
                        [[2, 4, 9, 3]])

  def test_global_weighted_mean(self):
    values, weights = tf.constant([1.0, 2.0, 3.0]), tf.constant([1.0, 0.0, 1.0])
    self.assertAllClose(losses.global_weighted_mean(values, weights), 2.0)
    self.assertAllClose(losses.global_weighted_mean(values, tf.zeros(3)), 0.0)


if __name__ == "__main__":
  tf.test.main()
