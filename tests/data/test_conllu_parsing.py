"""CoNLL-U reading (multi-word tokens and empty nodes skipped, universal relations), every
bad-input case, attachment scores on hand-made trees, and tree decoding against a brute-force
maximum spanning arborescence."""
import itertools
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import conllu
from official_rtd.data import parsing_scores
from official_rtd.ops import mst
from tests import testutil

GOOD = """# sent_id = s1
# text = I can't go.
1	I	I	PRON	PRP	_	3	nsubj	_	_
2-3	can't	_	_	_	_	_	_	_	_
2	ca	can	AUX	MD	_	3	aux	_	_
3	n't	not	PART	RB	_	0	root	_	_
3.1	go	go	VERB	VB	_	_	_	3:conj	_
4	.	.	PUNCT	.	_	3	punct	_	_

# sent_id = s2
1	Dogs	dog	NOUN	NNS	_	2	nsubj	_	_
2	bark	bark	VERB	VBP	_	0	root	_	_
3	loudly	loudly	ADV	RB	_	2	advmod:emph	_	_
"""


def write(text):
  path = os.path.join(tempfile.mkdtemp(), "t.conllu")
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return path


class ConlluTest(tf.test.TestCase):

  def test_reads_words_heads_and_universal_relations(self):
    sentences = conllu.read_conllu(write(GOOD))
    self.assertLen(sentences, 2)
    first, second = sentences
    self.assertEqual(first.words, ["I", "ca", "n't", "."])  # 2-3 and 3.1 skipped
    self.assertEqual(first.heads, [3, 3, 0, 3])
    self.assertEqual(first.sent_id, "s1")
    self.assertEqual(second.relations, ["nsubj", "root", "advmod"])  # advmod:emph -> advmod
    self.assertEqual(second.upos, ["NOUN", "VERB", "ADV"])

  def test_bad_inputs_name_the_line_or_the_sentence(self):
    cases = [
        (GOOD.replace("1\tDogs\tdog\tNOUN\tNNS\t_\t2", "1\tDogs\tdog\tNOUN\tNNS\t_\t2\textra"),
         r"t.conllu:11: 11 tab-separated columns"),
        (GOOD.replace("1\tDogs", "x\tDogs"), r"t.conllu:11: ID 'x' and HEAD '2'"),
        (GOOD.replace("3\tloudly", "4\tloudly"), r"t.conllu:13: word ID 4 should be 3"),
        (GOOD.replace("loudly\tADV\tRB\t_\t2", "loudly\tADV\tRB\t_\t9"),
         r"sentence s2 \(line 11\): word 3 has head 9, outside"),
        (GOOD.replace("bark\tVERB\tVBP\t_\t0", "bark\tVERB\tVBP\t_\t1"), r"sentence s2.*0 roots"),
        (GOOD.replace("Dogs\tdog\tNOUN\tNNS\t_\t2", "Dogs\tdog\tNOUN\tNNS\t_\t0"),
         r"sentence s2.*2 roots \(\[1, 2\]\)"),
        (GOOD.replace("ca\tcan\tAUX\tMD\t_\t3", "ca\tcan\tAUX\tMD\t_\t1").replace(
            "I\tI\tPRON\tPRP\t_\t3", "I\tI\tPRON\tPRP\t_\t2"), r"sentence s1.*cycle"),
        ("", r"t.conllu holds no sentence \(an empty CoNLL-U file\)"),
        ("# sent_id = only a comment\n\n", r"t.conllu holds no sentence"),
    ]
    for text, message in cases:
      with self.assertRaisesRegex(conllu.ConlluError, message):
        conllu.read_conllu(write(text))
    with self.assertRaisesRegex(FileNotFoundError, "no CoNLL-U file"):
      conllu.read_conllu("/nonexistent.conllu")

  def test_write_round_trip(self):
    sentences = conllu.read_conllu(write(GOOD))
    path = os.path.join(tempfile.mkdtemp(), "out.conllu")
    conllu.write_conllu(path, sentences)
    again = conllu.read_conllu(path)
    self.assertEqual([(s.words, s.heads, s.relations) for s in again],
                     [(s.words, s.heads, s.relations) for s in sentences])



