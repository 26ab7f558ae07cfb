"""build_vocab: Hugging Face tokenizers' and tensorflow-text's learners behind our checks."""
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

  def test_tensorflow_text_learner_is_unchanged(self):
    # The learner of earlier versions, called as they called it: the same tokens, in order.
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bert_vocab
    paragraphs = testutil.sample_paragraphs(200)
    corpus = testutil.write_text(os.path.join(self.tmp, "c.txt"), "\n".join(paragraphs) + "\n")
    tokens = build_vocab.build_vocab([corpus], os.path.join(self.tmp, "v.txt"), vocab_size=600,
                                     log=lambda _: None, learner="tensorflow_text")
    expected = bert_vocab.bert_vocab_from_dataset(
        tf.data.Dataset.from_tensor_slices(paragraphs).batch(1024), vocab_size=600,
        reserved_tokens=list(vocab_lib.SPECIAL_TOKENS), bert_tokenizer_params={"lower_case": True},
        learn_params={"lower_thresh": 1})
    self.assertEqual(tokens, expected)
    tokenizers_tokens = build_vocab.build_vocab([corpus], os.path.join(self.tmp, "w.txt"),
                                                vocab_size=600, log=lambda _: None)
    self.assertLen(tokenizers_tokens, 600)  # tokenizers' trainer fills the size exactly
    with self.assertRaisesRegex(ValueError, "--learner must be one of"):
      build_vocab.build_vocab([corpus], os.path.join(self.tmp, "x.txt"), learner="bpe")

  def test_progress_with_eta(self):
    messages = []
    lines = ["ab cd", "éf"]
    progress = build_vocab._ReadProgress(iter(lines), 9, messages.append, every_seconds=0.0)
    self.assertEqual(list(progress), lines)
    self.assertRegex(messages[-1], r"read 0\.0 of 0\.0 MB .*ETA 0:00:00")
    self.assertEqual(progress.read, 6 + 4)  # UTF-8 bytes and a newline per line
    # A learner that reads twice (tokenizers: characters, then merges) names each pass.
    messages.clear()
    list(build_vocab._ReadProgress(iter(lines), 9, messages.append, every_seconds=0.0,
                                   label="pass 2 of 2, learning"))
    self.assertRegex(messages[-1], r"^build_vocab: pass 2 of 2, learning: read 0\.0 of 0\.0 MB")

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

  def test_the_same_corpus_gives_the_same_vocab(self):
    # 1,200 CJK characters seen twice each tie for the alphabet's last places: the trainer broke
    # such ties by hash-map order (a different vocabulary each build); now by code point.
    tied = [chr(0x4E00 + i) for i in range(1200)]
    text = "\n".join(testutil.sample_paragraphs(100) + ["".join(tied)] * 2) + "\n"
    corpus = testutil.write_text(os.path.join(self.tmp, "c.txt"), text)
    builds = []
    for i in range(3):
      output = os.path.join(self.tmp, f"v{i}.txt")
      build_vocab.build_vocab([corpus], output, vocab_size=2000, log=lambda _: None)
      with open(output, "rb") as f:
        builds.append(f.read())
    self.assertEqual(builds[0], builds[1])
    self.assertEqual(builds[0], builds[2])
    tokens = set(builds[0].decode().split("\n"))
    kept = [c for c in tied if c in tokens]
    self.assertNotEmpty(kept)
    self.assertLess(len(kept), len(tied))  # the cut-off falls inside the tie
    self.assertEqual(kept, tied[:len(kept)])  # the lowest code points are kept

  def test_alphabet_ranks_by_count_then_code_point(self):
    words = ["ba", "cab", "", "d", "e"]  # a, b: 3 each; c, d, e: 1 each; inside words: a, b
    self.assertEqual(build_vocab.alphabet(words, size=4), (["a", "b", "c", "d"], ["a", "b"]))
    self.assertEqual(build_vocab.alphabet(words, size=1), (["a"], ["a"]))

  def test_canonical_order(self):
    tokens = ["##b", "ab", "[UNK]", "a", "##ab", "[PAD]", "b", "[CLS]", "[SEP]", "[MASK]", "ba"]
    self.assertEqual(build_vocab.canonical_order(tokens),
                     list(vocab_lib.SPECIAL_TOKENS) + ["a", "b", "##b", "ab", "ba", "##ab"])

  def test_reservoir_sample_is_uniform_ordered_and_seeded(self):
    lines = [f"line {i}" for i in range(20)]
    sample, seen = build_vocab.reservoir_sample(iter(lines), 5, seed=3)
    self.assertEqual(seen, 20)
    self.assertLen(set(sample), 5)
    self.assertEqual(sample, sorted(sample, key=lines.index))  # stream order kept
    self.assertEqual(sample, build_vocab.reservoir_sample(iter(lines), 5, seed=3)[0])
    self.assertEqual(build_vocab.reservoir_sample(iter(lines[:3]), 5, seed=3), (lines[:3], 3))
    # Every line is kept with probability 5/20: 4,000 seeds give 1,000 ± 3 sigma (sigma ~27).
    counts = dict.fromkeys(lines, 0)
    for seed in range(4000):
      for line in build_vocab.reservoir_sample(iter(lines), 5, seed=seed)[0]:
        counts[line] += 1
    self.assertBetween(min(counts.values()), 900, 1000)
    self.assertBetween(max(counts.values()), 1000, 1100)

  def test_sample_lines_learns_from_the_sample(self):
    paragraphs = testutil.sample_paragraphs(300)
    corpus = testutil.write_text(os.path.join(self.tmp, "c.txt"), "\n".join(paragraphs) + "\n")
    messages = []
    tokens = build_vocab.build_vocab([corpus], os.path.join(self.tmp, "v.txt"), vocab_size=500,
                                     sample_lines=100, log=messages.append)
    self.assertTrue(any("learning from 100 sampled lines of 300" in m for m in messages), messages)
    self.assertEqual(tokens[:5], list(vocab_lib.SPECIAL_TOKENS))
    sample = build_vocab.reservoir_sample(iter(paragraphs), 100, seed=12345)[0]
    words = {w for line in sample for w in line.lower().split()}
    whole_words = [t for t in tokens[5:] if t.isalpha() and len(t) > 3]
    self.assertNotEmpty(whole_words)
    self.assertTrue(all(any(t in w for w in words) for t in whole_words))
    with self.assertRaisesRegex(ValueError, "--sample_lines=-1 must be >= 0"):
      build_vocab.build_vocab([corpus], os.path.join(self.tmp, "w.txt"), sample_lines=-1)

if __name__ == "__main__":
  tf.test.main()
