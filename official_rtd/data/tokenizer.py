"""Tokenizers over a `Vocab`, one interface whatever its kind: tensorflow-text WordPiece
(`vocab.txt`), tensorflow-text SentencePiece (`.model`), Hugging Face `tokenizers`
(`tokenizer.json`). `for_vocab` picks the one the vocabulary needs."""
from typing import List, Sequence

import tensorflow as tf
import tensorflow_text as tf_text

from official_rtd.data import vocab as vocab_lib

TOKENIZERS = ("fast", "bert")  # tensorflow-text's two WordPiece implementations


class Tokenizer(tf.Module):
  """`tokenize` (a `[batch]` string tensor -> `[batch, (pieces)]` int64 ids) and
  `tokenize_to_lists` (a Python list of strings -> lists of ids), without special tokens.

  A `tf.Module`, so an in-graph tokenizer's resources (vocabulary table, SentencePiece model) are
  saved with a SavedModel that holds it."""

  vocab: vocab_lib.Vocab
  do_lower_case: bool = False
  in_graph = True  # whether `tokenize` runs inside a TensorFlow graph (a SavedModel signature)

  def tokenize(self, texts) -> tf.RaggedTensor:
    raise NotImplementedError

  def tokenize_to_lists(self, texts: Sequence[str]) -> List[List[int]]:
    """Tokenizes a Python list of strings; returns a list of int lists (fast path via numpy)."""
    if not texts:
      return []
    ids = self.tokenize(tf.constant(list(texts)))
    flat = ids.flat_values.numpy().tolist()
    splits = ids.row_splits.numpy().tolist()
    return [flat[a:b] for a, b in zip(splits[:-1], splits[1:])]


class WordPieceTokenizer(Tokenizer):
  """BERT's basic tokenisation (lower-casing and accent stripping if `do_lower_case`, CJK
  characters split), then WordPiece (`FastBertTokenizer`, or `BertTokenizer` with `kind="bert"`)."""

  def __init__(self, vocab: vocab_lib.Vocab, do_lower_case: bool = True, kind: str = "fast"):
    if kind not in TOKENIZERS:
      raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {kind!r}")
    super().__init__(name="wordpiece_tokenizer")
    self.vocab = vocab
    self.kind = kind
    self.do_lower_case = do_lower_case
    if kind == "fast":
      self._tokenizer = tf_text.FastBertTokenizer(
          vocab=list(vocab.tokens), token_out_type=tf.int64, unknown_token=vocab.token_of("unk"),
          lower_case_nfd_strip_accents=do_lower_case, support_detokenization=True)
    else:
      table = tf.lookup.StaticVocabularyTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant(vocab.tokens), tf.range(vocab.size, dtype=tf.int64)), num_oov_buckets=1)
      self._tokenizer = tf_text.BertTokenizer(
          table, token_out_type=tf.int64, unknown_token=vocab.token_of("unk"),
          lower_case=do_lower_case)

  def tokenize(self, texts) -> tf.RaggedTensor:
    ids = self._tokenizer.tokenize(texts)
    if self.kind == "bert":
      ids = ids.merge_dims(-2, -1)
    return ids


class SentencePieceTokenizer(Tokenizer):
  """The SentencePiece model's own normalisation and segmentation (no BOS/EOS added)."""

  def __init__(self, vocab: vocab_lib.Vocab):
    super().__init__(name="sentencepiece_tokenizer")
    self.vocab = vocab
    with tf.io.gfile.GFile(vocab.path, "rb") as f:
      self._tokenizer = tf_text.SentencepieceTokenizer(model=f.read(), out_type=tf.int32)

  def tokenize(self, texts) -> tf.RaggedTensor:
    return tf.cast(self._tokenizer.tokenize(texts), tf.int64)  # the op gives int32 only


class HuggingFaceTokenizer(Tokenizer):
  """A Hugging Face `tokenizer.json`'s normaliser, pre-tokeniser and model (no special tokens
  added); runs in Python (multi-threaded Rust), not inside a graph."""

  in_graph = False

  def __init__(self, vocab: vocab_lib.Vocab):
    import tokenizers  # pylint: disable=g-import-not-at-top
    super().__init__(name="huggingface_tokenizer")
    self.vocab = vocab
    self._tokenizer = tokenizers.Tokenizer.from_file(vocab.path)

  def tokenize_to_lists(self, texts: Sequence[str]) -> List[List[int]]:
    return [e.ids for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]

  def tokenize(self, texts) -> tf.RaggedTensor:
    texts = [t.decode("utf-8") for t in tf.convert_to_tensor(texts).numpy().tolist()]
    return tf.ragged.constant(self.tokenize_to_lists(texts), dtype=tf.int64, ragged_rank=1)


def for_vocab(vocab: vocab_lib.Vocab, do_lower_case: bool = True,
              kind: str = "fast") -> Tokenizer:
  """The tokenizer of `vocab`'s kind (`kind` and `do_lower_case` apply to WordPiece; the other
  kinds normalise text as their own files say)."""
  if vocab.kind == "sentencepiece":
    return SentencePieceTokenizer(vocab)
  if vocab.kind == "huggingface":
    return HuggingFaceTokenizer(vocab)
  return WordPieceTokenizer(vocab, do_lower_case, kind)
