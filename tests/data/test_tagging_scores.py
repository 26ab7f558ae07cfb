"""conlleval's span figures, counted by hand, and the tag-level score of a POS task."""
import tensorflow as tf

from official_rtd.data import tagging_data
from official_rtd.data import tagging_scores


class SpanMetricsTest(tf.test.TestCase):

  def test_hand_counted(self):
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["I-ORG", "I-ORG", "O"]]  # IOB2 then IOB1
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["O", "I-ORG", "O"]]
    # Gold spans: PER(0,2) LOC(3,4) | ORG(0,2). Predicted: PER(0,2) ORG(3,4) | ORG(1,2) (an I-
    # after O starts a span). Correct: PER only -> P = 1/3, R = 1/3.
    result = tagging_scores.span_metrics(gold, predicted)
    self.assertEqual({k: result["overall"][k] for k in ("correct", "predicted", "gold")},
                     {"correct": 1, "predicted": 3, "gold": 3})
    self.assertAllClose(result["overall"]["f1"], 1 / 3)
    self.assertAllClose(result["per_type"]["PER"]["f1"], 1.0)
    self.assertEqual(result["per_type"]["LOC"]["f1"], 0.0)
    self.assertEqual(result["per_type"]["ORG"]["predicted"], 2)
    self.assertAllClose(result["per_type"]["ORG"]["precision"], 0.0)

  def test_scheme_independent_and_checked(self):
    gold = [["I-PER", "B-PER", "O"]]
    self.assertAllClose(tagging_scores.span_metrics(gold, [["B-PER", "B-PER", "O"]])["overall"]["f1"],
                        1.0)
    self.assertAllClose(tagging_scores.span_metrics(gold, [["S-PER", "S-PER", "O"]])["overall"]["f1"],
                        1.0)
    self.assertEqual(tagging_scores.span_metrics(gold, [["B-PER", "I-PER", "O"]])["overall"]["f1"], 0.0)
    with self.assertRaisesRegex(ValueError, "sentence 0: 3 gold tags but 2"):
      tagging_scores.span_metrics(gold, [["O", "O"]])


class EvaluateTest(tf.test.TestCase):

  def test_token_accuracy_over_every_word_by_hand(self):
    task = tagging_data.TASKS["pos"]
    sentences = [tagging_data.Sentence(("a", "b", "c"), ("DT", "NN", "VB")),
                 tagging_data.Sentence(("d",), ("NN",))]
    got = tagging_scores.evaluate(task, sentences, [["DT", "NN", "NN"], ["VB"]])
    self.assertAllClose(got, {"accuracy": 2 / 4})


if __name__ == "__main__":
  tf.test.main()
