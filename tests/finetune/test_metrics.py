"""GLUE metrics against hand computations and scikit-learn / scipy."""
import numpy as np
import tensorflow as tf

from official_rtd.finetune import metrics


class MetricsTest(tf.test.TestCase):

  def test_hand_computed(self):
    labels = [1, 1, 0, 0, 1, 0]
    predictions = [1, 0, 0, 1, 1, 0]
    # TP=2 TN=2 FP=1 FN=1: MCC = (4 - 1) / sqrt(3·3·3·3) = 1/3, F1 = 4 / (4 + 2) = 2/3.
    self.assertAllClose(metrics.matthews_corrcoef(labels, predictions), 1 / 3)
    self.assertAllClose(metrics.f1(labels, predictions), 2 / 3)
    self.assertAllClose(metrics.accuracy(labels, predictions), 4 / 6)
    self.assertAllClose(metrics.pearson([1, 2, 3], [2, 4, 6]), 1.0)
    self.assertAllClose(metrics.spearman([1, 2, 3, 4], [10, 20, 20, 40]), 0.9486833, atol=1e-6)
    self.assertEqual(metrics.matthews_corrcoef([1, 1], [1, 1]), 0.0)

  def test_against_sklearn_and_scipy(self):
    from scipy import stats  # pylint: disable=g-import-not-at-top
    from sklearn import metrics as sk  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(0)
    labels, predictions = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    self.assertAllClose(metrics.matthews_corrcoef(labels, predictions),
                        sk.matthews_corrcoef(labels, predictions))
    self.assertAllClose(metrics.f1(labels, predictions), sk.f1_score(labels, predictions))
    x = rng.integers(0, 6, 300).astype(float)  # many ties, as STS-B scores have
    y = x + rng.normal(size=300)
    self.assertAllClose(metrics.pearson(x, y), stats.pearsonr(x, y)[0])
    self.assertAllClose(metrics.spearman(x, y), stats.spearmanr(x, y)[0])

  def test_task_metrics(self):
    self.assertEqual(set(metrics.task_metrics("cola", [1, 0], [1, 0])), {"accuracy", "mcc"})
    self.assertEqual(set(metrics.task_metrics("qqp", [1, 0], [1, 0])), {"accuracy", "f1"})
    self.assertEqual(set(metrics.task_metrics("sts-b", [1.0, 2.0], [1.0, 3.0])),
                     {"pearson", "spearman"})

if __name__ == "__main__":
  tf.test.main()
