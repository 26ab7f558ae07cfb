"""Random subsets: the right size, in order, reproducible, every row reachable."""
import numpy as np
import tensorflow as tf

from official_rtd.utils import subsets


class SubsetsTest(tf.test.TestCase):

  def test_size_order_and_seed(self):
    rows = subsets.random_rows(10, 4, seed=3)
    self.assertLen(rows, 4)
    self.assertEqual(rows, sorted(set(rows)))
    self.assertTrue(all(0 <= r < 10 for r in rows))
    self.assertEqual(rows, subsets.random_rows(10, 4, seed=3))
    self.assertEqual(subsets.random_rows(5, 0, seed=1), [0, 1, 2, 3, 4])
    self.assertEqual(subsets.random_rows(5, 9, seed=1), [0, 1, 2, 3, 4])
    self.assertEqual(subsets.random_subset("abcdef", 3, seed=0),
                     [c for c in "abcdef" if c in subsets.random_subset("abcdef", 3, seed=0)])

  def test_every_subset_of_two_of_four_is_drawn_about_equally(self):
    # Brute force: the 6 pairs of 4 rows, each about 1/6 of 6,000 draws from one generator.
    rng = np.random.default_rng(0)
    counts = {}
    for _ in range(6000):
      pair = tuple(subsets.random_rows(4, 2, rng))
      counts[pair] = counts.get(pair, 0) + 1
    self.assertEqual(set(counts), {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)})
    for pair, n in counts.items():
      self.assertBetween(n, 850, 1150, pair)


if __name__ == "__main__":
  tf.test.main()
