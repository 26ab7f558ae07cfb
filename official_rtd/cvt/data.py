"""CVT's inputs: word and character vocabularies (from the labeled and the unlabeled text),
GloVe-format embeddings, padded batches of sentences of similar lengths, and a stream of unlabeled
sentences split on the fly from a corpus in our format (one paragraph per line, blank lines between
documents) or from a file of one sentence per line."""
import collections
import dataclasses
import functools
import itertools
import re
import time
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from official_rtd.data import corpus
from official_rtd.utils import progress
from official_rtd.utils import textio

PAD, UNK, REMOVED = "<pad>", "<unk>", "<removed>"  # REMOVED: the word-dropout baseline's token
MAX_WORD_LENGTH = 20  # characters seen by the char CNN (cvt_text's max_word_length)
_ABBREVIATIONS = ("Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Sgt|Capt|Rev|Hon|Mt|Gov|Sen|Rep|Co|"
                  "Inc|Ltd|Corp|vs|etc|No|[A-Z]")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])")
_ABBREVIATION_END = re.compile(rf"\b(?:{_ABBREVIATIONS})\.$")
_TOKEN = re.compile(rf"\b(?:{_ABBREVIATIONS})\.(?!\w)|\w+(?:[-'.]\w+)*|[^\w\s]")


@functools.lru_cache(maxsize=1 << 20)  # words repeat: a corpus has far fewer forms than tokens
def normalize(word: str) -> str:
  """The word-embedding key: lowercased, digits as 0 (GloVe 6B is lowercased)."""
  return re.sub(r"\d", "0", word.lower())


def word_counts(sentences: Iterable[Sequence[str]]) -> collections.Counter:
  """How often each word form (as written) occurs in `sentences`."""
  return collections.Counter(itertools.chain.from_iterable(sentences))


