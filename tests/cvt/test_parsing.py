"""CVT's dependency parser (§4.2.3): the modules' edge distributions against a hand computation,
edge-only label smoothing, and run_cvt --tasks=dep on a slice of UD English EWT."""
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.cvt import data
from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import losses
from official_rtd.cvt import parser as parser_lib
from official_rtd.cvt import runner
from official_rtd.data import conllu
from tests import testutil

SMALL = encoder_lib.CvtConfig(word_dim=12, char_dim=4, lstm1_size=10, lstm2_size=8,
                              projection_size=6, hidden_size=5)
UD = os.path.join(testutil.SHARED_DATA, "parsing", "ud_ewt")


def log_softmax(x):
  x = x - x.max()
  return x - np.log(np.exp(x).sum())


def hand_module(scorer, root, head_view, dependent_view, length):
  """log p((u, r) | t) for t = 1..length by the dissertation's equation, in numpy."""
  heads = np.concatenate([root[None], head_view[:length]])           # [T + 1, width]: ROOT first
  dependents = np.concatenate([root[None] * 0, dependent_view[:length]])
  w_head, b_head = [v.numpy() for v in scorer.head_projection.weights]
  w_dep, b_dep = [v.numpy() for v in scorer.dependent_projection.weights]
  z1 = np.maximum(heads @ w_head + b_head, 0)                         # ReLU(W_head z1 + b_head)
  z2 = np.maximum(dependents @ w_dep + b_dep, 0)                      # ReLU(W_dep z2 + b_dep)
  bilinear = scorer.per_relation.numpy() + scorer.shared.numpy()[None]  # W_r + W
  out = []
  for t in range(1, length + 1):
    scores = np.einsum("uk,rkl,l->ur", z1, bilinear, z2[t])           # [head, relation]
    scores[t] = -np.inf                                               # no self-loop
    flat = scores.reshape(-1)
    allowed = np.isfinite(flat)
    out.append(np.where(allowed, log_softmax(np.where(allowed, flat, -np.inf)), -np.inf))
  return np.array(out)


class ParserModulesTest(tf.test.TestCase):

  def test_every_module_matches_the_equation_on_its_views(self):
    tf.random.set_seed(1)
    sentences = [["Dogs", "bark", "loudly", "."], ["Cats", "sleep"]]
    vocab = data.WordCharVocab.build(sentences)
    encoder = encoder_lib.CnnBiLstmEncoder(SMALL, len(vocab.words), len(vocab.chars))
    parser = parser_lib.ParserModules(3, SMALL.hidden_size)
    inputs = data.make_batch(sentences, vocab).inputs()
    states = encoder(inputs)
    out = {k: v.numpy() for k, v in parser(states, inputs["lengths"]).items()}
    self.assertEqual(sorted(out), sorted(parser_lib.MODULES))
    views = {"top": tf.concat([states["h1"], states["h2"]], -1).numpy(),
             "fwd1": states["fwd1"].numpy(), "bwd1": states["bwd1"].numpy()}
    for name, (head_view, dependent_view) in parser_lib.MODULES.items():
      for row, sentence in enumerate(sentences):
        length = len(sentence)
        expected = hand_module(parser.scorers[name], parser.roots[head_view].numpy(),
                               views[head_view][row], views[dependent_view][row], length)
        got = out[name][row, :length].reshape(length, -1, 3)[:, :length + 1].reshape(length, -1)
        finite = np.isfinite(expected)
        self.assertAllClose(got[finite], expected[finite], atol=1e-4, msg=name)
        self.assertTrue(np.all(got[~finite] < -1e8), name)  # self-loops and padding masked
        # ROOT's own dependent slot and padded heads carry no probability.
        self.assertAllClose(np.exp(got).sum(-1), np.ones(length), atol=1e-5)

  def test_label_smoothing_spreads_only_over_allowed_edges(self):
    logits = tf.constant([[[0.0, -1e9, 1.0, 2.0]]])
    loss = losses.smoothed_cross_entropy(logits, tf.constant([[2]]), tf.ones([1, 1]), 0.3)
    allowed = np.array([0.0, 1.0, 2.0])
    log_p = allowed - np.log(np.exp(allowed).sum())
    targets = np.array([0.1, 0.7 + 0.1, 0.1])  # ε/3 each, 1 − ε on the gold edge
    self.assertAllClose(float(loss), -(targets * log_p).sum(), atol=1e-5)


class CvtTaskNamesTest(tf.test.TestCase):

  def test_an_unknown_task_is_named_with_the_known_ones(self):
    with self.assertRaisesRegex(ValueError, r"^--tasks: unknown \['parse'\]; one of: chunk, dep, "
                                            r"ner, pos, translate$"):
      runner.CvtRunner(runner.CvtRunConfig(tasks="dep,parse", data_dir=UD, model_dir="/nowhere",
                                           mode="supervised"), log=lambda _: None)


@testutil.requires(UD)
class CvtParsingRunTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.tmp)
    self.data_dir = os.path.join(self.tmp, "ud")
    os.makedirs(self.data_dir)
    for split, count in (("train", 60), ("dev", 20)):  # a slice of the shared treebank
      sentences = conllu.read_conllu(os.path.join(UD, f"en_ewt-ud-{split}.conllu"))[:count]
      conllu.write_conllu(os.path.join(self.data_dir, f"slice-ud-{split}.conllu"), sentences,
                          sentences)
    self.corpus = testutil.write_text(os.path.join(self.tmp, "unlabeled.txt"),
                                      "\n".join(testutil.sample_paragraphs(20)) + "\n")

  def _run(self, mode):
    config = runner.CvtRunConfig(
        tasks="dep", data_dir=self.data_dir, model_dir=os.path.join(self.tmp, mode), mode=mode,
        unlabeled_data=self.corpus if mode != "supervised" else "", word_dim=12, char_dim=4,
        lstm1_size=10, lstm2_size=8, projection_size=6, hidden_size=8, train_steps=4,
        train_batch_size=8, eval_every_steps=0, save_checkpoints_steps=0, log_every_steps=2)
    lines = []
    summary = runner.CvtRunner(config, log=lines.append).run()
    return summary, lines, config.model_dir

  def test_supervised_and_cvt_write_scores_and_trees(self):
    for mode in ("supervised", "cvt"):
      summary, lines, model_dir = self._run(mode)
      self.assertEqual(summary["primary_metrics"], {"dep": "las"})
      dev = summary["median"]["dep"]
      for key in ("uas", "las", "uas_no_punct", "las_no_punct"):
        self.assertBetween(dev[key], 0.0, 1.0)
      self.assertLessEqual(dev["las"], dev["uas"])
      self.assertIn("dep 60 train / 20 dev sentences", lines[0])
      self.assertEqual(any("unlabeled loss" in l for l in lines), mode == "cvt")
      predicted = conllu.read_conllu(os.path.join(model_dir, "trial_0", "predictions_dep.conllu"))
      self.assertLen(predicted, 20)  # MST decoding: each a well-formed tree (the reader checks)
      with open(os.path.join(model_dir, "eval_results.json")) as f:
        self.assertEqual(json.load(f)["tasks"], ["dep"])


if __name__ == "__main__":
  tf.test.main()