@testutil.requires(os.path.join(testutil.SHARED_DATA, "parsing", "ud_ewt"))
class SharedUdEwtTest(tf.test.TestCase):

  def test_shared_ud_ewt_dev_counts(self):
    dev = conllu.read_conllu(os.path.join(testutil.SHARED_DATA, "parsing", "ud_ewt",
                                          "en_ewt-ud-dev.conllu"))
    self.assertLen(dev, 2001)  # the README's count; every sentence a tree


class AttachmentScoresTest(tf.test.TestCase):

  def test_hand_counted_scores_with_and_without_punctuation(self):
    gold = conllu.read_conllu(write(GOOD))
    guess = [conllu.Sentence(list(s.words), list(s.heads), list(s.relations), s.upos, s.xpos)
             for s in gold]
    guess[0].heads[3] = 1           # "." attached wrongly (punctuation)
    guess[1].relations[2] = "obj"   # right head, wrong relation
    guess[1].heads[0] = 3           # wrong head
    # 7 words: right heads 5 (all but "." and "Dogs"); right head and relation 4.
    scores = parsing_scores.attachment_scores(gold, guess)
    self.assertAllClose([scores["uas"], scores["las"], scores["words"]], [5 / 7, 4 / 7, 7])
    # Without the PUNCT word: 6 words, 5 right heads, 4 right labels.
    scores = parsing_scores.attachment_scores(gold, guess, punctuation="exclude")
    self.assertAllClose([scores["uas"], scores["las"], scores["words"]], [5 / 6, 4 / 6, 6])
    with self.assertRaisesRegex(ValueError, "sentence 1 \\(s2\\): 2 predicted words for 3"):
      guess[1] = conllu.Sentence(["a", "b"], [0, 1], ["root", "x"], ["X"] * 2, ["X"] * 2)
      parsing_scores.attachment_scores(gold, guess)


def brute_force_tree(scores):
  """The best heads over every assignment that is a tree with one word on ROOT."""
  n = scores.shape[0] - 1
  best, best_score = None, -np.inf
  for heads in itertools.product(range(n + 1), repeat=n):
    if any(h == d + 1 for d, h in enumerate(heads)) or sum(h == 0 for h in heads) != 1:
      continue
    sentence = conllu.Sentence(["w"] * n, list(heads), ["x"] * n, ["X"] * n, ["X"] * n)
    try:
      conllu.check_tree(sentence, "brute force")
    except conllu.ConlluError:
      continue
    total = sum(scores[h, d + 1] for d, h in enumerate(heads))
    if total > best_score:
      best, best_score = list(heads), total
  return best


class TreeDecodingTest(tf.test.TestCase):

  def test_mst_equals_brute_force_on_random_graphs(self):
    rng = np.random.default_rng(0)
    cycles = 0
    for trial in range(120):
      n = 1 + trial % 6
      scores = rng.normal(size=[n + 1, n + 1]) * 3
      greedy = mst.argmax_heads(scores)
      sentence = conllu.Sentence(["w"] * n, greedy, ["x"] * n, ["X"] * n, ["X"] * n)
      try:
        conllu.check_tree(sentence, "greedy")
      except conllu.ConlluError:
        cycles += 1
      self.assertEqual(mst.mst_heads(scores), brute_force_tree(scores), msg=f"trial {trial}")
    self.assertGreater(cycles, 20)  # the greedy heads were often not a tree: the MST mattered

  def test_argmax_heads_never_self(self):
    scores = np.zeros([4, 4])
    np.fill_diagonal(scores, 100.0)
    scores[0, 1:] = 1.0
    self.assertEqual(mst.argmax_heads(scores), [0, 0, 0])


if __name__ == "__main__":
  tf.test.main()
