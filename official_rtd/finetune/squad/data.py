"""SQuAD 1.1 / 2.0: reading the official JSON and converting questions to windowed features.

Every context word piece keeps the character span it came from in the original context, so a
predicted token span maps straight back to original text (`context[start_char:end_char]`) without
BERT's `get_final_text` alignment heuristic. Pieces split like BERT's basic tokenizer (whitespace,
then each punctuation or CJK character on its own); within a piece, word pieces get their own
character spans whenever the normalised piece has the original's length (always for ASCII).
"""
import dataclasses
from typing import Dict, List, Sequence, Tuple
import unicodedata

import numpy as np

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.utils import textio


class SquadDataError(ValueError):
  """A SQuAD file that cannot be used; the message names the file and the question."""


@dataclasses.dataclass(frozen=True)
class Answer:
  text: str
  start: int  # character offset into the context


@dataclasses.dataclass(frozen=True)
class SquadExample:
  qid: str
  question: str
  context: str
  answers: Tuple[Answer, ...]  # empty: unanswerable
  title: str = ""

  @property
  def is_impossible(self) -> bool:
    return not self.answers


def _field(obj, key, kind, where):
  if not isinstance(obj, dict) or key not in obj:
    raise SquadDataError(f"{where}: missing {key!r}")
  if not isinstance(obj[key], kind):
    raise SquadDataError(f"{where}: {key!r} must be a {kind.__name__}, got "
                         f"{type(obj[key]).__name__}")
  return obj[key]


def read_squad(path: str, version_2_with_negative: bool) -> List[SquadExample]:
  """Reads a SQuAD JSON file, checking every answer against its `answer_start`.

  Raises:
    SquadDataError: naming the file, article, paragraph and question id of the first problem
      (invalid JSON, a missing field, an answer that does not match the context at its offset,
      an unanswerable question in a 1.1 file).
  """
  try:
    data = textio.load_json(path, "utf-8-sig")
  except textio.InputFileError as e:
    raise SquadDataError(str(e)) from None
  articles = _field(data, "data", list, path)
  examples, seen = [], set()
  for a, article in enumerate(articles):
    title = article.get("title", "") if isinstance(article, dict) else ""
    where_article = f"{path}: article {a} ({title!r})" if title else f"{path}: article {a}"
    for p, paragraph in enumerate(_field(article, "paragraphs", list, where_article)):
      where_paragraph = f"{where_article} paragraph {p}"
      context = _field(paragraph, "context", str, where_paragraph)
      for q, qa in enumerate(_field(paragraph, "qas", list, where_paragraph)):
        qid = qa.get("id", q) if isinstance(qa, dict) else q
        where = f"{where_paragraph} question {qid!r}"
        qid = str(_field(qa, "id", str, where))
        if qid in seen:
          raise SquadDataError(f"{where}: duplicate question id")
        seen.add(qid)
        question = _field(qa, "question", str, where)
        answers = []
        for k, answer in enumerate(_field(qa, "answers", list, where)):
          text = _field(answer, "text", str, f"{where} answer {k}")
          start = _field(answer, "answer_start", int, f"{where} answer {k}")
          found = context[start:start + len(text)]
          if found != text:
            raise SquadDataError(f"{where} answer {k}: {text!r} does not match the context at "
                                 f"answer_start={start} (which reads {found!r})")
          answers.append(Answer(text, start))
        if qa.get("is_impossible", False) and answers:
          raise SquadDataError(f"{where}: is_impossible is true but it has answers")
        if not answers and not version_2_with_negative:
          raise SquadDataError(f"{where}: no answers (an unanswerable question needs "
                               "--version_2_with_negative)")
        examples.append(SquadExample(qid, question, context, tuple(answers), title))
  if not examples:
    raise SquadDataError(f"{path}: no questions")
  return examples


# --- context pieces with character spans ----------------------------------------------------------
def _is_punctuation(char: str) -> bool:
  """BERT's rule: ASCII non-alphanumeric symbols and every Unicode `P*` character."""
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
  cp = ord(char)
  return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
          0x2A700 <= cp <= 0x2B81F or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _is_separator(char: str) -> bool:
  return char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zs") or char == "\ufffd"


def split_pieces(text: str) -> List[Tuple[int, int]]:
  """`[(start, end)]` character spans of BERT basic-tokenizer pieces of `text`."""
  spans, start = [], None
  for i, char in enumerate(text):
    if _is_separator(char):
      if start is not None:
        spans.append((start, i))
        start = None
    elif _is_punctuation(char) or _is_cjk(char):
      if start is not None:
        spans.append((start, i))
        start = None
      spans.append((i, i + 1))
    elif start is None:
      start = i
  if start is not None:
    spans.append((start, len(text)))
  return spans


