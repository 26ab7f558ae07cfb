"""RACE (Lai et al., 2017) multiple-choice reading comprehension: readers and input building.

A split is read from `<data_dir>/<split>*.jsonl` (one passage per line) or, in the original
layout, `<data_dir>/<split>/{middle,high}/*.txt` (one passage per file). A passage is
`{"id", "article", "questions": [...], "options": [[...], ...], "answers": ["A".."D", ...]}`.

Each option becomes `[CLS] article [SEP] question+option [SEP]`: a question holding a `_` blank
gets the option written into the blank, otherwise the second segment is `question option`; the
article is truncated first.
"""
import dataclasses
import glob
import os
import re
from typing import Dict, List, Sequence, Tuple

import numpy as np

from official_rtd.utils import textio

LEVELS = ("middle", "high")


@dataclasses.dataclass(frozen=True)
class Question:
  id: str  # `<passage id>-<question index>`, e.g. `high1022.txt-0`
  level: str  # middle, high, or "" when neither the id nor the directory says
  article: str
  question: str
  options: Tuple[str, ...]
  answer: int  # index into options
  source: str = ""  # `file:line` (or file) of its passage, for errors


def level_of(passage_id: str, directory: str = "") -> str:
  for text in (directory, passage_id):
    match = re.match(r"(middle|high)", os.path.basename(text))
    if match:
      return match.group(1)
  return ""


def questions_of(passage: dict, source: str, level: str = "") -> List[Question]:
  """The questions of one passage; `source` (`file:line`) names it in errors."""
  missing = [k for k in ("id", "article", "questions", "options", "answers") if k not in passage]
  if missing:
    raise ValueError(f"{source}: passage lacks {missing}")
  questions, options, answers = passage["questions"], passage["options"], passage["answers"]
  if not len(questions) == len(options) == len(answers):
    raise ValueError(f"{source}: {len(questions)} questions, {len(options)} option lists and "
                     f"{len(answers)} answers")
  out = []
  for k, (question, choices, answer) in enumerate(zip(questions, options, answers)):
    if not isinstance(answer, str) or len(answer) != 1 or not 0 <= ord(answer) - 65 < len(choices):
      raise ValueError(f"{source}: question {k}: answer {answer!r} is not a letter among "
                       f"{len(choices)} options")
    out.append(Question(f"{passage['id']}-{k}", level or level_of(passage["id"]),
                        passage["article"], question, tuple(choices), ord(answer) - 65, source))
  return out


def read_jsonl(path: str) -> List[Question]:
  out = []
  for number, line in textio.numbered_lines(path):
    if line.strip():
      out.extend(questions_of(textio.json_line(path, number, line), f"{path}:{number}"))
  return out


def read_original(path: str) -> List[Question]:
  """One passage per file; the level is its directory's name."""
  passage = textio.load_json(path)
  return questions_of(passage, path, level_of(passage.get("id", ""),
                                               os.path.dirname(path)))


def read_split(data_dir: str, split: str) -> List[Question]:
  """`<split>*.jsonl` files or the original `<split>/*/*.txt` layout (not both)."""
  jsonl = sorted(glob.glob(os.path.join(data_dir, f"{split}*.jsonl")))
  original = sorted(glob.glob(os.path.join(data_dir, split, "*", "*.txt")))
  if bool(jsonl) == bool(original):
    raise ValueError(f"{data_dir}: expected either {split}*.jsonl or {split}/{{middle,high}}/*.txt"
                     f" ({'found both' if jsonl else 'found neither'})")
  questions = [q for path in jsonl for q in read_jsonl(path)]
  questions += [q for path in original for q in read_original(path)]
  if not questions:
    raise ValueError(f"{data_dir}: no questions in {', '.join((jsonl + original)[:3])}"
                     f"{' ...' if len(jsonl + original) > 3 else ''} (empty {split} files?)")
  check_option_counts(questions)
  return questions


def check_option_counts(questions: Sequence[Question]) -> None:
  """Every question must have as many options as the first (one softmax over a fixed number);
  the first that differs is named with its file and line."""
  first = questions[0]
  for q in questions:
    if len(q.options) != len(first.options):
      raise ValueError(
          f"{q.source or q.id}: question {q.id} has {len(q.options)} options, but every question "
          f"needs the same number as the first ({first.id} in {first.source or '?'}: "
          f"{len(first.options)})")


def second_segment(question: str, option: str) -> str:
  """The option written into a `_` blank, or appended to the question."""
  return question.replace("_", option) if "_" in question else f"{question} {option}"


LAYOUTS = ("electra", "shao")


def encode(questions: Sequence[Question], tokenizer, max_seq_length: int,
           layout: str = "electra") -> Dict[str, np.ndarray]:
  """`input_word_ids`, `input_mask`, `input_type_ids` `[questions, options, seq_len]` int32.

  `layout` "electra": `[CLS] article [SEP] question+option [SEP]` (the option written into a
  `_` blank or appended, `second_segment`); "shao": `[CLS] article [SEP] question [SEP] option
  [SEP]` (Shao's BERT input, thesis §IV.B.1; blanks left as they are). The article is cut to
  fit; in "shao" a question too long for what is left loses its start. Segment 1 is everything
  after the article's `[SEP]`.
  """
  if layout not in LAYOUTS:
    raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
  if not questions:
    raise ValueError("no questions to encode")
  check_option_counts(questions)
  num_options = len(questions[0].options)
  vocab = tokenizer.vocab
  articles = sorted({q.article for q in questions})
  article_ids = dict(zip(articles, tokenizer.tokenize_to_lists(articles)))
  if layout == "electra":
    seconds = [[b] for b in tokenizer.tokenize_to_lists(
        [second_segment(q.question, o) for q in questions for o in q.options])]
  else:
    question_ids = tokenizer.tokenize_to_lists([q.question for q in questions])
    option_ids = tokenizer.tokenize_to_lists([o for q in questions for o in q.options])
    seconds = [[question_ids[i // num_options], option_ids[i]] for i in range(len(option_ids))]
  ids = np.full([len(questions), num_options, max_seq_length], vocab.pad_id, np.int32)
  types = np.zeros_like(ids)
  for row, question in enumerate(questions):
    for k in range(num_options):
      parts = seconds[row * num_options + k]
      budget = max_seq_length - 2 - len(parts)
      if len(parts) == 2:  # question, option: the option kept whole, the question's end kept
        option = parts[1][:budget]
        room = budget - len(option)
        parts = [parts[0][len(parts[0]) - room:] if room < len(parts[0]) else parts[0], option]
      else:
        parts = [parts[0][:budget]]
      second = [t for part in parts for t in [*part, vocab.sep_id]]
      a = article_ids[question.article][:budget - sum(len(p) for p in parts)]
      tokens = [vocab.cls_id, *a, vocab.sep_id, *second]
      ids[row, k, :len(tokens)] = tokens
      types[row, k, len(a) + 2:len(tokens)] = 1
  return {"input_word_ids": ids, "input_mask": (ids != vocab.pad_id).astype(np.int32),
          "input_type_ids": types}
