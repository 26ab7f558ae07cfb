r"""Prints several pre-training runs' held-out figures side by side at equal training FLOPs.

  compare_runs --model_dirs=/runs/electra,/runs/mlm [--figures=mlm_loss,fixed_noise_auc]
  compare_runs --model_dirs=/runs/electra,/runs/mlm --plot=curves.png [--metric=fixed_noise_auc]

For each run it takes the evaluation row with the most FLOPs not exceeding the smallest of the
runs' final FLOPs (so no run is credited with more compute than the others had). `--plot` also
draws each run's curve of one held-out figure against its training FLOPs (log scale), as the
dissertation's figures do, or of a structure-onset figure (`--metric=onset_attn_prev_max`, from the
runs' `onset.jsonl`: when, and whether, each run left the bag-of-words plateau).
"""
import dataclasses
import os
from typing import List

from official_rtd.tools import cli


@dataclasses.dataclass(frozen=True)
class CompareRunsConfig:
  model_dirs: List[str]
  figures: List[str] = dataclasses.field(default_factory=list)
  plot: str = ""
  metric: str = "fixed_noise_auc"


COMMAND_LINE = cli.Flags(CompareRunsConfig, {
    "model_dirs": "Run directories holding eval_results.jsonl (comma list).",
    "figures": "Figures to show (comma list; default: all that every run has).",
    "plot": "Also write a PNG: --metric against train FLOPs, one line per run.",
    "metric": "The figure --plot draws: an eval_results.jsonl figure, or a structure-onset "
              "figure of onset.jsonl (onset_attn_prev_max, onset_attn_next_max, "
              "onset_attn_entropy_ratio, onset_order_sensitivity).",
})


def compare(model_dirs, figures=()) -> str:
  """Returns the markdown table."""
  from official_rtd.interop import run_dir  # pylint: disable=g-import-not-at-top
  runs = {d: run_dir.read_results(d) for d in model_dirs}
  budget = min(max(r["train_flops"] for r in rows) for rows in runs.values())
  chosen = {d: max((r for r in rows if r["train_flops"] <= budget), key=lambda r: r["train_flops"],
                   default=None) for d, rows in runs.items()}
  missing = [d for d, r in chosen.items() if r is None]
  if missing:
    raise ValueError(f"no evaluation at or below {budget:.3g} FLOPs in {', '.join(missing)}")
  shared = set.intersection(*(set(r) for r in chosen.values())) - {"step", "train_flops"}
  unknown = [f for f in figures if f not in shared]
  if unknown:
    raise ValueError(f"--figures={','.join(unknown)}: not a figure every run has (shared: "
                     f"{', '.join(sorted(shared)) or 'none'})")
  names = list(figures) if figures else sorted(shared)
  lines = [f"equal budget: {budget:.3g} train FLOPs",
           "| run | step | train FLOPs | " + " | ".join(names) + " |",
           "|---|---|---|" + "---|" * len(names)]
  for d, row in chosen.items():
    lines.append(f"| {d} | {row['step']} | {row['train_flops']:.3g} | "
                 + " | ".join(f"{row[n]:.4f}" for n in names) + " |")
  return "\n".join(lines)


def run_name(model_dir: str) -> str:
  return os.path.basename(os.path.normpath(model_dir)) or model_dir


def plot(model_dirs, metric: str, output_file: str):
  """Writes a PNG of `metric` against train FLOPs (log x), one line per run, atomically.

  Raises:
    ValueError: a run has no row with `metric` (the message lists the figures it has).
  """
  from official_rtd.interop import run_dir  # pylint: disable=g-import-not-at-top
  series = {}
  name = run_dir.ONSET_NAME if metric.startswith("onset_") else run_dir.RESULTS_NAME
  for d in model_dirs:
    rows = sorted(run_dir.read_results(d, name), key=lambda r: r["train_flops"])
    points = [(r["train_flops"], r[metric]) for r in rows if metric in r]
    if not points:
      figures = sorted(set().union(*rows) - {"step", "train_flops"}) if rows else []
      raise ValueError(f"--metric={metric}: {d} has no such figure (it has: "
                       f"{', '.join(figures) or 'no evaluation rows'})")
    series[run_name(d)] = points
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  figure, axes = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
  for name, points in series.items():
    axes.plot(*zip(*points), marker="o", markersize=3, label=name)
  axes.set_xscale("log")
  axes.set_xlabel("pre-train FLOPs")
  axes.set_ylabel(metric)
  axes.grid(True, which="both", alpha=0.3)
  axes.legend()
  figure.tight_layout()
  directory = os.path.dirname(os.path.abspath(output_file))
  temporary = os.path.join(directory, f".tmp-{os.getpid()}-{os.path.basename(output_file)}")
  try:
    figure.savefig(temporary, format="png")
    os.replace(temporary, output_file)
  finally:
    pyplot.close(figure)
    if os.path.exists(temporary):
      os.remove(temporary)
  return series


def check_plot_path(path: str) -> None:
  """Refuses a --plot path that cannot take the PNG, before any work."""
  directory = os.path.dirname(os.path.abspath(path))
  if os.path.isdir(path):
    raise ValueError(f"--plot={path} is a directory: give a file name (e.g. {path.rstrip('/')}"
                     "/curves.png)")
  if not os.path.isdir(directory):
    raise ValueError(f"--plot={path}: the directory {directory} does not exist (create it first)")
  if not os.access(directory, os.W_OK):
    raise ValueError(f"--plot={path}: the directory {directory} is not writable")


def main(config):
  from official_rtd.interop import run_dir  # pylint: disable=g-import-not-at-top
  if config.plot:
    check_plot_path(config.plot)
  without = [d for d in config.model_dirs
             if not os.path.isfile(os.path.join(d, run_dir.RESULTS_NAME))]
  if config.plot and config.metric.startswith("onset_") and without:
    # An onset figure needs only onset.jsonl: the runs of the README's step 2 have no evaluation.
    print(f"no table of evaluation figures: no {run_dir.RESULTS_NAME} in {', '.join(without)}")
  else:
    print(compare(config.model_dirs, config.figures))
  if config.plot:
    plot(config.model_dirs, config.metric, config.plot)
    print(f"wrote {config.plot} ({config.metric} against train FLOPs)")


def run():
  cli.run_main(main, "compare_runs", COMMAND_LINE)


if __name__ == "__main__":
  run()
