"""tensorflow-text WordPiece tokenizers over a `Vocab`."""
import tensorflow as tf
import tensorflow_text as tf_text

from official_rtd.data import vocab as vocab_lib

TOKENIZERS = ("fast", "bert")


class WordPieceTokenizer:
  """Tokenizes batches of strings into word-piece ids (`FastBertTokenizer` or `BertTokenizer`)."""

  def __init__(self, vocab: vocab_lib.Vocab, do_lower_case: bool = True, kind: str = "fast"):
    if kind not in TOKENIZERS:
      raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {kind!r}")
    self.vocab = vocab
    self.kind = kind
    self.do_lower_case = do_lower_case
    if kind == "fast":
      self._tokenizer = tf_text.FastBertTokenizer(
          vocab=list(vocab.tokens), token_out_type=tf.int64, unknown_token=vocab_lib.UNK,
          lower_case_nfd_strip_accents=do_lower_case, support_detokenization=True)
    else:
      table = tf.lookup.StaticVocabularyTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant(vocab.tokens), tf.range(vocab.size, dtype=tf.int64)), num_oov_buckets=1)
      self._tokenizer = tf_text.BertTokenizer(
          table, token_out_type=tf.int64, unknown_token=vocab_lib.UNK, lower_case=do_lower_case)

  def tokenize(self, texts) -> tf.RaggedTensor:
    """`[batch]` strings -> `[batch, (pieces)]` int64 ids."""
    ids = self._tokenizer.tokenize(texts)
    if self.kind == "bert":
      ids = ids.merge_dims(-2, -1)
    return ids

  def tokenize_to_lists(self, texts):
    """Tokenizes a Python list of strings; returns a list of int lists (fast path via numpy)."""
    if not texts:
      return []
    ids = self.tokenize(tf.constant(texts))
    flat = ids.flat_values.numpy().tolist()
    splits = ids.row_splits.numpy().tolist()
    return [flat[a:b] for a, b in zip(splits[:-1], splits[1:])]
