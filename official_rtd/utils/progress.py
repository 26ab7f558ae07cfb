"""How the tools show progress on long work, and keep other libraries' noise out of it."""
import contextlib
import logging


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
