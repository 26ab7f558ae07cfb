"""Learns a WordPiece vocabulary with tensorflow-text's BERT vocabulary learner."""
import os
import random
import time
from typing import Callable, Iterable, List, Sequence, Tuple

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bert_vocab

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import vocab as vocab_lib


def _lines(files: Sequence[str], on_decode_error: str, log):
  for chunk in corpus_lib.read_chunks(files, 1 << 20, on_decode_error, warn=log):
    for line in chunk.lines:
      if line:
        yield line


def reservoir_sample(lines: Iterable[str], size: int, seed: int) -> Tuple[List[str], int]:
  """A uniform sample of `size` items of `lines` in one pass and O(size) memory (Algorithm R),
  in stream order; returns it and the number of lines seen."""
  rng = random.Random(seed)
  sample, seen = [], 0
  for seen, line in enumerate(lines, start=1):
    if len(sample) < size:
      sample.append((seen, line))
    else:
      slot = rng.randrange(seen)
      if slot < size:
        sample[slot] = (seen, line)
  return [line for _, line in sorted(sample)], seen


def build_vocab(input_files: Sequence[str], output_file: str, vocab_size: int = 30522,
                lower_case: bool = True, on_decode_error: str = "fail",
                log: Callable[[str], None] = print, sample_lines: int = 0,
                seed: int = 12345) -> List[str]:
  """Learns a vocabulary of at most `vocab_size` tokens and writes it (atomically) to
  `output_file`; the special tokens `[PAD] [UNK] [CLS] [SEP] [MASK]` come first (ids 0-4).

  `sample_lines > 0` learns from a uniform sample of that many non-empty lines (one pass over the
  corpus, memory for the sample only) instead of streaming every line through the learner.

  Raises:
    corpus_lib.CorpusError: missing input files, undecodable text, or no text at all.
    ValueError: `vocab_size` too small to hold the special tokens and some text, or a negative
      `sample_lines`.
  """
  if sample_lines < 0:
    raise ValueError(f"--sample_lines={sample_lines} must be >= 0 (0: every line)")
  if vocab_size <= len(vocab_lib.SPECIAL_TOKENS):
    raise ValueError(f"--vocab_size={vocab_size} must exceed the {len(vocab_lib.SPECIAL_TOKENS)} "
                     "special tokens")
  files = corpus_lib.expand_input_files(input_files)
  start = time.time()
  lines = _lines(files, on_decode_error, log)
  if sample_lines:
    sample, seen = reservoir_sample(lines, sample_lines, seed)
    log(f"build_vocab: learning from {len(sample)} sampled lines of {seen} "
        f"({100.0 * len(sample) / max(seen, 1):.2f}%)")
    lines = iter(sample)
  try:
    first = next(lines)
  except StopIteration:
    raise corpus_lib.CorpusError(f"the corpus is empty: no text in {', '.join(files[:3])}") from None

  def all_lines():
    yield first
    yield from lines

  dataset = tf.data.Dataset.from_generator(
      all_lines, output_signature=tf.TensorSpec([], tf.string)).batch(1024).prefetch(2)
  log(f"build_vocab: learning a {'lower-cased' if lower_case else 'cased'} vocabulary of at most "
      f"{vocab_size} tokens from {len(files)} file(s)")
  tokens = bert_vocab.bert_vocab_from_dataset(
      dataset, vocab_size=vocab_size, reserved_tokens=list(vocab_lib.SPECIAL_TOKENS),
      bert_tokenizer_params={"lower_case": lower_case},
      # The learner searches a count threshold in [lower_thresh, upper_thresh] that gives about
      # vocab_size tokens; its default floor of 10 stops small corpora far short of the size.
      learn_params={"lower_thresh": 1})
  tmp = f"{output_file}.tmp-{os.getpid()}"
  os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
  with open(tmp, "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t in tokens))
  try:
    vocab_lib.load_vocab(tmp)  # the learner's output must itself pass our validation
    os.replace(tmp, output_file)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
  if not 0.95 * vocab_size <= len(tokens) <= vocab_size:
    log(f"build_vocab: note: the learner's closest size to {vocab_size} at an integer word-count "
        f"threshold is {len(tokens)} (a small corpus has few distinct thresholds)")
  log(f"build_vocab: wrote {len(tokens)} tokens to {output_file} in {time.time() - start:.1f}s")
  return tokens
