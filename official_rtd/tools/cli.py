"""Shared command-line plumbing: user errors become one `<tool>: error: ...` line and exit 1."""
import os
import sys

# Keep TensorFlow's C++ start-up chatter out of the tools' output unless the user asks for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import logging  # pylint: disable=g-import-not-at-top

USER_ERRORS = (ValueError, OSError)


def run_main(main, tool_name: str):
  """`absl.app.run` with user errors (ValueError subclasses, OSError) reported on one line."""

  def wrapped(argv):
    if len(argv) > 1:
      raise app.UsageError(f"unexpected positional arguments: {' '.join(argv[1:])}")
    logging.set_verbosity(logging.INFO)
    try:
      main(argv)
    except USER_ERRORS as e:
      sys.stderr.write(f"{tool_name}: error: {e}\n")
      sys.exit(1)
    except KeyboardInterrupt:
      sys.stderr.write(f"{tool_name}: interrupted; no partial output was left behind\n")
      sys.exit(130)

  app.run(wrapped)


def split_list(values):
  """Flattens a comma-list flag given once or several times."""
  out = []
  for value in values or []:
    out.extend(v for v in value.split(",") if v.strip())
  return out


