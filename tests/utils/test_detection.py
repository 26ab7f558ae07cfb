"""Detection figures against hand counts and scikit-learn."""
import numpy as np
import tensorflow as tf

from official_rtd.utils import detection


class FiguresTest(tf.test.TestCase):

  def test_auc_on_a_known_ranking(self):
    # Positives 0.9 and 0.3, negatives 0.8 and 0.1: 3 of the 4 pairs are ordered right.
    self.assertAllClose(detection.roc_auc([1, 0, 1, 0], [0.9, 0.8, 0.3, 0.1]), 0.75)
    self.assertAllClose(detection.roc_auc([1, 0], [0.5, 0.5]), 0.5)
    from sklearn.metrics import roc_auc_score  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(0)
    labels, scores = rng.integers(0, 2, 400), rng.integers(0, 20, 400).astype(float)
    self.assertAllClose(detection.roc_auc(labels, scores), roc_auc_score(labels, scores))

  def test_detection_figures(self):
    figures = detection.detection_figures(np.array([1, 1, 0, 0, 0]),
                                           np.array([2.0, -1.0, 0.5, -3.0, -2.0]), "x_")
    self.assertAllClose(figures["x_accuracy"], 3 / 5)
    self.assertAllClose(figures["x_precision"], 1 / 2)
    self.assertAllClose(figures["x_recall"], 1 / 2)
    self.assertAllClose(figures["x_replaced_fraction"], 2 / 5)
    self.assertAllClose(figures["x_auc"], 5 / 6)
    self.assertAllClose(figures["x_accuracy_original"], 2 / 3)  # 0.5 > 0 called replaced
    self.assertAllClose(figures["x_accuracy_replaced"], 1 / 2)


if __name__ == "__main__":
  tf.test.main()
