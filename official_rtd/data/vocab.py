"""Vocabularies: a WordPiece `vocab.txt`, a SentencePiece `.model` or a Hugging Face
`tokenizer.json`; loading, validation and special-token look-up by role.

Every tool looks the special tokens up by role (padding, unknown, classification, separator, mask),
each by any of its usual names, so the public BERT/ELECTRA vocab files (where `[PAD]`=0,
`[UNK]`=100, `[CLS]`=101, `[SEP]`=102, `[MASK]`=103) work as well as ours (0..4), and so do
SentencePiece and Hugging Face vocabularies naming them `<pad> <unk> <s> </s> <mask>`.
"""
import dataclasses
import functools
import hashlib
import json
import os
from typing import Dict, List, Tuple

import numpy as np

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS: Tuple[str, ...] = (PAD, UNK, CLS, SEP, MASK)
CONTINUATION_PREFIX = "##"
# Each role's names, ours (BERT's) first: the names a vocabulary may give its special tokens.
ROLE_NAMES: Dict[str, Tuple[str, ...]] = {
    "pad": (PAD, "<pad>"), "unk": (UNK, "<unk>"), "cls": (CLS, "<s>", "<cls>", "[BOS]"),
    "sep": (SEP, "</s>", "<sep>", "[EOS]"), "mask": (MASK, "<mask>")}
ROLES = tuple(ROLE_NAMES)
KINDS = ("wordpiece", "sentencepiece", "huggingface")
WORD_START = "\u2581"  # SentencePiece's "▁": the piece starts a word
BYTE_LEVEL_WORD_START = "\u0120"  # byte-level BPE's "Ġ" (GPT-2, RoBERTa)


# Over this fraction of tokens with capitals, a vocabulary is cased (BERT's cased vocabularies:
# about 20%; a lowercased one has none, bar letters such as 'ℂ' that lowercasing keeps).
CASED_FRACTION = 0.02


class VocabError(ValueError):
  """A vocabulary file that cannot be used."""