@dataclasses.dataclass
class WordCharVocab:
  """The CVT tagger's word and character ids (not an encoder's WordPiece `data.vocab.Vocab`)."""
  words: Dict[str, int]
  chars: Dict[str, int]

  @classmethod
  def build(cls, sentences: Sequence[Sequence[str]], extra_words: Sequence[str] = (),
            unlabeled_counts: Optional[Dict[str, int]] = None, min_count: int = 1):
    """Every normalised labeled word and character, those of the unlabeled text seen at least
    `min_count` times (`unlabeled_counts`: `word_counts` of its sentences), and `extra_words`
    (e.g. pre-trained vectors' words)."""
    normalized_counts, char_counts = collections.Counter(), collections.Counter()
    for word, count in (unlabeled_counts or {}).items():  # each form once, weighted
      normalized_counts[normalize(word)] += count
      for char in word:
        char_counts[char] += count
    frequent = lambda counts: {k for k, n in counts.items() if n >= min_count}
    words = {PAD: 0, UNK: 1, REMOVED: 2}
    for word in sorted({normalize(w) for s in sentences for w in s} | set(extra_words)
                       | frequent(normalized_counts)):
      words.setdefault(word, len(words))
    chars = {PAD: 0, UNK: 1}
    for char in sorted({c for s in sentences for w in s for c in w} | frequent(char_counts)):
      chars.setdefault(char, len(chars))
    return cls(words, chars)

  def coverage(self, counts: Dict[str, int]) -> float:
    """The fraction of the tokens counted in `counts` (`word_counts`) that have a word id."""
    total = sum(counts.values())
    known = sum(n for w, n in counts.items() if normalize(w) in self.words)
    return known / total if total else float("nan")

  def encode(self, sentence: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """`(word ids [len], char ids [len, MAX_WORD_LENGTH])` of one sentence."""
    words = np.array([self.words.get(normalize(w), 1) for w in sentence], np.int32)
    chars = np.zeros([len(sentence), MAX_WORD_LENGTH], np.int32)
    for t, word in enumerate(sentence):
      chars[t, :min(len(word), MAX_WORD_LENGTH)] = [self.chars.get(c, 1)
                                                     for c in word[:MAX_WORD_LENGTH]]
    return words, chars

  def to_json(self) -> dict:
    return {"words": self.words, "chars": self.chars}


def load_glove(path: str, vocab_words: Optional[Dict[str, int]] = None):
  """Reads a GloVe text file (`word v1 ... vd` per line).

  Returns `(words, vectors [n, d] float32)` for every line (or only the words in `vocab_words`).
  Raises:
    ValueError: `path:line` of a line whose dimension differs from the first line's or whose
      values are not numbers.
  """
  words, vectors, dim = [], [], None
  for number, line in textio.numbered_lines(path):
    fields = line.rstrip("\n").rstrip().split(" ")
    if len(fields) < 2:
      continue
    if dim is None:
      dim = len(fields) - 1
    if len(fields) - 1 != dim:
      raise ValueError(f"{path}:{number}: {len(fields) - 1} values where line 1 has {dim}")
    if vocab_words is not None and fields[0] not in vocab_words:
      continue
    try:
      vectors.append(np.array(fields[1:], np.float32))
    except ValueError:
      raise ValueError(f"{path}:{number}: a value of {fields[0]!r} is not a number") from None
    words.append(fields[0])
  if dim is None:
    raise ValueError(f"{path}: no vectors")
  return words, np.stack(vectors) if vectors else np.zeros([0, dim], np.float32)


def embedding_matrix(vocab: WordCharVocab, dim: int, pretrained: Dict[str, np.ndarray],
                     seed: int) -> np.ndarray:
  """`[words, dim]`: pretrained vectors where known, small random values elsewhere."""
  rng = np.random.default_rng(seed)
  matrix = rng.normal(0.0, 0.1, [len(vocab.words), dim]).astype(np.float32)
  matrix[0] = 0.0
  for word, index in vocab.words.items():
    if word in pretrained:
      matrix[index] = pretrained[word]
  return matrix


@dataclasses.dataclass
class Batch:
  """`words` `[batch, time]`, `chars` `[batch, time, MAX_WORD_LENGTH]`, `lengths` `[batch]`,
  `tags` `[batch, time]` (or None for unlabeled sentences)."""
  words: np.ndarray
  chars: np.ndarray
  lengths: np.ndarray
  tags: Optional[np.ndarray] = None

  def inputs(self) -> Dict[str, np.ndarray]:
    return {"words": self.words, "chars": self.chars, "lengths": self.lengths}


def make_batch(sentences: Sequence[Sequence[str]], vocab: WordCharVocab,
               tags: Optional[Sequence[Sequence[int]]] = None) -> Batch:
  """Encodes and pads `sentences` (lists of words) to the longest one."""
  return pad_batch([vocab.encode(s) for s in sentences], tags)


def pad_batch(encoded: Sequence[Tuple[np.ndarray, np.ndarray]],
              tags: Optional[Sequence[Sequence[int]]] = None) -> Batch:
  """Pads `WordCharVocab.encode` outputs (and their tag ids) to the longest sentence."""
  lengths = np.array([len(w) for w, _ in encoded], np.int32)
  time = int(lengths.max())
  words = np.zeros([len(encoded), time], np.int32)
  chars = np.zeros([len(encoded), time, MAX_WORD_LENGTH], np.int32)
  tag_array = None if tags is None else np.zeros([len(encoded), time], np.int32)
  for row, (word_ids, char_ids) in enumerate(encoded):
    words[row, :len(word_ids)] = word_ids
    chars[row, :len(word_ids)] = char_ids
    if tags is not None:
      tag_array[row, :len(tags[row])] = tags[row]
  return Batch(words, chars, lengths, tag_array)


def length_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator,
                   pool_batches: int = 50) -> List[List[int]]:
  """One epoch of minibatches (index lists) of similar lengths, as cvt_text batches: a random
  order cut into pools of `pool_batches` batches, each pool sorted by length and cut into
  batches, the batches shuffled. Less padding, hence less work per sentence; every index once."""
  order = rng.permutation(len(lengths))
  pool = batch_size * pool_batches
  batches = []
  for begin in range(0, len(order), pool):
    chunk = sorted(order[begin:begin + pool].tolist(), key=lambda i: lengths[i])
    batches += [chunk[k:k + batch_size] for k in range(0, len(chunk), batch_size)]
  return [batches[i] for i in rng.permutation(len(batches))]


def sentence_pieces(paragraph: str) -> List[str]:
  """A paragraph's sentences as text, split after . ! ? before a capital or digit, not after a
  title or an initial such as "Mr." or "J."."""
  pieces, start = [], 0
  for match in _SENTENCE_END.finditer(paragraph):
    if _ABBREVIATION_END.search(paragraph[start:match.start() + 1]):
      continue
    pieces.append(paragraph[start:match.end()])
    start = match.end()
  pieces.append(paragraph[start:])
  return pieces


def split_sentences(paragraph: str, max_words: int) -> List[List[str]]:
  """`sentence_pieces` as word lists of 2..max_words; words and punctuation are tokens."""
  out = []
  for sentence in sentence_pieces(paragraph):
    words = _TOKEN.findall(sentence)
    if 2 <= len(words) <= max_words:
      out.append(words)
  return out


