r"""The family table (issue 86): a row per pre-training method and a column per figure of the
battery, every member set against a baseline's seeds, read from the figures that
`pretraining_value.py --figures_dir` keeps (`<dir>/<run>_s<seed>.json`), so that runs of several
sessions and work dirs make one table.

  python benchmarks/family_table.py --baseline=benchmarks/results/family_1e14/mlm \
      --members=benchmarks/results/family_1e14/electra_one_machine,\
benchmarks/results/electra_screen_1e14/mask25/electra_one_machine

Each entry is a path without the `_s<seed>.json` ending; its seeds are every such file. Each cell
is the median over seeds [min, max]; a member's also gives its median minus the baseline's, with
`*` where every seed of the one lies beyond every seed of the other (two seeds on each side at
least: `common.beyond_spread`). "Collapse warnings" counts the seeds whose run warned that its
detector collapsed (`pretraining_value.py` reads it from the run's log; "—" for a method without
a detector, or figures kept before it read it). The last column counts the figures of the
issue's goal — LAS, the POS and UAS probes (last layer), SST-2 and CoLA — on which the member is
ahead / behind the baseline beyond the spread.
"""
import glob
import json
import os
import re

from absl import app
from absl import flags

import common

flags.DEFINE_string("baseline", None, "The method every member is set against: a path without "
                    "its `_s<seed>.json` ending (e.g. benchmarks/results/family_1e14/mlm).")
flags.DEFINE_list("members", None, "The other methods, paths as --baseline's, one row each.")
FLAGS = flags.FLAGS

FIGURES = (  # (column, the figure's name in a run's JSON)
    ("held-out RTD AUC", "held-out rtd_auc"),
    ("unigram-noise AUC", "held-out fixed_noise_auc"),
    ("`run_parsing` LAS", "UD EWT fine-tuned (LAS)"),
    ("POS probe, last layer", "probe pos"),
    ("POS probe, best layer", "probe pos (best layer)"),
    ("UAS probe, last layer", "probe ud_uas"),
    ("UAS probe, best layer", "probe ud_uas (best layer)"),
    ("SST-2 fine-tuned", "SST-2 fine-tuned"),
    ("CoLA MCC", "CoLA fine-tuned (MCC)"),
    ("BLiMP-13 PLL", "BLiMP-13 pll"),
)
GOAL = ("UD EWT fine-tuned (LAS)", "probe pos", "probe ud_uas", "SST-2 fine-tuned",
        "CoLA fine-tuned (MCC)")


def seed_figures(prefix: str) -> list:
  """The figures of every `<prefix>_s<seed>.json`, by seed; SystemExit naming the path when there
  are none or one is not a JSON object."""
  pattern = re.compile(re.escape(os.path.basename(prefix)) + r"_s(\d+)\.json$")
  seeds = sorted((int(match.group(1)), path) for path in glob.glob(glob.escape(prefix) + "_s*.json")
                 if (match := pattern.match(os.path.basename(path))))
  if not seeds:
    raise SystemExit(f"family_table.py: no figures {prefix}_s<seed>.json "
                     "(pretraining_value.py --figures_dir keeps them)")
  rows = []
  for _, path in seeds:
    try:
      with open(path, encoding="utf-8") as f:
        row = json.load(f)
    except (OSError, ValueError) as e:
      raise SystemExit(f"family_table.py: {path}: not a figures file ({e})") from None
    if not isinstance(row, dict):
      raise SystemExit(f"family_table.py: {path}: not a figures file (a JSON object of figures)")
    for name, value in row.items():
      if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SystemExit(f"family_table.py: {path}: figure {name!r} is {value!r}, not a number")
    rows.append(row)
  return rows


def values(rows: list, name: str) -> list:
  return [float(row[name]) for row in rows if name in row]


def signed(number: float) -> str:
  return f"{number:+.3f}".replace("-", "−")


def cell(figures: list, baseline: list = None) -> str:
  """`figures`' median [min, max] (one seed: the figure), and against `baseline` the difference of
  the medians, `*` beyond the spread."""
  if not figures:
    return "—"
  spread = common.spread(figures)
  text = (f"{spread.median:.3f}" if spread.count == 1
          else f"{spread.median:.3f} [{spread.min:.3f}, {spread.max:.3f}]").replace("-", "−")
  if baseline:
    star = "*" if common.beyond_spread(figures, baseline) else ""
    text += f" ({signed(common.median_difference(figures, baseline))}{star})"
  return text


def goal_count(rows: list, baseline_rows: list) -> str:
  """'ahead / behind' beyond the spread over GOAL's figures."""
  sides = [common.beyond_spread(values(rows, name), values(baseline_rows, name)) for name in GOAL]
  return f"{sides.count(1)} / {sides.count(-1)}"


def collapses(rows: list) -> str:
  """'k of n': the seeds whose run warned of a detector collapse, of those whose figures say."""
  warned = values(rows, "detector collapse warning")
  return f"{int(sum(warned))} of {len(warned)}" if warned else "—"


def family_table(baseline: str, members: list) -> str:
  """The table (Markdown) of `members` against `baseline`, paths as the flags'."""
  prefixes = [baseline, *members]
  figures = {prefix: seed_figures(prefix) for prefix in prefixes}
  root = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in prefixes])
  label = {prefix: os.path.relpath(os.path.abspath(prefix), root) for prefix in prefixes}
  base = figures[baseline]
  rows = [[f"{label[baseline]} ({len(base)}; the baseline)", collapses(base),
           *(cell(values(base, name)) for _, name in FIGURES), "—"]]
  for member in members:
    own = figures[member]
    rows.append([f"{label[member]} ({len(own)})", collapses(own),
                 *(cell(values(own, name), values(base, name)) for _, name in FIGURES),
                 goal_count(own, base)])
  return common.markdown_table(
      ["method (seeds)", "collapse warnings", *(column for column, _ in FIGURES),
       "ahead / behind beyond the spread (LAS, POS, UAS, SST-2, CoLA)"], rows)


def main(_):
  print(family_table(FLAGS.baseline, FLAGS.members))


if __name__ == "__main__":
  flags.mark_flags_as_required(["baseline", "members"])
  app.run(main)
