"""Attachment scores of dependency trees, beside their reader (`conllu`), shared by the fine-tuned
parser (`finetune/parsing/task.py`) and CVT's (`cvt/parser.py`): UAS (the head is right) and LAS
(head and universal relation), over words.

`punctuation="include"` counts every word (the CoNLL 2018 shared task's convention, UD EWT's
standard figures); `"exclude"` leaves out words whose gold UPOS is PUNCT (the convention of the
dissertation's PTB figures, where punctuation is excluded).
"""
from typing import Dict, Sequence

from official_rtd.data.conllu import Sentence

PUNCTUATION = ("include", "exclude")


def attachment_scores(gold: Sequence[Sentence], predicted: Sequence[Sentence],
                      punctuation: str = "include") -> Dict[str, float]:
  """`{"uas", "las", "words"}` of `predicted` against `gold` (the same sentences, in order)."""
  if punctuation not in PUNCTUATION:
    raise ValueError(f"punctuation must be one of {PUNCTUATION}, got {punctuation!r}")
  if len(gold) != len(predicted):
    raise ValueError(f"{len(predicted)} predicted sentences for {len(gold)} gold ones")
  words = heads = labelled = 0
  for index, (g, p) in enumerate(zip(gold, predicted)):
    if len(g) != len(p):
      raise ValueError(f"sentence {index} ({g.sent_id or 'no sent_id'}): {len(p)} predicted "
                       f"words for {len(g)} gold ones")
    for i in range(len(g)):
      if punctuation == "exclude" and g.upos[i] == "PUNCT":
        continue
      words += 1
      if g.heads[i] == p.heads[i]:
        heads += 1
        labelled += g.relations[i] == p.relations[i]
  return {"uas": heads / max(words, 1), "las": labelled / max(words, 1), "words": words}


def dev_report(gold: Sequence[Sentence], predicted: Sequence[Sentence]) -> Dict[str, float]:
  """What a parser's dev evaluation reports: `uas`, `las` (punctuation included), `uas_no_punct`,
  `las_no_punct` (excluded) and `words` (scored with punctuation)."""
  with_punct = attachment_scores(gold, predicted)
  without = attachment_scores(gold, predicted, "exclude")
  return {"uas": with_punct["uas"], "las": with_punct["las"], "uas_no_punct": without["uas"],
          "las_no_punct": without["las"], "words": with_punct["words"]}
