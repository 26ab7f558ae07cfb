"""From per-window head outputs to one answer per question (ELECTRA's `write_predictions`).

Candidates are (start, end) pairs from the beam (joint head) or the top `n_best_size` start and end
logits (independent head); a pair is kept if both ends lie in the context, the start is in the
window where it has the most context, `end >= start`, and the span has at most
`max_answer_length` tokens. Scores are log p(start) + log p(end | start) (joint) or the logit sum.
The no-answer score of a question is the smallest answerability logit over its windows; with
SQuAD 2.0 the answer is `""` when that score exceeds `na_threshold`.
"""
import dataclasses
from typing import Dict, Mapping, Sequence, Tuple

import numpy as np

from official_rtd.finetune.squad import data as squad_data


@dataclasses.dataclass(frozen=True)
class AnswerConfig:
  max_answer_length: int = 30
  n_best_size: int = 20
  na_threshold: float = -2.75  # ELECTRA's qa_na_threshold


def _candidates(outputs: Mapping[str, np.ndarray], window: int, n_best_size: int):
  """`[(start, end, score)]` for one window."""
  if "start_top_index" in outputs:
    starts, ends = outputs["start_top_index"][window], outputs["end_top_index"][window]
    start_lp, end_lp = outputs["start_top_log_probs"][window], outputs["end_top_log_probs"][window]
    return [(int(s), int(e), float(start_lp[i] + end_lp[i, j]))
            for i, s in enumerate(starts) for j, e in enumerate(ends[i])]
  start_logits, end_logits = outputs["start_logits"][window], outputs["end_logits"][window]
  starts = np.argsort(-start_logits, kind="stable")[:n_best_size]
  ends = np.argsort(-end_logits, kind="stable")[:n_best_size]
  return [(int(s), int(e), float(start_logits[s] + end_logits[e])) for s in starts for e in ends]


def best_answers(examples: Sequence[squad_data.SquadExample], features: squad_data.Features,
                 outputs: Mapping[str, np.ndarray], config: AnswerConfig, version_2: bool
                 ) -> Tuple[Dict[str, str], Dict[str, str], Dict[str, float]]:
  """Returns `(predictions, non_null_predictions, null_odds)` keyed by question id.

  `outputs` holds the head's outputs for every window of `features`, as numpy arrays.
  `predictions` has `""` where SQuAD 2.0 says no answer; `null_odds` is empty for 1.1.
  """
  windows_of = [[] for _ in examples]
  for window, index in enumerate(features.example_index):
    windows_of[index].append(window)
  predictions, non_null, null_odds = {}, {}, {}
  for index, example in enumerate(examples):
    best_text, best_score = "", -np.inf
    for window in windows_of[index]:
      starts, ends = features.token_start_char[window], features.token_end_char[window]
      max_context = features.is_max_context[window]
      for start, end, score in _candidates(outputs, window, config.n_best_size):
        if (score <= best_score or starts[start] < 0 or ends[end] < 0 or
            not max_context[start] or end < start or end - start + 1 > config.max_answer_length):
          continue
        best_text, best_score = example.context[starts[start]:ends[end]], score
    non_null[example.qid] = predictions[example.qid] = best_text
    if version_2:
      null_odds[example.qid] = float(min(outputs["answerable_logit"][w]
                                         for w in windows_of[index]))
      if null_odds[example.qid] > config.na_threshold:
        predictions[example.qid] = ""
  return predictions, non_null, null_odds
