"""Predicted tags as written and scored, shared by fine-tuned taggers (`tagging/task.py`) and CVT's
(`cvt/tagger.py`): IOB2 output for span tasks, token accuracy or conlleval span P/R/F1, and the
conlleval input file."""
from typing import List

from official_rtd.utils import textio
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.data import tag_schemes
from official_rtd.data import tagging_data


def output_tags(task: tagging_data.TaggingTask, tags: List[List[str]]) -> List[List[str]]:
  """Predicted tags as written and scored: IOB2 for span tasks (conlleval reads it next to the
  gold file's IOB1 or IOB2), unchanged for POS."""
  return [tag_schemes.convert(row, "iob2") for row in tags] if task.spans else tags


def evaluate(task: tagging_data.TaggingTask, sentences, predicted: List[List[str]]) -> dict:
  """Token accuracy (POS), or overall span precision/recall/F1 and `f1_<type>` per type."""
  gold = [s.tags for s in sentences]
  if not task.spans:
    return {"accuracy": metrics_lib.accuracy([t for s in gold for t in s],
                                             [t for s in predicted for t in s])}
  spans = metrics_lib.span_metrics(gold, predicted)
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
