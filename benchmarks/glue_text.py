r"""GLUE's sentences as unlabeled text, one per line: news-domain text for CVT's NER runs (issue 73;
the fine-tuning results page, "NER with news text"). CoNLL-2003 is Reuters news; the shipped GLUE
sets hold news sentences: MRPC (news clusters), RTE (mostly news) and STS-B's `main-news` rows.

  python benchmarks/glue_text.py --output_file=/tmp/news/news.txt
  python benchmarks/cvt_labels.py --unlabeled_data=/tmp/news/news.txt ...

Each distinct sentence once (whitespace stripped), in file order: split by split (--splits), task
by task (--tasks) within a split. A file that is not the task's (its header), a short row, or an
STS-B genre that matches no row of a file stops it naming `file:line` or the file; the output file
is written whole or not at all, never over an existing one without --overwrite (its folder is
made if missing).
"""
import os
import sys
from typing import Dict, List, Sequence

from absl import app
from absl import flags

import common
from official_rtd.data import glue_data
from official_rtd.utils import textio

flags.DEFINE_string("glue_dir", os.path.join(common.SHARED, "glue"),
                    "GLUE root holding one folder per task (MRPC/, RTE/, STS-B/, ...).")
flags.DEFINE_list("tasks", ["mrpc", "sts-b", "rte"], "GLUE tasks whose sentences to write.")
flags.DEFINE_list("splits", ["train", "dev"], "Their files (<split>.tsv), in this order.")
flags.DEFINE_list("sts_b_genres", ["main-news"],
                  "STS-B rows of these genres only (its `genre` column; empty: every row).")
flags.DEFINE_string("output_file", None, "Where the sentences go, one per line.")
flags.DEFINE_bool("overwrite", False, "Replace an existing --output_file.")
FLAGS = flags.FLAGS


def task_sentences(path: str, task: glue_data.TaskSpec, genres: Sequence[str]) -> List[str]:
  """The text columns of a train/dev file of `task`, row by row (STS-B: rows of `genres` only,
  none given: all)."""
  if not os.path.isfile(path):
    raise glue_data.GlueDataError(f"GLUE file {path} does not exist")
  columns = [c for c in (task.text_a, task.text_b) if c is not None]
  genre, needed = None, max(columns) + 1
  sentences, seen = [], set()
  for number, line in textio.numbered_lines(path, "utf-8-sig"):
    row = line.rstrip("\r\n").split("\t")
    if number == 1:
      glue_data.check_header(path, task, row)
      if task.name == "sts-b" and genres:
        if "genre" not in row:
          raise glue_data.GlueDataError(f"{path}:1: no `genre` column to select {genres} by")
        genre = row.index("genre")
        needed = max(needed, genre + 1)
      continue
    if row == [""]:
      continue
    if len(row) < needed:
      raise glue_data.GlueDataError(f"{path}:{number}: {len(row)} tab-separated columns, "
                                    f"{task.name} needs {needed}")
    if genre is not None:
      seen.add(row[genre])
    if genre is None or row[genre] in genres:
      sentences.extend(row[c] for c in columns)
  if genre is not None and not seen & set(genres):
    raise glue_data.GlueDataError(f"{path}: no row of the STS-B genres {list(genres)} (--sts_b_"
                                  f"genres); its genres: {', '.join(sorted(seen)) or 'none'}")
  return sentences


def glue_sentences(glue_dir: str, tasks: Sequence[str], splits: Sequence[str],
                   sts_b_genres: Sequence[str]) -> List[str]:
  """Every distinct non-empty sentence (stripped) of `tasks`' `splits` files, split by split."""
  distinct: Dict[str, None] = {}
  for split in splits:
    for name in tasks:
      task = glue_data.get_task(name)
      path = os.path.join(glue_dir, task.submission_name, f"{split}.tsv")
      for sentence in map(str.strip, task_sentences(path, task, sts_b_genres)):
        if sentence:
          distinct.setdefault(sentence, None)
  return list(distinct)


def main(_):
  output = os.path.abspath(FLAGS.output_file)
  if os.path.exists(output) and not FLAGS.overwrite:
    sys.exit(f"glue_text.py: --output_file={FLAGS.output_file} exists: give --overwrite to "
             "replace it, or another --output_file")
  try:
    sentences = glue_sentences(FLAGS.glue_dir, FLAGS.tasks, FLAGS.splits, FLAGS.sts_b_genres)
  except (glue_data.GlueDataError, textio.InputFileError) as e:
    sys.exit(f"glue_text.py: {e}")
  os.makedirs(os.path.dirname(output), exist_ok=True)
  textio.write_lines_atomic(output, sentences)
  print(f"{FLAGS.output_file}: {len(sentences)} sentences, "
        f"{sum(len(s.split()) for s in sentences)} words")


if __name__ == "__main__":
  flags.mark_flag_as_required("output_file")
  app.run(main)
