"""The parsing task: CVT's edge scorer equation against a hand computation on tiny weights, the
edge loss and the decoders by hand, and `run_parsing` end to end on a hand-made treebank (learning
it, `predictions.conllu`, UAS/LAS from the evaluator)."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import conllu
from official_rtd.finetune import configs
from official_rtd.finetune import runner
from official_rtd.finetune.parsing import task as parsing
from official_rtd.modeling.layers.edge_scorer import edge_log_probabilities
from official_rtd.modeling.layers.edge_scorer import EdgeScorer
from official_rtd.ops import mst
from tests.probes.test_probe import tiny_export


class EdgeScorerTest(tf.test.TestCase):

  def test_equation_by_hand(self):
    rng = np.random.default_rng(0)
    scorer = EdgeScorer(num_relations=3, projection_size=4)
    z = tf.constant(rng.normal(size=[2, 5, 6]), tf.float32)
    scores = scorer(z, z).numpy()
    w_head, b_head = [w.numpy() for w in scorer.head_projection.weights]
    w_dep, b_dep = [w.numpy() for w in scorer.dependent_projection.weights]
    shared, per_relation = scorer.shared.numpy(), scorer.per_relation.numpy()
    relu = lambda x: np.maximum(x, 0)
    for b in range(2):
      for h in range(5):
        for d in range(5):
          for r in range(3):
            left = relu(z.numpy()[b, h] @ w_head + b_head)
            right = relu(z.numpy()[b, d] @ w_dep + b_dep)
            self.assertAllClose(scores[b, h, d, r], left @ (per_relation[r] + shared) @ right,
                                atol=1e-5)

  def test_log_probabilities_normalise_over_head_and_relation(self):
    scores = tf.constant(np.random.default_rng(1).normal(size=[1, 3, 3, 2]), tf.float32)
    heads = tf.constant([[-1, 2, 0]])
    log_p = edge_log_probabilities(scores, parsing.allowed_edges(heads)).numpy()[0]
    # Dependent 1: heads 0 and 2 (not itself) × 2 relations; dependent 2: heads 0 and 1.
    for d, heads_of_d in ((1, [0, 2]), (2, [0, 1])):
      s = scores.numpy()[0][heads_of_d, d]                  # [2 heads, 2 relations]
      expected = s - np.log(np.exp(s).sum())
      self.assertAllClose(log_p[heads_of_d, d], expected, atol=1e-5)
      self.assertAllClose(np.exp(log_p[:, d]).sum(), 1.0, atol=1e-5)
    loss = parsing.edge_loss({"scores": scores}, {"heads": heads,
                                                  "relations": tf.constant([[-1, 1, 0]])})
    self.assertAllClose(loss, -(log_p[2, 1, 1] + log_p[0, 2, 0]) / 2, atol=1e-5)

  def test_decoders(self):
    # Arc log-probabilities whose per-word best heads form a cycle 1 <-> 2.
    arc = np.log(np.array([[1e-9, 0.3, 0.2], [1e-9, 1e-9, 0.8], [1e-9, 0.7, 1e-9]]))
    relation = np.array([[0, 1, 2], [0, 0, 3], [0, 4, 0]])
    heads, relations = mst.decode(arc, arc, relation, 3, "argmax")
    self.assertEqual((heads, relations), ([2, 1], [4, 3]))
    heads, relations = mst.decode(arc, arc, relation, 3, "mst")
    # Trees: 0->1->2 (0.3 · 0.8 = 0.24) beats 0->2->1 (0.2 · 0.7 = 0.14).
    self.assertEqual((heads, relations), ([0, 1], [1, 3]))


TREEBANK = [  # (words, heads, relations): short sentences with a fixed, learnable structure
    (["the", "dog", "barked"], [2, 3, 0], ["det", "nsubj", "root"]),
    (["a", "cat", "slept"], [2, 3, 0], ["det", "nsubj", "root"]),
    (["dogs", "bark"], [2, 0], ["nsubj", "root"]),
    (["the", "cat", "saw", "a", "dog"], [2, 3, 0, 5, 3], ["det", "nsubj", "root", "det", "obj"]),
]


def write_treebank(directory, copies):
  lines = []
  for n, (words, heads, relations) in enumerate(TREEBANK * copies):
    lines.append(f"# sent_id = s{n}")
    for i, (w, h, r) in enumerate(zip(words, heads, relations), 1):
      lines.append(f"{i}\t{w}\t_\tX\tX\t_\t{h}\t{r}\t_\t_")
    lines.append("")
  for split in ("train", "dev"):
    with open(os.path.join(directory, f"toy-ud-{split}.conllu"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")


class RunParsingTest(tf.test.TestCase):

  def test_learns_a_toy_treebank_and_writes_predictions(self):
    tmp = tempfile.mkdtemp()
    data = os.path.join(tmp, "ud")
    os.makedirs(data)
    write_treebank(data, copies=16)
    config = configs.ParsingConfig(init_checkpoint=tiny_export(os.path.join(tmp, "export")),
                                   model_dir=os.path.join(tmp, "run"), data_dir=data,
                                   max_seq_length=32, num_train_epochs=20, learning_rate=3e-3,
                                   train_batch_size=16, projection_size=32)
    summary = runner.Runner(config, log=lambda _: None).run()
    dev = summary["median"].get("dev", summary["median"])
    self.assertGreater(dev["uas"], 0.9)
    self.assertGreater(dev["las"], 0.9)
    predicted = conllu.read_conllu(os.path.join(config.model_dir, parsing.PREDICTIONS_NAME))
    gold = conllu.read_conllu(os.path.join(data, "toy-ud-dev.conllu"))
    from official_rtd.data import parsing_scores  # pylint: disable=g-import-not-at-top
    self.assertAllClose(parsing_scores.attachment_scores(gold, predicted)["las"], dev["las"])
    with open(os.path.join(config.model_dir, "eval_results.json")) as f:
      self.assertIn("relations", json.load(f))


if __name__ == "__main__":
  tf.test.main()
