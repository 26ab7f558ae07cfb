"""Translation's text (dissertation §4.2.4 on Multi30k): Moses tokenization of raw text,
sacrebleu's BLEU (its signature on detokenized output and the paper's tokenized BLEU), the target
vocabulary, parallel files read pair by pair and unlabeled lines split into sentences. No
TensorFlow."""
import collections
import functools
import os
from typing import Dict, List, Sequence

from official_rtd.cvt import data as data_lib
from official_rtd.utils import textio

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SOURCE, TARGET = "en", "de"


@functools.lru_cache(maxsize=None)
def _moses(language: str):
  import sacremoses  # pylint: disable=g-import-not-at-top
  return sacremoses.MosesTokenizer(lang=language), sacremoses.MosesDetokenizer(lang=language)


def tokenize(line: str, language: str) -> List[str]:
  """Moses tokens of raw text (no HTML escaping, so `&` stays `&`)."""
  return _moses(language)[0].tokenize(line.strip(), escape=False)


def detokenize(tokens: Sequence[str], language: str) -> str:
  return _moses(language)[1].detokenize(list(tokens))


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> Dict[str, object]:
  """sacrebleu's corpus BLEU on detokenized text (its default 13a tokenization, with the
  signature) and on Moses-tokenized text as is (`tokenize="none"`: the paper's tokenized BLEU)."""
  import sacrebleu  # pylint: disable=g-import-not-at-top
  metric = sacrebleu.metrics.BLEU()
  detokenized = metric.corpus_score(list(hypotheses), [list(references)])
  tokenized = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(
      [" ".join(tokenize(h, TARGET)) for h in hypotheses],
      [[" ".join(tokenize(r, TARGET)) for r in references]])
  return {"bleu": detokenized.score, "tokenized_bleu": tokenized.score,
          "signature": str(metric.get_signature())}


class TargetVocab:
  """Target words: `<pad>`, `<unk>`, `<s>`, `</s>`, then the training words seen more than
  `min_count − 1` times (the rest are UNK when training)."""

  def __init__(self, words: Sequence[str]):
    self.words = list(words)
    self.ids = {w: i for i, w in enumerate(self.words)}

  @classmethod
  def build(cls, sentences: Sequence[Sequence[str]], min_count: int):
    counts = collections.Counter(w for s in sentences for w in s)
    return cls([PAD, UNK, BOS, EOS] + sorted(w for w, n in counts.items() if n >= min_count))

  def encode(self, tokens: Sequence[str]) -> List[int]:
    """Ids of `tokens` followed by `</s>`."""
    return [self.ids.get(t, 1) for t in tokens] + [self.ids[EOS]]

  def decode(self, ids: Sequence[int]) -> List[str]:
    """Tokens up to (not including) the first `</s>`."""
    out = []
    for i in ids:
      if i == self.ids[EOS]:
        break
      out.append(self.words[i])
    return out


def split_lines(line: str, max_words: int) -> List[List[str]]:
  """An unlabeled source line's sentences as Moses tokens, each kept if 2..max_words long: one
  sentence per line, as Multi30k's captions; a line holding a paragraph (Wikipedia's format) is
  split into its sentences (`data.sentence_pieces`) rather than dropped for its length."""
  out = []
  for sentence in data_lib.sentence_pieces(line):
    words = tokenize(sentence, SOURCE)
    if 2 <= len(words) <= max_words:
      out.append(words)
  return out


def read_parallel(data_dir: str, split: str, on_bad_pair: str = "fail"):
  """`([(line number, (source tokens, target tokens, raw target))], lines)` of `<split>.en` /
  `<split>.de`, line i of one translating line i of the other; no pair is dropped for its length.
  A pair with a blank side fails naming `file:line`, or with `on_bad_pair="skip"` is left out
  (its line number is missing from the list; `lines` counts them all)."""
  paths = [os.path.join(data_dir, f"{split}.{lang}") for lang in (SOURCE, TARGET)]
  for path in paths:
    if not os.path.isfile(path):
      raise ValueError(f"--tasks=translate: {path} not found (--data_dir must hold "
                       f"translation/multi30k/ or {split}.{SOURCE} and {split}.{TARGET})")
  sources, targets = (textio.read_text(path).split("\n") for path in paths)
  sources, targets = (lines[:-1] if lines and not lines[-1] else lines
                      for lines in (sources, targets))
  if len(sources) != len(targets):
    raise ValueError(f"{paths[0]} has {len(sources)} lines but {paths[1]} {len(targets)}: line i "
                     "of one must translate line i of the other")
  out = []
  for number, (source, target) in enumerate(zip(sources, targets), 1):
    if not source.strip() or not target.strip():
      if on_bad_pair != "skip":
        blank = paths[0] if not source.strip() else paths[1]
        raise ValueError(f"{blank}:{number}: blank line, so the pair at line {number} of "
                         f"{split}.{SOURCE}/{split}.{TARGET} has no translation; fix the files "
                         "or pass --on_bad_pair=skip (leave such pairs out, counted in the log)")
      continue
    out.append((number, (tokenize(source, SOURCE), tokenize(target, TARGET), target.strip())))
  if not out:
    raise ValueError(f"{paths[0]}: no sentence pairs")
  return out, len(sources)
