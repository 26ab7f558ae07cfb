"""What the training loop does now and then: log, save (and keep milestones), evaluate, measure the
structure onset, switch phases, or anything a user adds (`Trainer.add_action`).

Each `PeriodicAction` says how many steps after a given one it is next due, and does its work when
due; the loop runs to the nearest due step and calls the due actions in order (as Model Garden's
Orbit controller keeps its intervals), so a new action touches no line of the loop.
"""
import dataclasses
from typing import Callable, Optional, Sequence, Tuple


@dataclasses.dataclass
class PeriodicAction:
  """`run(step)` at every multiple of each of `periods` (0s ignored), at each of `at_steps`, and
  at the run's last step if `at_end`; never at a step `skip(step)` is true of (e.g. one whose row a
  resumed run already wrote).

  Attributes:
    name: shown in errors and tests.
    run: the work, called with the step just reached.
  """
  name: str
  run: Callable[[int], None]
  periods: Tuple[int, ...] = ()
  at_steps: Sequence[int] = ()
  at_end: bool = True
  skip: Callable[[int], bool] = lambda step: False

  def __post_init__(self):
    if any(period < 0 for period in self.periods):
      raise ValueError(f"periodic action {self.name!r}: periods {self.periods} must be >= 0")
    self.periods = tuple(period for period in self.periods if period)
    self.at_steps = tuple(sorted(self.at_steps))

  def steps_until_due(self, step: int) -> Optional[int]:
    """Steps after `step` until the next multiple or listed step (None: none; the loop stops at
    the last step anyway)."""
    gaps = [period - step % period for period in self.periods]
    gaps += [at - step for at in self.at_steps if at > step][:1]
    return min(gaps) if gaps else None

  def due(self, step: int, last_step: int) -> bool:
    hit = (any(step % period == 0 for period in self.periods) or step in self.at_steps
           or (self.at_end and step == last_step))
    return hit and not self.skip(step)


def steps_to_next(actions: Sequence[PeriodicAction], step: int, last_step: int) -> int:
  """Steps from `step` to the nearest step where an action is due, or to `last_step`."""
  gaps = [action.steps_until_due(step) for action in actions]
  return min([last_step - step] + [gap for gap in gaps if gap is not None])


def run_due(actions: Sequence[PeriodicAction], step: int, last_step: int) -> None:
  """Runs, in order, the actions due at `step`."""
  for action in actions:
    if action.due(step, last_step):
      action.run(step)
