"""Vocab loading: special-token look-up by name and clear errors."""
import os

import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from tests import testutil


class VocabTest(tf.test.TestCase):

  def test_bert_style_ids_are_looked_up(self):
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]",
                                                                 "[MASK]", "the", "##s"]
    path = testutil.write_text(os.path.join(self.get_temp_dir(), "v.txt"), "\n".join(tokens) + "\n")
    vocab = vocab_lib.load_vocab(path)
    self.assertEqual((vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id, vocab.mask_id),
                     (0, 100, 101, 102, 103))
    self.assertEqual(vocab.size, 106)
    self.assertEqual(vocab.is_continuation().nonzero()[0].tolist(), [105])
    self.assertEqual(vocab.is_special().nonzero()[0].tolist(), [0, 100, 101, 102, 103])

  def test_errors(self):
    tmp = self.get_temp_dir()
    with self.assertRaisesRegex(vocab_lib.VocabError, r"lacks the special token\(s\) \[MASK\]"):
      vocab_lib.load_vocab(testutil.write_text(os.path.join(tmp, "a.txt"),
                                               "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n"))
    with self.assertRaisesRegex(vocab_lib.VocabError, r"b.txt:7: duplicate token 'the'"):
      vocab_lib.load_vocab(testutil.write_text(os.path.join(tmp, "b.txt"),
                                               "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nthe\n"))
    with self.assertRaisesRegex(vocab_lib.VocabError, "cannot read vocab file .*missing.txt"):
      vocab_lib.load_vocab(os.path.join(tmp, "missing.txt"))
    with self.assertRaisesRegex(vocab_lib.VocabError, r"c.txt:2: vocab file is not valid UTF-8"):
      vocab_lib.load_vocab(testutil.write_text(os.path.join(tmp, "c.txt"),
                                               b"[PAD]\n\xff\xfe\n", "wb"))

  def _vocab(self, name, words):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    return vocab_lib.load_vocab(testutil.write_text(
        os.path.join(self.get_temp_dir(), name), "\n".join(tokens) + "\n"))

  def test_casing_must_match_do_lower_case(self):
    cased = self._vocab("cased.txt", ["The", "the", "Paris", "river", "##s", ".", "a", "of"])
    self.assertAllClose(cased.cased_fraction(), 2 / 8)
    cased.check_casing(False)
    with self.assertRaisesRegex(vocab_lib.VocabError,
                                r"cased.txt is a cased vocabulary \(25% .*'The', 'Paris'.*"
                                r"pass --nodo_lower_case"):
      cased.check_casing(True)
    lower = self._vocab("lower.txt", ["the", "paris", "river", "##s", ".", "a", "of", "ℂ"])
    self.assertEqual(lower.cased_fraction(), 0.0)  # 'ℂ' has no lowercase form
    lower.check_casing(True)
    with self.assertRaisesRegex(vocab_lib.VocabError,
                                r"lower.txt is a lowercase vocabulary .*pass --do_lower_case"):
      lower.check_casing(False)
    caseless = self._vocab("zh.txt", ["的", "是", "##们", "中", "国", "a"])
    caseless.check_casing(False)  # a script without case: keeping the text as is is fine
    caseless.check_casing(True)
    # Unset --do_lower_case follows the vocabulary, and what it picks passes the check.
    self.assertEqual([v.default_lower_case() for v in (cased, lower, caseless)],
                     [False, True, True])

  def test_the_shipped_sample_vocabulary_is_lowercase(self):
    self.assertEqual(vocab_lib.load_vocab(testutil.SAMPLE_VOCAB).cased_fraction(), 0.0)


if __name__ == "__main__":
  tf.test.main()
