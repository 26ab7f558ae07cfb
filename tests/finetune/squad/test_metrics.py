"""SQuAD EM/F1 against hand-worked examples (the official scripts' definitions)."""
import tensorflow as tf

from official_rtd.finetune.squad import metrics as squad_metrics
from official_rtd.finetune.squad.data import Answer
from official_rtd.finetune.squad.data import SquadExample


def example(qid, *golds):
  return SquadExample(qid, "q?", "context", tuple(Answer(g, 0) for g in golds))


class SquadMetricsTest(tf.test.TestCase):

  def test_normalization(self):
    self.assertEqual(squad_metrics.normalize_answer("The  Cat, sat!\n"), "cat sat")
    self.assertEqual(squad_metrics.normalize_answer("an apple a day"), "apple day")
    self.assertEqual(squad_metrics.normalize_answer("theatre"), "theatre")  # whole words only

  def test_f1_by_hand(self):
    # pred {cat, sat} vs gold {cat, sat, on}: P = 2/2, R = 2/3, F1 = 0.8.
    self.assertAlmostEqual(squad_metrics.f1("the cat sat", "a cat sat on"), 0.8)
    self.assertEqual(squad_metrics.f1("dog", "cat"), 0.0)
    self.assertEqual(squad_metrics.f1("", ""), 1.0)           # v2.0: both empty
    self.assertEqual(squad_metrics.f1("", "", version_2=False), 0.0)  # v1.1 script
    self.assertEqual(squad_metrics.f1("x", ""), 0.0)

  def test_v11(self):
    examples = [example("a", "Denver Broncos", "Broncos"), example("b", "1889")]
    # a: EM 1 (second gold), F1 1; b: "in 1889" vs "1889" -> EM 0, F1 2·(1/2·1)/(1/2+1) = 2/3.
    got = squad_metrics.evaluate(examples, {"a": "the Broncos", "b": "in 1889"}, False)
    self.assertAllClose(got, {"exact_match": 50.0, "f1": 100 * (1 + 2 / 3) / 2})
    # A missing prediction scores 0.
    got = squad_metrics.evaluate(examples, {"a": "Broncos"}, False)
    self.assertAllClose(got, {"exact_match": 50.0, "f1": 50.0})

  def test_v20_breakdowns_and_best_threshold(self):
    examples = [example("has1", "Paris"), example("has2", "red wine"), example("no1"),
                example("no2")]
    predictions = {"has1": "Paris", "has2": "", "no1": "", "no2": "London"}
    # has1 right (1, 1); has2 abstained (0, 0); no1 right (1, 1); no2 answered (0, 0).
    non_null = {"has1": "Paris", "has2": "wine", "no1": "Rome", "no2": "London"}
    null_odds = {"has1": -5.0, "has2": 1.0, "no1": 3.0, "no2": -4.0}
    got = squad_metrics.evaluate(examples, predictions, True, null_odds, non_null)
    expected = {"exact": 50.0, "f1": 50.0, "total": 4,
                "HasAns_exact": 50.0, "HasAns_f1": 50.0, "HasAns_total": 2,
                "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2}
    # Sweep over the non-null answers by increasing null odds, starting from "all abstain"
    # (2 of 4 right): has1 (-5): +1 -> 3; no2 (-4): -1 -> 2; has2 (1): exact +0 / f1 +2/3;
    # no1 (3): -1. Best: 3/4 at threshold -5 for both.
    expected.update(best_exact=75.0, best_exact_thresh=-5.0, best_f1=75.0, best_f1_thresh=-5.0)
    self.assertAllClose(got, expected)
    # has2 answered right and no2 less sure: has1 +1, has2 +1 (4/4 at threshold 1.0), no2 -1.
    non_null["has2"] = "red wine"
    null_odds["no2"] = 2.0
    got = squad_metrics.evaluate(examples, predictions, True, null_odds, non_null)
    self.assertAllClose([got["best_exact"], got["best_exact_thresh"]], [100.0, 1.0])


if __name__ == "__main__":
  tf.test.main()
