"""RACE readers (JSONL and the original layout, bad input) and option inputs."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune.race import data as race_data
from tests import testutil

RACE = os.path.join(testutil.SHARED_DATA, "race")
PASSAGE = {"id": "high7.txt", "article": "The cat sat on the mat. It was warm.",
           "questions": ["Where did the cat sit?", "The cat was _ ."],
           "options": [["on a chair", "on the mat", "in a box", "under a tree"],
                       ["cold", "warm", "wet", "lost"]],
           "answers": ["B", "B"]}


class ReadersTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp()

  def test_jsonl_and_original_layout_agree(self):
    jsonl_dir, original_dir = os.path.join(self.tmp, "jsonl"), os.path.join(self.tmp, "orig")
    os.makedirs(jsonl_dir)
    os.makedirs(os.path.join(original_dir, "dev", "middle"))
    testutil.write_text(os.path.join(jsonl_dir, "dev.jsonl"), json.dumps(PASSAGE) + "\n")
    middle = dict(PASSAGE, id="7.txt")  # original files carry the level in their directory
    testutil.write_text(os.path.join(original_dir, "dev", "middle", "7.txt"), json.dumps(middle))
    from_jsonl = race_data.read_split(jsonl_dir, "dev")
    from_files = race_data.read_split(original_dir, "dev")
    self.assertEqual([(q.id, q.level, q.answer) for q in from_jsonl],
                     [("high7.txt-0", "high", 1), ("high7.txt-1", "high", 1)])
    self.assertEqual([(q.id, q.level) for q in from_files], [("7.txt-0", "middle"),
                                                             ("7.txt-1", "middle")])
    self.assertEqual(from_jsonl[1].options, from_files[1].options)

  def test_bad_input_names_the_file(self):
    path = os.path.join(self.tmp, "dev.jsonl")
    testutil.write_text(path, json.dumps(PASSAGE) + "\n" + json.dumps(
        dict(PASSAGE, answers=["B", "E"])) + "\n")
    with self.assertRaisesRegex(ValueError, r"dev\.jsonl:2: question 1: answer 'E' is not a "
                                            r"letter among 4 options"):
      race_data.read_split(self.tmp, "dev")
    testutil.write_text(path, "{not json\n")
    with self.assertRaisesRegex(ValueError, r"dev\.jsonl:1: not valid JSON"):
      race_data.read_split(self.tmp, "dev")
    testutil.write_text(path, json.dumps({"id": "x", "article": "a"}) + "\n")
    with self.assertRaisesRegex(ValueError, r"dev\.jsonl:1: passage lacks \['questions'"):
      race_data.read_split(self.tmp, "dev")
    testutil.write_text(path, json.dumps(dict(PASSAGE, answers=["B"])) + "\n")
    with self.assertRaisesRegex(ValueError, "2 questions, 2 option lists and 1 answers"):
      race_data.read_split(self.tmp, "dev")
    with self.assertRaisesRegex(ValueError, "found neither"):
      race_data.read_split(self.tmp, "test")

  def test_an_option_count_that_differs_names_file_line_and_question(self):
    path = os.path.join(self.tmp, "dev.jsonl")
    three = dict(PASSAGE, id="high8.txt", options=[["a", "b", "c"], ["d", "e", "f"]])
    testutil.write_text(path, json.dumps(PASSAGE) + "\n\n" + json.dumps(three) + "\n")
    with self.assertRaisesRegex(
        ValueError, rf"^{path}:3: question high8.txt-0 has 3 options, but every question needs "
        rf"the same number as the first \(high7.txt-0 in {path}:1: 4\)$"):
      race_data.read_split(self.tmp, "dev")
    testutil.write_text(path, "\n")
    with self.assertRaisesRegex(ValueError, rf"^{self.tmp}: no questions in {path} \(empty dev "
                                            r"files\?\)$"):
      race_data.read_split(self.tmp, "dev")

  def test_blank_filling_and_inputs(self):
    self.assertEqual(race_data.second_segment("The cat was _ .", "warm"), "The cat was warm .")
    self.assertEqual(race_data.second_segment("Where?", "here"), "Where? here")
    tokenizer = tokenizer_lib.WordPieceTokenizer(vocab_lib.load_vocab(testutil.SAMPLE_VOCAB))
    questions = race_data.questions_of(PASSAGE, "test")
    inputs = race_data.encode(questions, tokenizer, 16)
    self.assertEqual(inputs["input_word_ids"].shape, (2, 4, 16))
    vocab = tokenizer.vocab
    for row, question in enumerate(questions):
      for k, option in enumerate(question.options):
        second = tokenizer.tokenize_to_lists([race_data.second_segment(question.question,
                                                                      option)])[0]
        ids = inputs["input_word_ids"][row, k]
        length = inputs["input_mask"][row, k].sum()
        # The article is truncated first: the second segment is whole, at the end.
        self.assertEqual(ids[0], vocab.cls_id)
        self.assertAllEqual(ids[length - 1 - len(second):length - 1], second)
        self.assertEqual(ids[length - 2 - len(second)], vocab.sep_id)
        self.assertAllEqual(inputs["input_type_ids"][row, k, :length],
                            [0] * (length - 1 - len(second)) + [1] * (len(second) + 1))
        article = tokenizer.tokenize_to_lists([question.article])[0]
        self.assertAllEqual(ids[1:length - 2 - len(second)],
                            article[:length - 3 - len(second)])
    self.assertEqual(inputs["input_mask"].sum(-1).max(), 16)  # the article was cut to fit
    with self.assertRaisesRegex(ValueError, "has 2 options, but every question needs the same"):
      race_data.encode(questions + race_data.questions_of(
          dict(PASSAGE, options=[["a", "b"], ["c", "d"]]), "x"), tokenizer, 16)

  def test_shao_layout_separates_question_and_option(self):
    tokenizer = tokenizer_lib.WordPieceTokenizer(vocab_lib.load_vocab(testutil.SAMPLE_VOCAB))
    vocab = tokenizer.vocab
    questions = race_data.questions_of(PASSAGE, "test")
    inputs = race_data.encode(questions, tokenizer, 24, layout="shao")
    article = tokenizer.tokenize_to_lists([PASSAGE["article"]])[0]
    for row, question in enumerate(questions):
      q = tokenizer.tokenize_to_lists([question.question])[0]  # blanks stay blanks
      for k, option in enumerate(question.options):
        o = tokenizer.tokenize_to_lists([option])[0]
        cut = min(len(article), 24 - 4 - len(q) - len(o))
        expected = ([vocab.cls_id] + article[:cut] + [vocab.sep_id] + q + [vocab.sep_id] + o
                    + [vocab.sep_id])
        padding = 24 - len(expected)
        self.assertEqual(inputs["input_word_ids"][row, k].tolist(),
                         expected + [vocab.pad_id] * padding)
        self.assertEqual(inputs["input_type_ids"][row, k].tolist(),
                         [0] * (cut + 2) + [1] * (len(q) + len(o) + 2) + [0] * padding)
    self.assertLess(inputs["input_mask"][1].sum(-1).min(), 24)  # the article fits whole here
    self.assertEqual(inputs["input_mask"][0].sum(-1).max(), 24)  # and is cut here
    short = race_data.encode(questions, tokenizer, 8, layout="shao")["input_word_ids"][0, 0]
    o = tokenizer.tokenize_to_lists([questions[0].options[0]])[0]
    q = tokenizer.tokenize_to_lists([questions[0].question])[0]
    room = 8 - 4 - len(o)  # no article left; the question keeps its end
    self.assertEqual(short.tolist(), [vocab.cls_id, vocab.sep_id, *q[len(q) - room:],
                                      vocab.sep_id, *o, vocab.sep_id])
    with self.assertRaisesRegex(ValueError, "layout must be one of"):
      race_data.encode(questions, tokenizer, 8, layout="xlnet")


@testutil.requires(RACE)
class ShippedRaceTest(tf.test.TestCase):

  def test_counts(self):
    dev = race_data.read_split(RACE, "dev")
    self.assertLen(dev, 4887)
    levels = np.array([q.level for q in dev])
    self.assertEqual(((levels == "middle").sum(), (levels == "high").sum()), (1436, 3451))
    self.assertLen(race_data.read_split(RACE, "train"), 9852 + 6032)
    self.assertTrue(all(len(q.options) == 4 for q in dev))
    self.assertGreater(sum("_" in q.question for q in dev), 1000)  # cloze questions are common


if __name__ == "__main__":
  tf.test.main()
