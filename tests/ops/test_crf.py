"""The linear-chain CRF against brute-force enumeration of every tag path."""
import itertools

import numpy as np
import tensorflow as tf

from official_rtd.ops import crf


def brute_force(emissions, transitions):
  """{path: s(path)} over all num_tags^length paths."""
  length, num_tags = emissions.shape
  scores = {}
  for path in itertools.product(range(num_tags), repeat=length):
    scores[path] = (sum(emissions[t, y] for t, y in enumerate(path))
                    + sum(transitions[a, b] for a, b in zip(path[:-1], path[1:])))
  return scores


class CrfTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(3)
    self.emissions = rng.normal(size=[2, 4, 3])  # 4 tokens, 3 tags
    self.transitions = rng.normal(size=[3, 3])

  def test_against_enumeration(self):
    lengths = np.array([4, 2])
    tags = np.array([[0, 2, 1, 1], [2, 0, 1, 1]])
    log_z = crf.log_partition(self.emissions, self.transitions, lengths).numpy()
    score = crf.path_score(self.emissions, self.transitions, tags, lengths).numpy()
    likelihood = crf.log_likelihood(self.emissions, self.transitions, tags, lengths).numpy()
    for row, length in enumerate(lengths):
      paths = brute_force(self.emissions[row, :length], self.transitions)
      expected_z = np.log(np.sum(np.exp(list(paths.values()))))
      self.assertAllClose(log_z[row], expected_z)
      self.assertAllClose(score[row], paths[tuple(tags[row, :length])])
      self.assertAllClose(likelihood[row], paths[tuple(tags[row, :length])] - expected_z)
      best = max(paths, key=paths.get)
      self.assertEqual(tuple(crf.viterbi_decode(self.emissions[row, :length],
                                                self.transitions)), best)
    # Probabilities of all paths sum to one.
    all_paths = np.array(list(itertools.product(range(3), repeat=4)))
    batch = np.repeat(self.emissions[:1], len(all_paths), 0)
    total = np.exp(crf.log_likelihood(batch, self.transitions, all_paths,
                                      np.full(len(all_paths), 4)).numpy()).sum()
    self.assertAllClose(total, 1.0)

  def test_length_zero_and_one(self):
    log_z = crf.log_partition(self.emissions, self.transitions, np.array([0, 1])).numpy()
    self.assertEqual(log_z[0], 0.0)
    self.assertAllClose(log_z[1], np.log(np.exp(self.emissions[1, 0]).sum()))
    self.assertEqual(len(crf.viterbi_decode(self.emissions[0, :0], self.transitions)), 0)

  def test_gradient_and_xla(self):
    transitions = tf.Variable(self.transitions)
    emissions = tf.constant(self.emissions)
    tags, lengths = tf.constant([[0, 1, 2, 0], [1, 1, 0, 0]]), tf.constant([4, 3])

    @tf.function(jit_compile=True)
    def nll():
      with tf.GradientTape() as tape:
        value = -tf.reduce_sum(crf.log_likelihood(emissions, transitions, tags, lengths))
      return value, tape.gradient(value, transitions)

    value, gradient = nll()
    self.assertAllClose(value, -tf.reduce_sum(
        crf.log_likelihood(emissions, transitions, tags, lengths)))
    self.assertTrue(np.all(np.isfinite(gradient.numpy())))
    self.assertGreater(np.abs(gradient.numpy()).sum(), 0.0)


if __name__ == "__main__":
  tf.test.main()