@dataclasses.dataclass(frozen=True)
class Vocab:
  """A loaded vocabulary.

  Attributes:
    path: the file it was read from.
    tokens: the tokens, in id order.
    sha256: hex digest of the file bytes (recorded in record sidecars and exports).
    kind: "wordpiece" (`vocab.txt`), "sentencepiece" (`.model`) or "huggingface"
      (`tokenizer.json`).
    continuation_prefix: WordPiece's mark of a piece that continues a word (`##`), or "".
    word_start: SentencePiece's (`▁`) or byte-level BPE's (`Ġ`) mark of a piece that starts a
      word, or "" (WordPiece).
  """
  path: str
  tokens: Tuple[str, ...]
  sha256: str
  kind: str = "wordpiece"
  continuation_prefix: str = CONTINUATION_PREFIX
  word_start: str = ""

  @property
  def size(self) -> int:
    return len(self.tokens)

  @functools.cached_property
  def role_ids(self) -> Dict[str, int]:
    """The id of each special-token role (`ROLES`), found by its names (`ROLE_NAMES`)."""
    ids = {}
    for role, names in ROLE_NAMES.items():
      found = [name for name in names if name in self._index]
      if found:
        ids[role] = self._index[found[0]]
    return ids

  @property
  def pad_id(self) -> int:
    return self.role_ids["pad"]

  @property
  def unk_id(self) -> int:
    return self.role_ids["unk"]

  @property
  def cls_id(self) -> int:
    return self.role_ids["cls"]

  @property
  def sep_id(self) -> int:
    return self.role_ids["sep"]

  @property
  def mask_id(self) -> int:
    return self.role_ids["mask"]

  def token_of(self, role: str) -> str:
    """The special token playing `role` (e.g. "[MASK]" or "<mask>")."""
    return self.tokens[self.role_ids[role]]

  @property
  def special_ids(self) -> List[int]:
    return [self.role_ids[role] for role in ROLES]

  @functools.cached_property
  def _index(self):
    return {t: i for i, t in enumerate(self.tokens)}

  def is_continuation(self) -> np.ndarray:
    """`[vocab_size]` bool: True for pieces that continue a word (WordPiece's `##` pieces; for
    SentencePiece and byte-level BPE the pieces without a word-start mark), as whole-word masking
    and packing need; special tokens never are."""
    if self.word_start:
      out = [not t.startswith(self.word_start) for t in self.tokens]
    else:
      out = [t.startswith(self.continuation_prefix) for t in self.tokens]
    out = np.array(out, dtype=bool)
    out[self.special_ids] = False
    return out

  def is_special(self) -> np.ndarray:
    """`[vocab_size]` bool: True for the five special tokens (never masked or sampled)."""
    out = np.zeros([self.size], dtype=bool)
    out[self.special_ids] = True
    return out

  @functools.cached_property
  def _word_tokens(self) -> List[str]:
    special = set(self.special_ids)
    return [t for i, t in enumerate(self.tokens) if i not in special]

  def cased_fraction(self) -> float:
    """The fraction of non-special tokens with a letter that lowercasing changes."""
    return sum(t.lower() != t for t in self._word_tokens) / max(len(self._word_tokens), 1)

  def default_lower_case(self) -> bool:
    """Whether text for this vocabulary is lower-cased when the user does not say: never for
    SentencePiece and Hugging Face tokenizers (they normalise text themselves); for WordPiece, as
    its tokens show (cased: over 2% of its tokens have capitals)."""
    return self.kind == "wordpiece" and self.cased_fraction() <= CASED_FRACTION

  def check_casing(self, do_lower_case: bool) -> None:
    """Refuses a vocabulary whose casing contradicts `do_lower_case`: a cased one (over 2% of
    its tokens have capitals) with lowercased text never uses those tokens; a lowercase one (none
    has, though most are in a script with case) with cased text turns every capitalised word into
    rarer pieces or [UNK]. SentencePiece and Hugging Face tokenizers normalise text themselves:
    they are never lower-cased by us, so `do_lower_case` must be False for them."""
    if self.kind != "wordpiece":
      if do_lower_case:
        raise VocabError(f"{self.path} is a {self.kind} tokenizer, which normalises (and, if it "
                         "was trained so, lower-cases) text itself: pass --nodo_lower_case")
      return
    fraction = self.cased_fraction()
    if do_lower_case and fraction > CASED_FRACTION:
      examples = [t for t in self._word_tokens if t.lower() != t][:3]
      raise VocabError(f"{self.path} is a cased vocabulary ({fraction:.0%} of its tokens have "
                       f"capitals, e.g. {examples}) but --do_lower_case lowercases the text, so "
                       "those tokens are never used: pass --nodo_lower_case")
    bicameral = sum(t.upper() != t for t in self._word_tokens) / max(len(self._word_tokens), 1)
    if not do_lower_case and fraction == 0 and bicameral > 0.5:  # not a caseless script's
      raise VocabError(f"{self.path} is a lowercase vocabulary (no token has a capital) but "
                       "--nodo_lower_case keeps the text's capitals, so capitalised words become "
                       "rarer pieces or [UNK]: pass --do_lower_case")


