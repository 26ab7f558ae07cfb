"""WordPiece vocabulary files: loading, validation and special-token look-up.

Every tool looks special-token ids up by name, so the public BERT/ELECTRA vocab files (where
`[PAD]`=0, `[UNK]`=100, `[CLS]`=101, `[SEP]`=102, `[MASK]`=103) work as well as ours (0..4).
"""
import dataclasses
import functools
import hashlib
from typing import List, Tuple

import numpy as np

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS: Tuple[str, ...] = (PAD, UNK, CLS, SEP, MASK)
CONTINUATION_PREFIX = "##"


# Over this fraction of tokens with capitals, a vocabulary is cased (BERT's cased vocabularies:
# about 20%; a lowercased one has none, bar letters such as 'ℂ' that lowercasing keeps).
CASED_FRACTION = 0.02


class VocabError(ValueError):
  """A vocabulary file that cannot be used."""


@dataclasses.dataclass(frozen=True)
class Vocab:
  """A loaded WordPiece vocabulary.

  Attributes:
    path: the file it was read from.
    tokens: the tokens, in id order.
    sha256: hex digest of the file bytes (recorded in record sidecars).
  """
  path: str
  tokens: Tuple[str, ...]
  sha256: str

  @property
  def size(self) -> int:
    return len(self.tokens)

  def id_of(self, token: str) -> int:
    return self._index[token]

  @property
  def pad_id(self) -> int:
    return self.id_of(PAD)

  @property
  def unk_id(self) -> int:
    return self.id_of(UNK)

  @property
  def cls_id(self) -> int:
    return self.id_of(CLS)

  @property
  def sep_id(self) -> int:
    return self.id_of(SEP)

  @property
  def mask_id(self) -> int:
    return self.id_of(MASK)

  @property
  def special_ids(self) -> List[int]:
    return [self.id_of(t) for t in SPECIAL_TOKENS]

  @functools.cached_property
  def _index(self):
    return {t: i for i, t in enumerate(self.tokens)}

  def is_continuation(self) -> np.ndarray:
    """`[vocab_size]` bool: True for `##`-prefixed word pieces (used by whole-word masking)."""
    return np.array([t.startswith(CONTINUATION_PREFIX) for t in self.tokens], dtype=bool)

  def is_special(self) -> np.ndarray:
    """`[vocab_size]` bool: True for the five special tokens (never masked or sampled)."""
    out = np.zeros([self.size], dtype=bool)
    out[self.special_ids] = True
    return out

  @functools.cached_property
  def _word_tokens(self) -> List[str]:
    return [t for t in self.tokens if t not in SPECIAL_TOKENS]

  def cased_fraction(self) -> float:
    """The fraction of non-special tokens with a letter that lowercasing changes."""
    return sum(t.lower() != t for t in self._word_tokens) / max(len(self._word_tokens), 1)

  def check_casing(self, do_lower_case: bool) -> None:
    """Refuses a vocabulary whose casing contradicts `do_lower_case`: a cased one (over 2% of
    its tokens have capitals) with lowercased text never uses those tokens; a lowercase one (none
    has, though most are in a script with case) with cased text turns every capitalised word into
    rarer pieces or [UNK]."""
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
  """Reads a one-token-per-line vocab file and checks it is usable.

  Raises:
    VocabError: naming the file when it is missing, not UTF-8, has duplicate tokens or lacks
      any of the special tokens.
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    raise VocabError(f"cannot read vocab file {path}: {e.strerror}") from None
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
  return Vocab(path=path, tokens=tuple(tokens), sha256=hashlib.sha256(data).hexdigest())
