"""Learns a vocabulary: WordPiece with Hugging Face `tokenizers`' trainer (multi-threaded Rust,
the default) or tensorflow-text's BERT vocabulary learner (`learner="tensorflow_text"`, the
vocabularies this library learned before; byte-for-byte the same as then), or a SentencePiece
unigram or BPE model with the `sentencepiece` library's trainer (the field's standard, for any
language: no pre-tokenisation by spaces, so CJK text needs none)."""
import collections
import io
import os
import random
import time
from typing import Callable, Iterable, Iterator, List, Sequence, Tuple

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as bert_vocab

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.utils import interruptible
from official_rtd.utils import progress
from official_rtd.utils import textio


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


LEARNERS = ("tokenizers", "tensorflow_text")
MODEL_TYPES = ("wordpiece", "sentencepiece_unigram", "sentencepiece_bpe")


class _ReadProgress:
  """Wraps the line stream: logs the bytes read of the corpus, the rate and an ETA every
  `every_seconds` (the learners themselves are silent), naming the pass (`label`) of a learner
  that reads the corpus more than once."""

  def __init__(self, lines: Iterable[str], total_bytes: int, log, every_seconds: float = 10.0,
               label: str = ""):
    self.lines, self.total, self.log = lines, max(total_bytes, 1), log
    self.label = f"{label}: " if label else ""
    self.read = 0
    self.throttle = progress.Throttle(self.total, every_seconds)

  def __iter__(self):
    for line in self.lines:
      self.read += len(line.encode("utf-8")) + 1
      if self.throttle.due():
        self.log(f"build_vocab: {self.label}read {self.read / 1e6:.1f} of "
                 f"{self.total / 1e6:.1f} MB "
                 f"({self.throttle.rate(self.read) / 1e6:.2f} MB/s), ETA "
                 f"{self.throttle.eta(self.read)}")
      yield line


ALPHABET_SIZE = 1000  # the `tokenizers` learner's alphabet: its most frequent characters


def alphabet(words: Iterable[str], size: int = ALPHABET_SIZE) -> Tuple[List[str], List[str]]:
  """The `size` most frequent characters of `words` (ties broken by code point) and, of those,
  the ones seen inside a word (after its first character), by code point.

  `tokenizers`' trainer breaks ties in both by hash-map order (a per-process random seed): the
  rare characters at the alphabet's cut-off, and the ids of the `##` continuations, by which it
  breaks ties between equally frequent merges, changed from one build to the next."""
  first, inside = collections.Counter(), collections.Counter()
  for word in filter(None, words):
    first[word[0]] += 1
    inside.update(word[1:])
  counts = first + inside
  ranked = sorted(counts, key=lambda c: (-counts[c], c))[:size]
  return ranked, sorted(c for c in ranked if c in inside)


def canonical_order(tokens: Iterable[str]) -> List[str]:
  """The special tokens first, then by length (without `##`), word starts before continuations,
  then by code point: the trainer's own ids follow hash-map order for equal counts."""
  specials = list(vocab_lib.SPECIAL_TOKENS)
  rest = set(tokens) - set(specials)
  return specials + sorted(rest, key=lambda t: (len(t.removeprefix("##")), t.startswith("##"), t))


def _learn_tokenizers(read: Callable[..., Iterator[str]], vocab_size: int,
                      lower_case: bool) -> List[str]:
  """WordPiece vocabulary from Hugging Face `tokenizers` (BERT's normaliser and pre-tokeniser:
  lower-casing and accent stripping when uncased, CJK characters split, `##` continuations), the
  same for the same corpus: the alphabet and the continuations' ids are fixed here (`alphabet`;
  the continuations enter the trainer as reserved tokens, so their ids no longer follow hash-map
  order) and the result is put in `canonical_order`. `read(label)` gives the lines; it is called
  twice (characters, then learning), each pass named in the progress lines."""
  from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
  tokenizer = BertWordPieceTokenizer(lowercase=lower_case, strip_accents=lower_case,
                                     clean_text=True, handle_chinese_chars=True)
  normalize, pre_tokenize = (tokenizer.normalizer.normalize_str,
                             tokenizer.pre_tokenizer.pre_tokenize_str)
  characters, inside = alphabet(
      word for line in read("pass 1 of 2, characters") for word, _ in
      pre_tokenize(normalize(line)))
  tokenizer.train_from_iterator(
      read("pass 2 of 2, learning"), vocab_size=vocab_size, min_frequency=2,
      initial_alphabet=characters, limit_alphabet=len(characters), wordpieces_prefix="##",
      show_progress=False,
      special_tokens=list(vocab_lib.SPECIAL_TOKENS) + ["##" + c for c in inside])
  return canonical_order(tokenizer.get_vocab())