def unlabeled_sentences(patterns: Sequence[str], max_words: int, seed: int,
                        buffer_size: int = 20000, on_decode_error: str = "fail",
                        warn: Callable[[str], None] = print,
                        split: Callable[[str, int], List[List[str]]] = None,
                        passes: Optional[int] = None,
                        min_sentences: int = 1) -> Iterator[List[str]]:
  """A shuffled (through a `buffer_size` reservoir) stream of corpus sentences, read lazily,
  file after file, again and again (`passes` times; None: endlessly); a line that is not UTF-8
  fails naming its `file:line`, or with `on_decode_error="skip"` is skipped with a warning.
  `split(line, max_words)` gives a line's sentences (default: `split_sentences`, for
  paragraphs). A corpus of fewer than `min_sentences` such sentences is refused (a ValueError
  once the first pass ends), not trained on again and again."""
  split = split or split_sentences
  files = corpus.expand_input_files(patterns)
  rng = np.random.default_rng(seed)
  buffer: List[List[str]] = []
  for repeat in (range(passes) if passes else itertools.count()):
    produced = 0
    for chunk in corpus.read_chunks(files, 1 << 20, on_decode_error, warn):
      for line in chunk.lines:
        for sentence in split(line, max_words):
          produced += 1
          if len(buffer) < buffer_size:
            buffer.append(sentence)
            continue
          index = int(rng.integers(len(buffer)))
          yield buffer[index]
          buffer[index] = sentence
    if not produced and not buffer:
      raise ValueError(f"{list(patterns)}: no sentences of 2..{max_words} words")
    if repeat == 0 and produced < min_sentences:
      raise ValueError(f"{list(patterns)}: {produced} sentence(s) of 2..{max_words} words, fewer "
                       f"than {min_sentences} (one unlabeled batch): give more text or a larger "
                       "--max_sentence_length")
    rng.shuffle(buffer)
    yield from buffer
    buffer = []


def shuffled_passes(items: Sequence, seed: int, passes: Optional[int] = None) -> Iterator:
  """`items` in a new random order (seeded) each pass, `passes` times (None: endlessly)."""
  rng = np.random.default_rng(seed)
  for _ in (range(passes) if passes else itertools.count()):
    for index in rng.permutation(len(items)):
      yield items[index]


def alternate(streams: Sequence[Iterator]) -> Iterator:
  """One item of each stream in turn; when one ends, the others go on."""
  streams = list(streams)
  while streams:
    for stream in list(streams):
      try:
        yield next(stream)
      except StopIteration:
        streams.remove(stream)


def predict_rows(encoded: Sequence, predict: Callable, log: Callable[[str], None], what: str,
                 batch_size: int = 64) -> List[Dict[str, np.ndarray]]:
  """`predict(inputs)`'s outputs (`{name: [batch, ...]}`) for every encoded sentence, one row each,
  in order: batched by length (`run_in_length_batches`: progress and ETA every 30 s)."""
  rows: List[Dict[str, np.ndarray]] = [None] * len(encoded)

  def run_batch(chunk):
    out = {k: np.asarray(v) for k, v in predict(pad_batch([encoded[i] for i in chunk])
                                                 .inputs()).items()}
    for j, i in enumerate(chunk):
      rows[i] = {k: v[j] for k, v in out.items()}

  run_in_length_batches(range(len(encoded)), lambda i: len(encoded[i][0]), batch_size,
                        run_batch, log, what)
  return rows


def run_in_length_batches(indices: Sequence[int], length_of: Callable[[int], int],
                          batch_size: int, run_batch: Callable[[List[int]], None],
                          log: Callable[[str], None], what: str) -> float:
  """Calls `run_batch(chunk)` on batches of `indices` of similar lengths (sorted by
  `length_of`), logging `"<what> <done>/<total> (<rate>/s), ETA ..."` every 30 s; returns the
  seconds it took (prediction and translation alike)."""
  order = sorted(indices, key=length_of)
  throttle = progress.Throttle(len(order), every_seconds=30)
  for begin in range(0, len(order), batch_size):
    chunk = order[begin:begin + batch_size]
    run_batch(chunk)
    done = begin + len(chunk)
    if done < len(order) and throttle.due():
      log(f"{what} {done}/{len(order)} ({throttle.rate(done):.1f}/s), ETA {throttle.eta(done)}")
  return time.time() - throttle.start
