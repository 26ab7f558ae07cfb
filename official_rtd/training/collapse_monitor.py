"""Tells a run once, in one line, that its discriminator has collapsed, without stopping it.

A discriminator has collapsed when it predicts one class on nearly every token for a stretch of
steps while replacements exist: its accuracy on original tokens ≥ `threshold` and on replaced
ones ≤ 1 − `threshold` (or the reverse), with `replaced_fraction` of the masked positions
actually replaced, over consecutive training rows spanning at least `min_steps` steps. Its loss
then sits at the entropy of the label prior and it learns nothing from the context (the ELECTRA
runs of `benchmarks/results/pretraining.md`). It listens to the `Reporter`'s "train" rows
(`reporting.py`) of any method logging `<prefix>accuracy_original` / `_replaced` (ELECTRA and the
methods on `methods/objectives.py`: `rtd_`; SCRIPT's critic: `critic_`).
"""
import re
from typing import Callable, Optional, Tuple

# What this project measured to learn where joint training collapses (docs/pretraining.md, "On
# one machine"; benchmarks/results/pretraining.md).
REMEDY = ("let the discriminator learn as a plain BERT first: gin/recipes/masked_lm_warmup.gin "
          "after the task file (masked_lm_warmup.masked_warmup, discriminator_mlm_weight, "
          "rtd_start_step, discriminator_mlm_steps; for ELECTRA gin/recipes/"
          "electra_one_machine.gin); below about 1e16 train FLOPs BERT-MLM (gin/tasks/mlm.gin) "
          "does better downstream at this model size (docs/pretraining.md, 'On one machine')")
# For a run that already has the masked-LM warm-up: one seed of gin/recipes/electra_one_machine.gin
# at 1e14 called every token original for ~1,800 steps after RTD's start, then learned.
REMEDY_WITH_WARMUP = (
    "this run already learns as a plain BERT first (masked_warmup); one seed of "
    "gin/recipes/electra_one_machine.gin stalled like this for about 1,800 steps after "
    "replaced-token detection started and then learned. If it lasts, a later rtd_start_step gives "
    "the warm-up longer, or BERT-MLM (gin/tasks/mlm.gin) does better downstream below about 1e16 "
    "train FLOPs (docs/pretraining.md, 'On one machine')")


# For a method without the warm-up (SCRIPT, Electric, AMOS, ...).
REMEDY_OTHER_METHOD = (
    "this method takes no masked-LM warm-up here (the generator/discriminator methods that do: "
    "gin/recipes/masked_lm_warmup.gin); below about 1e16 train FLOPs BERT-MLM "
    "(gin/tasks/mlm.gin) does better downstream at this model size (docs/pretraining.md, 'On one "
    "machine')")


# For a method with a warm-up of its own (SCRIPT's critic_start_step,
# gin/recipes/script_warmup.gin): SCRIPT's seed 0 at 1e14 called every token original to its end
# while its ranking learned (AUC 0.56 -> 0.66; benchmarks/results/pretraining.md).
REMEDY_OWN_WARMUP = (
    "this run's detector already started after a masked-LM warm-up of its own ({setting} = "
    "{step}); SCRIPT's critic called every token original to the end of a 1e14 run while its AUC "
    "still rose. If it lasts, a later start gives the warm-up longer, or BERT-MLM "
    "(gin/tasks/mlm.gin) does better downstream below about 1e16 train FLOPs "
    "(docs/pretraining.md, 'On one machine')")


def remedy_for(model) -> str:
  """The advice that fits `model`'s run: the masked-LM warm-up, what to do when it has one (the
  family's or the method's own), or, for a method without it, BERT-MLM."""
  if not getattr(model, "supports_warmup", False):
    start = model.detection_start_step()
    if start > 0:
      return REMEDY_OWN_WARMUP.format(setting=model.detection_start_setting(), step=start)
    return REMEDY_OTHER_METHOD
  return REMEDY_WITH_WARMUP if model.masked_warmup else REMEDY


