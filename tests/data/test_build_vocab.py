"""build_vocab: tensorflow-text's learner behind our checks."""
import os
import tempfile

import tensorflow as tf

from official_rtd.data import build_vocab
from official_rtd.data import corpus as corpus_lib
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from tests import testutil


class BuildVocabTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp(dir=self.get_temp_dir())

  def test_learns_a_usable_vocab(self):
    paragraphs = testutil.sample_paragraphs(200)
    corpus = testutil.write_text(os.path.join(self.tmp, "c.txt"), "\n".join(paragraphs) + "\n")
    output = os.path.join(self.tmp, "vocab.txt")
    tokens = build_vocab.build_vocab([corpus], output, vocab_size=600, log=lambda _: None)
    self.assertEqual(tokens[:5], list(vocab_lib.SPECIAL_TOKENS))
    self.assertLessEqual(len(tokens), 600)
    vocab = vocab_lib.load_vocab(output)
    self.assertEqual(vocab.tokens, tuple(tokens))
    self.assertTrue(vocab.is_continuation().any())
    self.assertFalse(any(t != t.lower() for t in tokens[5:]), "uncased vocab has upper case")
    ids = tokenizer_lib.WordPieceTokenizer(vocab).tokenize_to_lists(paragraphs)
    self.assertNotIn(vocab.unk_id, {t for row in ids for t in row})

  def test_cased(self):
    corpus = testutil.write_text(os.path.join(self.tmp, "c.txt"),
                                 "\n".join(testutil.sample_paragraphs(50)) + "\n")
    tokens = build_vocab.build_vocab([corpus], os.path.join(self.tmp, "v.txt"), vocab_size=400,
                                     lower_case=False, log=lambda _: None)
    self.assertTrue(any(t != t.lower() for t in tokens[5:]))

  def test_errors_leave_no_output(self):
    output = os.path.join(self.tmp, "vocab.txt")
    empty = testutil.write_text(os.path.join(self.tmp, "empty.txt"), "\n\n")
    with self.assertRaisesRegex(corpus_lib.CorpusError, "the corpus is empty"):
      build_vocab.build_vocab([empty], output, log=lambda _: None)
    with self.assertRaisesRegex(corpus_lib.CorpusError, "matches no file"):
      build_vocab.build_vocab([os.path.join(self.tmp, "*.md")], output, log=lambda _: None)
    with self.assertRaisesRegex(ValueError, "--vocab_size=5 must exceed"):
      build_vocab.build_vocab([empty], output, vocab_size=5, log=lambda _: None)
    self.assertFalse(os.path.exists(output))


if __name__ == "__main__":
  tf.test.main()
