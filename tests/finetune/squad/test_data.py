"""SQuAD reading and feature conversion, on the real v1.1 / v2.0 samples in ../shared/data/squad."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune.squad import data as squad_data
from tests import testutil

SQUAD = os.path.join(testutil.REPO, "..", "shared", "data", "squad")
V1 = os.path.join(SQUAD, "train-v1.1-sample.json")
V2 = os.path.join(SQUAD, "train-v2.0-sample.json")


def tokenizer():
  return tokenizer_lib.WordPieceTokenizer(vocab_lib.load_vocab(testutil.SAMPLE_VOCAB))


class PiecesTest(tf.test.TestCase):

  def test_split_pieces_like_bert_basic_tokenizer(self):
    text = "Notre Dame's  (1889)\tcafé—ok"
    pieces = [text[a:b] for a, b in squad_data.split_pieces(text)]
    self.assertEqual(pieces, ["Notre", "Dame", "'", "s", "(", "1889", ")", "café", "—", "ok"])

  def test_word_pieces_keep_their_character_spans(self):
    vocab_path = testutil.write_text(
        os.path.join(tempfile.mkdtemp(), "vocab.txt"),
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##believ", "##able",
                   "cafe", "!"]) + "\n")
    context_tokenizer = squad_data.ContextTokenizer(
        tokenizer_lib.WordPieceTokenizer(vocab_lib.load_vocab(vocab_path)))
    text = "Unbelievable café! zebra"
    doc, = context_tokenizer.tokenize([text])
    self.assertEqual(doc.ids.tolist(), [5, 6, 7, 8, 9, 1])
    self.assertEqual([text[a:b] for a, b in zip(doc.starts, doc.ends)],
                     ["Un", "believ", "able", "café", "!", "zebra"])


@testutil.requires(SQUAD)
class ReadAndConvertTest(tf.test.TestCase):

  def test_counts_match_the_data_readme(self):
    v1 = squad_data.read_squad(V1, version_2_with_negative=False)
    v2 = squad_data.read_squad(V2, version_2_with_negative=True)
    self.assertLen(v1, 406)
    self.assertLen(v2, 836)
    self.assertEqual(sum(e.is_impossible for e in v2), 348)
    self.assertEqual(v2[0].answers[0], squad_data.Answer("action-adventure", 128))

  def _check_gold_spans(self, path, version_2):
    examples = squad_data.read_squad(path, version_2)
    config = squad_data.FeatureConfig(max_seq_length=128, doc_stride=48, max_query_length=24)
    features = squad_data.convert(examples, tokenizer(), config)
    exact = inside_a_piece = 0
    for window in range(len(features)):
      example = examples[features.example_index[window]]
      start, end = features.start_positions[window], features.end_positions[window]
      if example.is_impossible:
        self.assertEqual((start, end, features.is_impossible[window]), (0, 0, 1))
        continue
      if start == 0:  # the answer is not in this window
        continue
      got = squad_data.span_text(example, features, window, start, end)
      answer = example.answers[0]
      # Exact whenever the answer's ends fall on word-piece boundaries; otherwise (e.g. "four"
      # in "fourth", one vocab piece) the smallest token span that contains it.
      answer_end = answer.start + len(answer.text)
      starts = features.token_start_char[window]
      ends = features.token_end_char[window]
      if answer.start in starts and answer_end in ends:
        self.assertEqual(got, answer.text)
        exact += 1
      else:
        self.assertIn(answer.text, got)
        self.assertLess(len(got) - len(answer.text), 10, (got, answer.text))
        inside_a_piece += 1
    # Every context token is in some window, and in exactly one as its max-context window.
    for index in range(len(examples)):
      windows = features.example_index == index
      chars = features.token_start_char[windows]
      counted = {}
      for row, flags in zip(chars, features.is_max_context[windows]):
        for char, flag in zip(row, flags):
          if char >= 0:
            counted[char] = counted.get(char, 0) + int(flag)
      self.assertTrue(all(v == 1 for v in counted.values()))
    return exact, inside_a_piece, features

  def test_v11_every_gold_answer_maps_back_to_its_text(self):
    exact, inside_a_piece, features = self._check_gold_spans(V1, False)
    self.assertEqual((exact, inside_a_piece), (691, 0))
    self.assertEqual(features.input_word_ids.shape[1], 128)

  def test_v20_gold_answers(self):
    exact, inside_a_piece, features = self._check_gold_spans(V2, True)
    self.assertEqual((exact, inside_a_piece), (823, 8))
    # [CLS] question [SEP] context [SEP]: segment 1 covers exactly the context and the last [SEP].
    row = features.input_word_ids[0]
    sep = tokenizer().vocab.sep_id
    first_sep, last_sep = np.flatnonzero(row == sep)[[0, -1]]
    self.assertAllEqual(np.flatnonzero(features.input_type_ids[0]),
                        np.arange(first_sep + 1, last_sep + 1))

  def test_windows_cover_the_context_with_the_stride(self):
    self.assertEqual(squad_data.doc_windows(10, 4, 3), [(0, 4), (3, 4), (6, 4)])
    self.assertEqual(squad_data.doc_windows(3, 4, 3), [(0, 3)])


class ErrorsTest(tf.test.TestCase):

  def _write(self, obj):
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return testutil.write_text(os.path.join(tempfile.mkdtemp(), "bad.json"), text)

  def _data(self, qa, context="The cat sat."):
    return {"version": "v2.0", "data": [{"title": "Cats", "paragraphs": [
        {"context": context, "qas": [qa]}]}]}

  def test_errors_name_the_file_and_the_question(self):
    good_qa = {"id": "q1", "question": "Who sat?", "answers": [{"text": "cat",
                                                                 "answer_start": 4}]}
    cases = [
        ('{"data": [', r":1:11: not valid JSON"),
        (self._data({**good_qa, "answers": [{"text": "cat", "answer_start": 3}]}),
         "article 0 ('Cats') paragraph 0 question 'q1' answer 0: 'cat' does not match the "
         "context at answer_start=3 (which reads ' ca')"),
        (self._data({"id": "q1", "answers": []}), "question 'q1': missing 'question'"),
        (self._data({**good_qa, "answers": []}), "needs --version_2_with_negative"),
        ({"data": [{"title": "Cats"}]}, "article 0 ('Cats'): missing 'paragraphs'"),
    ]
    for obj, message in cases:
      path = self._write(obj)
      with self.assertRaises(squad_data.SquadDataError) as e:
        squad_data.read_squad(path, version_2_with_negative=False)
      self.assertIn(path, str(e.exception))
      self.assertIn(message, str(e.exception))

  def test_window_flags_that_cannot_work(self):
    for config, flag in [
        (squad_data.FeatureConfig(512, 128, 64), "--max_seq_length=512 exceeds"),
        (squad_data.FeatureConfig(64, 16, 61), "--max_query_length=61 leaves no room"),
        (squad_data.FeatureConfig(64, 40, 24), "--doc_stride=40 must be in 1..37"),
    ]:
      with self.assertRaisesRegex(ValueError, flag):
        config.check(max_position_embeddings=128)


if __name__ == "__main__":
  tf.test.main()