PREFIXES = ("rtd_", "critic_")  # the detectors' metric names: ELECTRA's family, SCRIPT's critic
WARNING_START = "WARNING: the discriminator has collapsed onto "
_WARNING = re.compile(re.escape(WARNING_START) + r"'(\w+)' from step (\d+) to (\d+)")


def logged_collapse(log_text: str) -> Optional[Tuple[str, int]]:
  """What a run's log says of its detector: None when it logged no detector's training rows (no
  `<prefix>accuracy_replaced=`, e.g. BERT-MLM); ("", 0) when no collapse warning; else the first
  warning's class ("original" or "replaced") and the step its stretch began."""
  if not any(f"{prefix}accuracy_replaced=" in log_text for prefix in PREFIXES):
    return None
  match = _WARNING.search(log_text)
  return (match.group(1), int(match.group(2))) if match else ("", 0)


class CollapseMonitor:
  """A `Reporter` listener (`reporter.add_listener(CollapseMonitor(log))`)."""

  def __init__(self, log: Callable[[str], None], prefixes: Tuple[str, ...] = PREFIXES,
               threshold: float = 0.98, min_steps: int = 1000, min_replaced: float = 0.01,
               remedy: str = REMEDY, start_step: int = 0):
    """`prefixes`: the detectors' metric names (ELECTRA's `rtd_`, SCRIPT's `critic_`), the first a
    row holds is read; `start_step`: rows up to this step are not read (the detector's loss starts
    there: `PretrainingModel.detection_start_step`)."""
    self.log, self.prefixes, self.threshold = log, prefixes, threshold
    self.min_steps, self.min_replaced, self.remedy = min_steps, min_replaced, remedy
    self.start_step = start_step
    self.stretch_start: Optional[int] = None  # the step before the first collapsed row
    self.last_step = 0
    self.warned = False

  def collapsed(self, row: dict) -> Optional[str]:
    """The class a collapsed row predicts everywhere ("original" or "replaced"), else None."""
    prefix = self.prefix_of(row)
    original = row.get(prefix + "accuracy_original")
    replaced = row.get(prefix + "accuracy_replaced")
    replaced_fraction = row.get("replaced_fraction", 1.0)
    if original is None or replaced is None or replaced_fraction < self.min_replaced:
      return None
    if original >= self.threshold and replaced <= 1.0 - self.threshold:
      return "original"
    if replaced >= self.threshold and original <= 1.0 - self.threshold:
      return "replaced"
    return None

  def prefix_of(self, row: dict) -> str:
    """The first of `prefixes` whose detector figures `row` holds (else the first)."""
    return next((p for p in self.prefixes if p + "accuracy_original" in row), self.prefixes[0])

  def __call__(self, kind: str, row: dict) -> None:
    if kind == "start":  # a resumed run: its first row holds the means since that step, not 0
      self.stretch_start, self.last_step = None, row["step"]
    if kind != "train" or self.warned:
      return
    step = row["step"]
    label = self.collapsed(row) if step > self.start_step else None
    if label is None:
      self.stretch_start = None
    elif self.stretch_start is None:
      self.stretch_start = self.last_step
    self.last_step = step
    if label is not None and step - self.stretch_start >= self.min_steps:
      self.warned = True
      prefix = self.prefix_of(row)
      auc = row.get(prefix + "auc")
      self.log(
          f"{WARNING_START}'{label}' from step "
          f"{self.stretch_start} to {step}: accuracy {row[prefix + 'accuracy_original']:.3f} "
          f"on original and {row[prefix + 'accuracy_replaced']:.3f} on replaced tokens"
          f"{f', AUC {auc:.3f}' if auc is not None else ''}, with "
          f"{row.get('replaced_fraction', float('nan')):.0%} of the masked tokens replaced: it "
          f"learns nothing from the context. The run goes on; {self.remedy}")
