r"""Prints several pre-training runs' held-out figures side by side at equal training FLOPs.

  compare_runs --model_dirs=/runs/electra,/runs/mlm [--figures=mlm_loss,fixed_noise_auc]

For each run it takes the evaluation row with the most FLOPs not exceeding the smallest of the
runs' final FLOPs (so no run is credited with more compute than the others had).
"""
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order

flags.DEFINE_list("model_dirs", None, "Run directories holding eval_results.jsonl.")
flags.DEFINE_list("figures", [], "Figures to show (default: all that every run has).")
flags.mark_flag_as_required("model_dirs")
FLAGS = flags.FLAGS


def compare(model_dirs, figures=()) -> str:
  """Returns the markdown table."""
  from official_rtd.training import evaluation  # pylint: disable=g-import-not-at-top
  runs = {d: evaluation.read_results(d) for d in model_dirs}
  budget = min(max(r["train_flops"] for r in rows) for rows in runs.values())
  chosen = {d: max((r for r in rows if r["train_flops"] <= budget), key=lambda r: r["train_flops"],
                   default=None) for d, rows in runs.items()}
  missing = [d for d, r in chosen.items() if r is None]
  if missing:
    raise ValueError(f"no evaluation at or below {budget:.3g} FLOPs in {', '.join(missing)}")
  shared = set.intersection(*(set(r) for r in chosen.values())) - {"step", "train_flops"}
  names = [f for f in figures if f in shared] if figures else sorted(shared)
  lines = [f"equal budget: {budget:.3g} train FLOPs",
           "| run | step | train FLOPs | " + " | ".join(names) + " |",
           "|---|---|---|" + "---|" * len(names)]
  for d, row in chosen.items():
    lines.append(f"| {d} | {row['step']} | {row['train_flops']:.3g} | "
                 + " | ".join(f"{row[n]:.4f}" for n in names) + " |")
  return "\n".join(lines)


def main(_):
  print(compare(FLAGS.model_dirs, FLAGS.figures))


def run():
  cli.run_main(main, "compare_runs")


if __name__ == "__main__":
  run()
