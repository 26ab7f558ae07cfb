"""Predicted tags as written and scored, beside their reader (`tagging_data`), shared by fine-tuned
taggers (`finetune/tagging/task.py`) and CVT's (`cvt/tagger.py`): IOB2 output for span tasks,
token accuracy or span precision/recall/F1 with `conlleval`'s semantics, and the conlleval input
file."""
import collections
from typing import Dict, List, Sequence

import numpy as np

from official_rtd.data import tag_schemes
from official_rtd.data import tagging_data
from official_rtd.utils import textio


def output_tags(task: tagging_data.TaggingTask, tags: List[List[str]]) -> List[List[str]]:
  """Predicted tags as written and scored: IOB2 for span tasks (conlleval reads it next to the
  gold file's IOB1 or IOB2), unchanged for POS."""
  return [tag_schemes.convert(row, "iob2") for row in tags] if task.spans else tags


def evaluate(task: tagging_data.TaggingTask, sentences, predicted: List[List[str]]) -> dict:
  """Token accuracy (POS), or overall span precision/recall/F1 and `f1_<type>` per type."""
  gold = [s.tags for s in sentences]
  if not task.spans:
    return {"accuracy": float(np.mean([g == p for gs, ps in zip(gold, predicted)
                                       for g, p in zip(gs, ps)]))}
  spans = span_metrics(gold, predicted)
  out = {k: spans["overall"][k] for k in ("precision", "recall", "f1")}
  out.update({f"f1_{kind}": values["f1"] for kind, values in spans["per_type"].items()})
  return out


def write_predictions(path: str, sentences, predicted: List[List[str]]):
  """`word gold predicted` lines, a blank line after each sentence: the input of `conlleval`."""
  lines = []
  for sentence, tags in zip(sentences, predicted):
    lines.extend(f"{w} {g} {p}" for w, g, p in zip(sentence.words, sentence.tags, tags))
    lines.append("")
  textio.write_lines_atomic(path, lines)


def _prf(correct: int, predicted: int, gold: int) -> Dict[str, float]:
  precision = correct / predicted if predicted else 0.0
  recall = correct / gold if gold else 0.0
  f1_value = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return {"precision": precision, "recall": recall, "f1": f1_value,
          "correct": correct, "predicted": predicted, "gold": gold}


def span_metrics(gold_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]
                 ) -> Dict[str, dict]:
  """conlleval's figures over sentences of tags (any scheme `tag_schemes` reads; gold and
  predicted may differ): a span counts when type, start and end all match.

  Returns `{"overall": {precision, recall, f1, correct, predicted, gold}, "per_type": {type:
  the same}}`, precision/recall/F1 as fractions (conlleval prints percentages).
  """
  if len(gold_tags) != len(predicted_tags):
    raise ValueError(f"{len(gold_tags)} gold sentences but {len(predicted_tags)} predicted")
  counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> [correct, predicted, gold]
  for row, (gold, predicted) in enumerate(zip(gold_tags, predicted_tags)):
    if len(gold) != len(predicted):
      raise ValueError(f"sentence {row}: {len(gold)} gold tags but {len(predicted)} predicted")
    gold_spans = set(tag_schemes.spans_of(gold))
    predicted_spans = set(tag_schemes.spans_of(predicted))
    for kind, _, _ in gold_spans:
      counts[kind][2] += 1
    for span in predicted_spans:
      counts[span[0]][1] += 1
      counts[span[0]][0] += span in gold_spans
  totals = [sum(c[i] for c in counts.values()) for i in range(3)]
  return {"overall": _prf(*totals),
          "per_type": {kind: _prf(*counts[kind]) for kind in sorted(counts)}}
