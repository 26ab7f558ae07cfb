"""How the tools show progress on long work."""


def format_duration(seconds: float) -> str:
  """`H:MM:SS` (e.g. an ETA); "unknown" for an infinite or NaN estimate."""
  if seconds != seconds or seconds == float("inf"):
    return "unknown"
  seconds = int(seconds)
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
