"""Dev selection and patience of one trial (fine-tuning's and CVT's): the curve of dev
evaluations, the best one so far (by a score, higher is better) and when to stop, kept in
`trial_<k>/selection.json` (`run.SELECTION_NAME`) so a resumed trial goes on with the same curve,
the same best and the same count of evaluations since it."""
import os
from typing import Dict, List, Optional

from official_rtd.utils import textio


class DevSelection:
  """`record(step, dev, score)` after each evaluation: True for a new best. `patience` (0: none)
  evaluations in a row without one make `exhausted()` true."""

  def __init__(self, path: str, patience: int = 0):
    self.path, self.patience = path, patience
    state = textio.load_json(path) if os.path.isfile(path) else {"curve": [], "best": None}
    self.curve: List[Dict] = state["curve"]
    self.best: Optional[Dict] = state["best"]

  def resume_at(self, step: int) -> None:
    """Forgets the evaluations after `step` (the checkpoint a resumed trial restarts from)."""
    self.curve = [point for point in self.curve if point["step"] <= step]

  def record(self, step: int, dev: Dict, score: float) -> bool:
    """Adds `dev` (its selection `score`) at `step` to the curve (replacing what a resumed trial
    had recorded from `step` on) and writes the file; True if it is the best so far (the first
    evaluation always is)."""
    self.curve = [point for point in self.curve if point["step"] < step]
    self.curve.append({"step": step, **dev})
    new_best = self.best is None or score > self.best["score"]
    if new_best:
      self.best = {"step": step, "score": score, "dev": dev}
    textio.write_json_atomic(self.path, {"curve": self.curve, "best": self.best})
    return new_best

  def evaluated_at(self, step: int) -> bool:
    """Whether the last evaluation recorded is at `step` (a resumed trial may have it)."""
    return bool(self.curve) and self.curve[-1]["step"] == step

  def since_best(self) -> int:
    """Evaluations recorded after the best one."""
    return sum(point["step"] > self.best["step"] for point in self.curve) if self.best else 0

  def exhausted(self) -> bool:
    return bool(self.patience) and self.since_best() >= self.patience

  def stops(self, name: str, step: int, log) -> bool:
    """`exhausted()`, and when it is, says so in `log` (`name`: the trial)."""
    if self.exhausted():
      log(f"{name}: no better dev figure in {self.patience} evaluations; stopping at step "
          f"{step} (best: step {self.best['step']})")
    return self.exhausted()