def _normalize(piece: str, do_lower_case: bool) -> str:
  if not do_lower_case:
    return piece
  return "".join(c for c in unicodedata.normalize("NFD", piece.lower())
                 if unicodedata.category(c) != "Mn")


@dataclasses.dataclass
class TokenizedContext:
  """A context as word pieces: `ids[i]` came from `context[starts[i]:ends[i]]`."""
  ids: np.ndarray
  starts: np.ndarray
  ends: np.ndarray


def _piece_text(vocab, token: str, position: int) -> str:
  """The characters piece `position` of a word spells: without WordPiece's `##` (after the
  word's first piece) or the word-start mark of SentencePiece / byte-level BPE (on the first)."""
  if vocab.continuation_prefix and position and token.startswith(vocab.continuation_prefix):
    return token[len(vocab.continuation_prefix):]
  if vocab.word_start and not position and token.startswith(vocab.word_start):
    return token[len(vocab.word_start):]
  return token


class ContextTokenizer:
  """Word-piece tokenization with character spans (caches each distinct piece)."""

  def __init__(self, tokenizer: tokenizer_lib.Tokenizer, do_lower_case: bool = True):
    self.tokenizer = tokenizer
    self.do_lower_case = do_lower_case
    self._cache: Dict[str, Tuple[List[int], List[Tuple[int, int]]]] = {}

  def _tokenize_pieces(self, pieces: Sequence[str]):
    todo = sorted({p for p in pieces if p not in self._cache})
    vocab = self.tokenizer.vocab
    for piece, ids in zip(todo, self.tokenizer.tokenize_to_lists(todo)):
      texts = [_piece_text(vocab, vocab.tokens[i], k) for k, i in enumerate(ids)]
      normalized = _normalize(piece, self.do_lower_case)
      if (ids and vocab.unk_id not in ids and len(normalized) == len(piece)
          and "".join(texts) == normalized):
        ends = np.cumsum([len(t) for t in texts]).tolist()
        offsets = list(zip([0] + ends[:-1], ends))
      else:  # [UNK] or a length-changing normalisation: every piece covers the whole piece
        offsets = [(0, len(piece))] * len(ids)
      self._cache[piece] = (ids, offsets)

  def tokenize(self, contexts: Sequence[str]) -> List[TokenizedContext]:
    spans = [split_pieces(c) for c in contexts]
    self._tokenize_pieces([c[a:b] for c, s in zip(contexts, spans) for a, b in s])
    out = []
    for context, context_spans in zip(contexts, spans):
      ids, starts, ends = [], [], []
      for a, b in context_spans:
        piece_ids, offsets = self._cache[context[a:b]]
        ids.extend(piece_ids)
        starts.extend(a + s for s, _ in offsets)
        ends.extend(a + e for _, e in offsets)
      out.append(TokenizedContext(np.array(ids, np.int32), np.array(starts, np.int64),
                                  np.array(ends, np.int64)))
    return out


# --- windowed features ----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FeatureConfig:
  max_seq_length: int = 512
  doc_stride: int = 128
  max_query_length: int = 64

  def check(self, max_position_embeddings: int):
    """Raises ValueError naming the flag when no window could hold any context."""
    if self.max_seq_length > max_position_embeddings:
      raise ValueError(f"--max_seq_length={self.max_seq_length} exceeds the encoder's "
                       f"max_position_embeddings {max_position_embeddings}")
    if self.max_query_length + 3 >= self.max_seq_length:
      raise ValueError(f"--max_query_length={self.max_query_length} leaves no room for the "
                       f"context in --max_seq_length={self.max_seq_length} windows")
    if not 0 < self.doc_stride <= self.max_seq_length - self.max_query_length - 3:
      raise ValueError(f"--doc_stride={self.doc_stride} must be in 1.."
                       f"{self.max_seq_length - self.max_query_length - 3} (the context room "
                       "of a window), or windows would skip context tokens")


@dataclasses.dataclass
class Features:
  """Windows of all examples. Arrays are `[num_windows, max_seq_length]` unless noted.

  Attributes:
    example_index: `[num_windows]` which example each window belongs to.
    token_start_char / token_end_char: character span of each window position in its context
      (-1 outside the context part).
    is_max_context: whether the window is the one where this token has the most context.
    start_positions / end_positions: `[num_windows]` gold span in the window (0 = `[CLS]` when
      the answer is not in the window or the question is unanswerable).
    is_impossible: `[num_windows]` 1 for unanswerable questions (ELECTRA labels per question).
  """
  input_word_ids: np.ndarray
  input_mask: np.ndarray
  input_type_ids: np.ndarray
  example_index: np.ndarray
  token_start_char: np.ndarray
  token_end_char: np.ndarray
  is_max_context: np.ndarray
  start_positions: np.ndarray
  end_positions: np.ndarray
  is_impossible: np.ndarray

  @property
  def inputs(self) -> Dict[str, np.ndarray]:
    return {"input_word_ids": self.input_word_ids, "input_mask": self.input_mask,
            "input_type_ids": self.input_type_ids}

  def __len__(self):
    return len(self.example_index)


