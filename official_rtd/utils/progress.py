"""How the tools show progress on long work, and keep other libraries' noise out of it."""
import contextlib
import logging
import time


def format_duration(seconds: float) -> str:
  """`H:MM:SS` (e.g. an ETA); "unknown" for an infinite or NaN estimate."""
  if seconds != seconds or seconds == float("inf"):
    return "unknown"
  seconds = int(seconds)
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@contextlib.contextmanager
def quiet_logger(name: str, level: int = logging.CRITICAL):
  """Raises the Python logger `name` (and its children) to `level` for the body, e.g. a library
  that logs the same failure many times over while the tool reports it once."""
  logger = logging.getLogger(name)
  previous = logger.level
  logger.setLevel(level)
  try:
    yield
  finally:
    logger.setLevel(previous)


class Throttle:
  """The timing of a long job's progress lines (every tool's): a line is `due` at most every
  `every_seconds`; `rate` is units per second since the start (`restart`: e.g. after a first
  step's compilation) and `eta` the time left for `total` units at that rate."""

  def __init__(self, total: float, every_seconds: float = 10.0):
    self.total, self.every = total, every_seconds
    self.start = self.last = time.time()

  def restart(self) -> None:
    self.start = time.time()

  def due(self, force: bool = False) -> bool:
    """Whether a line is due now (`force`: always, e.g. at the end); the next is due
    `every_seconds` later."""
    now = time.time()
    if not force and now - self.last < self.every:
      return False
    self.last = now
    return True

  def rate(self, done: float) -> float:
    return done / max(time.time() - self.start, 1e-9)

  def eta(self, done: float) -> str:
    """`H:MM:SS` left for the remaining `total - done` units ("unknown" before any)."""
    rate = self.rate(done)
    return format_duration(max(self.total - done, 0) / rate if rate > 0 else float("inf"))