def _learn_tensorflow_text(read: Callable[[], Iterator[str]], vocab_size: int,
                           lower_case: bool) -> List[str]:
  dataset = tf.data.Dataset.from_generator(
      read, output_signature=tf.TensorSpec([], tf.string)).batch(1024).prefetch(2)
  return bert_vocab.bert_vocab_from_dataset(
      dataset, vocab_size=vocab_size, reserved_tokens=list(vocab_lib.SPECIAL_TOKENS),
      bert_tokenizer_params={"lower_case": lower_case},
      # The learner searches a count threshold in [lower_thresh, upper_thresh] that gives about
      # vocab_size tokens; its default floor of 10 stops small corpora far short of the size.
      learn_params={"lower_thresh": 1})


def _learn_sentencepiece(read: Callable[[], Iterator[str]], vocab_size: int, lower_case: bool,
                         model_type: str, character_coverage: float, byte_fallback: bool) -> bytes:
  """A serialized SentencePiece model whose ids 0-4 are `[PAD] [UNK] [CLS] [SEP] [MASK]` (the
  model's pad, unk, BOS and EOS pieces, and a user-defined mask piece); NFKC normalisation, with
  case folding when `lower_case`."""
  import sentencepiece  # pylint: disable=g-import-not-at-top
  model = io.BytesIO()
  try:
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=read(), model_writer=model, vocab_size=vocab_size,
        model_type=model_type.split("_", 1)[1], character_coverage=character_coverage,
        byte_fallback=byte_fallback, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
        pad_piece=vocab_lib.PAD, unk_piece=vocab_lib.UNK, bos_piece=vocab_lib.CLS,
        eos_piece=vocab_lib.SEP, user_defined_symbols=[vocab_lib.MASK],
        normalization_rule_name="nmt_nfkc_cf" if lower_case else "nmt_nfkc",
        hard_vocab_limit=False, max_sentence_length=1 << 16, num_threads=os.cpu_count() or 1,
        minloglevel=2)
  except RuntimeError as e:  # e.g. fewer pieces than the characters to cover
    message = str(e).split("] ", 1)[-1]
    raise ValueError(f"the sentencepiece trainer refused: {message}") from None
  return model.getvalue()


def _check_output_path(output_file: str) -> None:
  """Refuses, before any learning, an `output_file` that is a directory or lies under a file."""
  if os.path.isdir(output_file):
    raise ValueError(f"--output_file={output_file} is a directory, not a file")
  ancestor = os.path.dirname(os.path.abspath(output_file))
  while not os.path.exists(ancestor) and ancestor != os.path.dirname(ancestor):
    ancestor = os.path.dirname(ancestor)
  if not os.path.isdir(ancestor):
    raise ValueError(f"--output_file={output_file}: {ancestor} is a file, not a directory")