def load_vocab(path: str) -> Vocab:
  """Reads a vocabulary: a SentencePiece model (`*.model`), a Hugging Face tokenizer
  (`*.json`) or a one-token-per-line WordPiece vocab file (anything else), and checks it is
  usable.

  Raises:
    VocabError: naming the file when it is missing, not what its name says, not UTF-8, has
      duplicate tokens or lacks a special-token role.
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    raise VocabError(f"cannot read vocab file {path}: {e.strerror}") from None
  sha256 = hashlib.sha256(data).hexdigest()
  if path.endswith(".model"):
    return _check_roles(_sentencepiece_vocab(path, data, sha256))
  if path.endswith(".json"):
    return _check_roles(_huggingface_vocab(path, data, sha256))
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as e:
    line = data[:e.start].count(b"\n") + 1
    raise VocabError(f"{path}:{line}: vocab file is not valid UTF-8") from None
  tokens = [line.rstrip("\r") for line in text.split("\n")]
  if tokens and tokens[-1] == "":
    tokens.pop()
  seen = {}
  for i, token in enumerate(tokens):
    if token in seen:
      raise VocabError(f"{path}:{i + 1}: duplicate token {token!r} (first on line "
                       f"{seen[token] + 1})")
    seen[token] = i
  missing = [t for t in SPECIAL_TOKENS if t not in seen]
  if missing:
    raise VocabError(f"vocab file {path} lacks the special token(s) {' '.join(missing)} "
                     f"(every vocab needs {' '.join(SPECIAL_TOKENS)})")
  return Vocab(path=path, tokens=tuple(tokens), sha256=sha256)


def _check_roles(vocab: Vocab) -> Vocab:
  missing = [role for role in ROLES if role not in vocab.role_ids]
  if missing:
    raise VocabError(f"{vocab.path} has no token for the special role(s) {', '.join(missing)} "
                     f"(looked for {'; '.join(' or '.join(ROLE_NAMES[r]) for r in missing)}): a "
                     "masked-LM vocabulary needs all of "
                     f"{', '.join('/'.join(names[:2]) for names in ROLE_NAMES.values())}")
  return vocab


def _sentencepiece_vocab(path: str, data: bytes, sha256: str) -> Vocab:
  import sentencepiece  # pylint: disable=g-import-not-at-top
  processor = sentencepiece.SentencePieceProcessor()
  try:
    processor.LoadFromSerializedProto(data)
  except (RuntimeError, OSError) as e:
    raise VocabError(f"{path} is not a SentencePiece model ({' '.join(str(e).split())[:200]})"
                     ) from None
  tokens = tuple(processor.IdToPiece(i) for i in range(processor.GetPieceSize()))
  return Vocab(path=path, tokens=tokens, sha256=sha256, kind="sentencepiece",
               continuation_prefix="", word_start=WORD_START)


def _huggingface_vocab(path: str, data: bytes, sha256: str) -> Vocab:
  import tokenizers  # pylint: disable=g-import-not-at-top
  try:
    tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
    config = json.loads(data)
  except Exception as e:  # pylint: disable=broad-except; tokenizers raises plain Exception
    raise VocabError(f"{path} is not a Hugging Face tokenizer.json "
                     f"({' '.join(str(e).split())[:200]})") from None
  vocab = tokenizer.get_vocab(with_added_tokens=True)
  tokens = [None] * (max(vocab.values()) + 1)
  for token, index in vocab.items():
    tokens[index] = token
  if None in tokens:
    raise VocabError(f"{path}: token ids are not contiguous (id {tokens.index(None)} unused)")
  model = (config.get("model") or {}).get("type")
  decoder = json.dumps(config.get("decoder") or {}) + json.dumps(config.get("pre_tokenizer") or {})
  if model == "WordPiece":
    marks = {"continuation_prefix": config["model"].get("continuing_subword_prefix") or "##"}
  elif "ByteLevel" in decoder:
    marks = {"continuation_prefix": "", "word_start": BYTE_LEVEL_WORD_START}
  elif "Metaspace" in decoder or model == "Unigram":
    marks = {"continuation_prefix": "", "word_start": WORD_START}
  else:
    raise VocabError(f"{path}: a {model} tokenizer whose word boundaries this library cannot read "
                     "(supported: WordPiece, Metaspace/Unigram or byte-level BPE)")
  return Vocab(path=path, tokens=tuple(tokens), sha256=sha256, kind="huggingface", **marks)


# The name a vocabulary of each kind is copied under into run and export directories.
FILE_NAMES = {"wordpiece": "vocab.txt", "sentencepiece": "vocab.model",
              "huggingface": "tokenizer.json"}


def file_name(vocab: Vocab) -> str:
  """The name `vocab` is copied under into a run or export directory."""
  return FILE_NAMES[vocab.kind]


def find_vocab(directory: str) -> str:
  """The vocabulary file of a run or export `directory` (any kind); raises VocabError naming the
  directory and the names looked for when it has none."""
  for name in FILE_NAMES.values():
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      return path
  raise VocabError(f"{directory} has no vocabulary ({' / '.join(FILE_NAMES.values())})")