def doc_windows(num_tokens: int, window: int, stride: int) -> List[Tuple[int, int]]:
  """`[(start, length)]` sliding windows over `num_tokens` context tokens (BERT's rule)."""
  spans, start = [], 0
  while True:
    length = min(num_tokens - start, window)
    spans.append((start, length))
    if start + length >= num_tokens:
      return spans
    start += min(length, stride)


def _max_context(spans: List[Tuple[int, int]], position: int) -> int:
  """Index of the window where `position` has the most context: min(left, right) + 0.01·len."""
  best, best_score = 0, None
  for index, (start, length) in enumerate(spans):
    end = start + length - 1
    if start <= position <= end:
      score = min(position - start, end - position) + 0.01 * length
      if best_score is None or score > best_score:
        best, best_score = index, score
  return best


def convert(examples: Sequence[SquadExample], tokenizer: tokenizer_lib.Tokenizer,
            config: FeatureConfig, do_lower_case: bool = True) -> Features:
  """Tokenizes questions and contexts and cuts each context into `doc_stride` windows."""
  vocab = tokenizer.vocab
  contexts = sorted({e.context for e in examples})
  tokenized = dict(zip(contexts, ContextTokenizer(tokenizer, do_lower_case).tokenize(contexts)))
  questions = tokenizer.tokenize_to_lists([e.question for e in examples])
  seq = config.max_seq_length
  rows = {name: [] for name in ("ids", "types", "example", "start_char", "end_char", "max_ctx",
                                "start", "end", "impossible")}
  for index, (example, query) in enumerate(zip(examples, questions)):
    query = query[:config.max_query_length]
    doc = tokenized[example.context]
    offset = len(query) + 2  # [CLS] query [SEP]
    spans = doc_windows(len(doc.ids), seq - offset - 1, config.doc_stride)
    answer = example.answers[0] if example.answers else None
    if answer is not None:
      # The first token that ends after the answer starts, the last that starts before it ends.
      tok_start = int(np.searchsorted(doc.ends, answer.start, side="right"))
      tok_end = int(np.searchsorted(doc.starts, answer.start + len(answer.text), side="left")) - 1
    for window, (start, length) in enumerate(spans):
      ids = np.full([seq], vocab.pad_id, np.int32)
      ids[:offset + length + 1] = [vocab.cls_id, *query, vocab.sep_id,
                                   *doc.ids[start:start + length], vocab.sep_id]
      types = np.zeros([seq], np.int32)
      types[offset:offset + length + 1] = 1
      start_char = np.full([seq], -1, np.int64)
      end_char = np.full([seq], -1, np.int64)
      start_char[offset:offset + length] = doc.starts[start:start + length]
      end_char[offset:offset + length] = doc.ends[start:start + length]
      max_ctx = np.zeros([seq], bool)
      max_ctx[offset:offset + length] = [_max_context(spans, p) == window
                                         for p in range(start, start + length)]
      gold = (0, 0)
      if answer is not None and start <= tok_start and tok_end < start + length:
        gold = (tok_start - start + offset, tok_end - start + offset)
      for name, value in (("ids", ids), ("types", types), ("example", index),
                          ("start_char", start_char), ("end_char", end_char),
                          ("max_ctx", max_ctx), ("start", gold[0]), ("end", gold[1]),
                          ("impossible", int(answer is None))):
        rows[name].append(value)
  ids = np.stack(rows["ids"])
  return Features(
      input_word_ids=ids, input_mask=(ids != vocab.pad_id).astype(np.int32),
      input_type_ids=np.stack(rows["types"]), example_index=np.array(rows["example"], np.int32),
      token_start_char=np.stack(rows["start_char"]), token_end_char=np.stack(rows["end_char"]),
      is_max_context=np.stack(rows["max_ctx"]),
      start_positions=np.array(rows["start"], np.int32),
      end_positions=np.array(rows["end"], np.int32),
      is_impossible=np.array(rows["impossible"], np.int32))


def span_text(example: SquadExample, features: Features, window: int, start: int,
              end: int) -> str:
  """Original context text of window positions `start..end` (inclusive)."""
  return example.context[features.token_start_char[window, start]:
                         features.token_end_char[window, end]]