def build_vocab(input_files: Sequence[str], output_file: str, vocab_size: int = 30522,
                lower_case: bool = True, on_decode_error: str = "fail",
                log: Callable[[str], None] = print, sample_lines: int = 0,
                seed: int = 12345, learner: str = "tokenizers", model_type: str = "wordpiece",
                character_coverage: float = 0.9995, byte_fallback: bool = False) -> List[str]:
  """Learns a vocabulary of at most `vocab_size` tokens and writes it (atomically) to
  `output_file`; the special tokens `[PAD] [UNK] [CLS] [SEP] [MASK]` come first (ids 0-4).

  `model_type`: "wordpiece" (a `vocab.txt`, learned by `learner`) or "sentencepiece_unigram" /
  "sentencepiece_bpe" (a SentencePiece `.model`; `character_coverage` of the corpus's characters
  get their own piece, 0.9995 for CJK-rich text and 1.0 for small alphabets, the rest are
  [UNK] or, with `byte_fallback`, UTF-8 byte pieces). A SentencePiece model normalises text itself
  (NFKC, case-folded when `lower_case`): records are then made with `--nodo_lower_case`.

  `sample_lines > 0` learns from a uniform sample of that many non-empty lines (one pass over the
  corpus, memory for the sample only) instead of streaming every line through the learner.
  `learner`: "tokenizers" (words seen at least twice, an alphabet of the 1,000 most frequent
  characters; the same file for the same corpus, two passes over it) or "tensorflow_text" (see
  the module docstring).

  Raises:
    corpus_lib.CorpusError: missing input files, undecodable text, or no text at all.
    ValueError: `vocab_size` too small to hold the special tokens and some text, a negative
      `sample_lines`, an unknown `learner` or `model_type`, or a SentencePiece `output_file` not
      ending in `.model`.
  """
  if learner not in LEARNERS:
    raise ValueError(f"--learner must be one of {LEARNERS}, got {learner!r}")
  if model_type not in MODEL_TYPES:
    raise ValueError(f"--model_type={model_type} must be one of {', '.join(MODEL_TYPES)}")
  sentencepiece = model_type.startswith("sentencepiece")
  if sentencepiece and not output_file.endswith(".model"):
    raise ValueError(f"--output_file={output_file} must end in .model for a SentencePiece "
                     "model (the name tells every tool the vocabulary's kind)")
  if not 0.0 < character_coverage <= 1.0:
    raise ValueError(f"--character_coverage={character_coverage} must be in (0, 1]")
  if sample_lines < 0:
    raise ValueError(f"--sample_lines={sample_lines} must be >= 0 (0: every line)")
  if vocab_size <= len(vocab_lib.SPECIAL_TOKENS):
    raise ValueError(f"--vocab_size={vocab_size} must exceed the {len(vocab_lib.SPECIAL_TOKENS)} "
                     "special tokens")
  _check_output_path(output_file)
  files = corpus_lib.expand_input_files(input_files)
  start = time.time()
  total_bytes = sum(os.path.getsize(f) for f in files)

  def read(label: str = "") -> Iterator[str]:
    return iter(_ReadProgress(_lines(files, on_decode_error, log), total_bytes, log,
                              label=label))

  if sample_lines:
    sample, seen = reservoir_sample(read(), sample_lines, seed)
    log(f"build_vocab: learning from {len(sample)} sampled lines of {seen} "
        f"({100.0 * len(sample) / max(seen, 1):.2f}%)")
    read = lambda label="": iter(sample)  # pylint: disable=unnecessary-lambda-assignment
  if next(read(), None) is None:
    raise corpus_lib.CorpusError(f"the corpus is empty: no text in {', '.join(files[:3])}")
  log(f"build_vocab: learning a {'lower-cased' if lower_case else 'cased'} {model_type} "
      f"vocabulary of at most {vocab_size} tokens from {len(files)} file(s) with "
      f"{'sentencepiece' if sentencepiece else learner}")
  # The learners run in native code for seconds at a time: in a thread, so that Ctrl-C and
  # SIGTERM stop the tool at once (`interruptible`).
  if sentencepiece:
    content = interruptible.call(_learn_sentencepiece, read, vocab_size, lower_case,
                                 model_type, character_coverage, byte_fallback)
  else:
    learn = _learn_tokenizers if learner == "tokenizers" else _learn_tensorflow_text
    content = "".join(t + "\n" for t in interruptible.call(learn, read, vocab_size,
                                                              lower_case)).encode()
  root, extension = os.path.splitext(output_file)
  tmp = f"{root}.tmp-{os.getpid()}{extension}"  # the extension tells load_vocab the kind
  os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
  try:
    with textio.naming_path(output_file):
      with open(tmp, "wb") as f:
        f.write(content)
    tokens = list(vocab_lib.load_vocab(tmp).tokens)  # the learner's output must pass our checks
    os.replace(tmp, output_file)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
  if not 0.95 * vocab_size <= len(tokens) <= vocab_size:
    log(f"build_vocab: note: the learner's closest size to {vocab_size} is {len(tokens)} (a "
        "small corpus has few distinct words and pieces)")
  log(f"build_vocab: wrote {len(tokens)} tokens to {output_file} in {time.time() - start:.1f}s")
  return tokens
