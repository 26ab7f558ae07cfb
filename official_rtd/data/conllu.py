"""CoNLL-U dependency trees (Universal Dependencies): read, check and write.

Ten tab-separated columns per word: ID, FORM, LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC;
`#` comment lines; a blank line ends a sentence. Multi-word token lines (ID `3-4`) and empty nodes
(ID `8.1`) are skipped: the words are the integer IDs 1..n. HEAD 0 is the root. The universal
relation is DEPREL before any colon (`nmod:poss` -> `nmod`), as the CoNLL 2018 shared task scores.
"""
import dataclasses
import os
from typing import Iterable, List, Optional

from official_rtd.utils import textio


class ConlluError(ValueError):
  """A malformed CoNLL-U file (names file:line) or an ill-formed tree (names the sentence)."""


@dataclasses.dataclass
class Sentence:
  """One sentence's words (1-based positions are list index + 1); `heads[i]` is the head of word
  i + 1 (0: the root); `relations` are universal relations."""
  words: List[str]
  heads: List[int]
  relations: List[str]
  upos: List[str]
  xpos: List[str]
  sent_id: str = ""
  line: int = 0  # the line of its first word

  def __len__(self):
    return len(self.words)


def universal_relation(deprel: str) -> str:
  return deprel.split(":", 1)[0]


def check_tree(sentence: Sentence, where: str) -> None:
  """Refuses heads outside the sentence, no root or more than one, and cycles."""
  n = len(sentence)
  name = f"{where}: sentence {sentence.sent_id or '(no sent_id)'} (line {sentence.line})"
  bad = [(i + 1, h) for i, h in enumerate(sentence.heads) if not 0 <= h <= n]
  if bad:
    raise ConlluError(f"{name}: word {bad[0][0]} has head {bad[0][1]}, outside the sentence "
                      f"(0..{n})")
  roots = [i + 1 for i, h in enumerate(sentence.heads) if h == 0]
  if len(roots) != 1:
    raise ConlluError(f"{name}: {len(roots)} roots ({roots or 'none'}); a tree has exactly one")
  for start in range(1, n + 1):  # follow heads from each word: the root must be reached
    seen, word = set(), start
    while word != 0:
      if word in seen:
        raise ConlluError(f"{name}: the heads form a cycle through word {word}")
      seen.add(word)
      word = sentence.heads[word - 1]


def read_conllu(path: str, check: bool = True) -> List[Sentence]:
  """The sentences of `path`.

  Raises:
    ConlluError: a line that is not 10 columns or has a bad ID/HEAD (`file:line`), or with `check`
      a sentence that is not a tree (naming it); FileNotFoundError for a missing file.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f"no CoNLL-U file at {path}")
  sentences, current, sent_id = [], None, ""
  for number, line in textio.numbered_lines(path):
    line = line.rstrip("\n").rstrip("\r")
    if not line.strip():
      if current is not None:
        sentences.append(current)
      current, sent_id = None, ""
      continue
    if line.startswith("#"):
      if line.startswith("# sent_id"):
        sent_id = line.split("=", 1)[-1].strip()
      continue
    columns = line.split("\t")
    if len(columns) != 10:
      raise ConlluError(f"{path}:{number}: {len(columns)} tab-separated columns, CoNLL-U has 10")
    word_id = columns[0]
    if "-" in word_id or "." in word_id:  # multi-word token or empty node
      continue
    if current is None:
      current = Sentence([], [], [], [], [], sent_id, number)
    try:
      position, head = int(word_id), int(columns[6])
    except ValueError:
      raise ConlluError(f"{path}:{number}: ID {word_id!r} and HEAD {columns[6]!r} must be "
                        "integers") from None
    if position != len(current) + 1:
      raise ConlluError(f"{path}:{number}: word ID {position} should be {len(current) + 1}")
    current.words.append(columns[1])
    current.heads.append(head)
    current.relations.append(universal_relation(columns[7]))
    current.upos.append(columns[3])
    current.xpos.append(columns[4])
  if current is not None:
    sentences.append(current)
  if not sentences:
    raise ConlluError(f"{path} holds no sentence (an empty CoNLL-U file)")
  if check:
    for sentence in sentences:
      check_tree(sentence, path)
  return sentences


def write_conllu(path: str, sentences: Iterable[Sentence],
                 predicted: Optional[Iterable[Sentence]] = None) -> None:
  """Writes `sentences` (with `predicted`'s heads and relations where given) as CoNLL-U, through
  a temporary file renamed into place."""
  lines = []
  pairs = zip(sentences, predicted) if predicted is not None else ((s, s) for s in sentences)
  for gold, guess in pairs:
    if gold.sent_id:
      lines.append(f"# sent_id = {gold.sent_id}")
    for i, word in enumerate(gold.words):
      lines.append("\t".join([str(i + 1), word, "_", gold.upos[i], gold.xpos[i], "_",
                              str(guess.heads[i]), guess.relations[i], "_", "_"]))
    lines.append("")
  textio.write_lines_atomic(path, lines)
