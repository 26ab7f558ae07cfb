"""Shared command-line plumbing: `--help` lists the tool's own flags, user errors become one
`<tool>: error: ...` line and exit 1."""
import os
import re
import signal
import sys
import textwrap
import types

# Keep TensorFlow's C++ start-up chatter out of the tools' output unless the user asks for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import logging  # pylint: disable=g-import-not-at-top

USER_ERRORS = (ValueError, OSError)


def user_error_message(error: BaseException):
  """One line for an error caused by the user's input or machine, else None (a defect: its
  traceback is shown). `USER_ERRORS` and TensorFlow's runtime errors (a damaged checkpoint or
  record file, a missing path, memory exhausted) count; a TensorFlow error keeps only its first
  line, with its kind (e.g. `DataLossError`)."""
  if isinstance(error, USER_ERRORS):
    return str(error)
  tf = sys.modules.get("tensorflow")
  if tf is not None and isinstance(error, tf.errors.OpError):
    first = re.sub(r"\{\{[^}]*\}\}\s*", "", (error.message or "").strip().split("\n")[0])
    inner = re.match(r"\w*Error: (.*)", first)  # our error raised inside a tf.data function
    return inner.group(1) if inner else f"{type(error).__name__}: {first}"
  return None


HELP_ARGS = ("-h", "--help", "-help", "--helpshort", "-?")


def tool_help(main, tool_name: str) -> str:
  """The tool's usage (its module docstring) and the flags it defines itself or through the
  flag modules it imports (e.g. `finetune_flags`), each with its help text and default.

  absl's own `--help` lists the flags of `sys.argv[0]`'s module, which for a console script or a
  `finetune/*.py` wrapper defines none.
  """
  from absl import flags  # pylint: disable=g-import-not-at-top
  module = sys.modules[main.__module__]
  defining = set(flags.FLAGS.flags_by_module_dict())
  names = [module.__name__] + [
      value.__name__ for value in vars(module).values()
      if isinstance(value, types.ModuleType) and value.__name__ in defining
      and value.__name__.startswith("official_rtd.")]
  usage = textwrap.dedent(module.__doc__ or "").strip()
  sections = [f"{tool_name}: {usage}" if usage else tool_name, "flags:"]
  for name in names:
    sections.append(flags.FLAGS.module_help(name).strip())
  sections.append("Absl and TensorFlow flags: --helpfull.")
  return "\n\n".join(sections) + "\n"


class Terminated(KeyboardInterrupt):
  """SIGTERM (a scheduler's or `kill`'s stop), raised like Ctrl-C so that every cleanup runs:
  temporary files and staging directories are removed and worker pools are stopped."""


def _raise_terminated(signum, frame):  # pylint: disable=unused-argument
  raise Terminated()


def run_main(main, tool_name: str):
  """`absl.app.run` with `--help` / `-h` printing this tool's flags (exit 0) and user errors
  (ValueError subclasses, OSError) reported on one line."""
  if any(arg in HELP_ARGS for arg in sys.argv[1:]):
    sys.stdout.write(tool_help(main, tool_name))
    sys.exit(0)

  def wrapped(argv):
    if len(argv) > 1:
      raise app.UsageError(f"unexpected positional arguments: {' '.join(argv[1:])}")
    logging.set_verbosity(logging.INFO)
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
      apply_renamed_flags(tool_name, REQUIRED_AFTER_RENAMING)
      main(argv)
    except KeyboardInterrupt as e:
      what = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
      sys.stderr.write(f"{tool_name}: {what}: finished outputs and checkpoints are kept, "
                       "unfinished files removed; the same command resumes or redoes the rest\n")
      sys.exit(128 + signal.SIGTERM if isinstance(e, Terminated) else 130)
    except Exception as e:  # pylint: disable=broad-except; only the user errors are caught
      message = user_error_message(e)
      if message is None:
        raise
      sys.stderr.write(f"{tool_name}: error: {message}\n")
      sys.exit(1)

  app.run(wrapped)


# `--old` -> `--new`: earlier flag names still accepted for one release (`define_renamed_flag`).
RENAMED = {}
REQUIRED_AFTER_RENAMING = []


def define_renamed_flag(old: str, new: str, required: bool = False):
  """`--old`, the earlier name of the (already defined) `--new`, accepted for one more release:
  given alone it sets `--new` and the tool says once that it is deprecated; with `--new` too
  the command is refused. A required `--new` is checked after the renaming (not by absl)."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  target = flags.FLAGS[new]
  text = f"Deprecated name of --{new}, accepted until the next release."
  if isinstance(target, flags.BooleanFlag):
    flags.DEFINE_bool(old, None, text)
  else:  # the same parser: the value has the new flag's type
    flags.DEFINE(target.parser, old, None, text, serializer=target.serializer)
  RENAMED[old] = new
  if required:
    REQUIRED_AFTER_RENAMING.append(new)


def apply_renamed_flags(tool_name: str, required=()):
  """Moves each renamed flag's value to its new name (one deprecation line on stderr), then
  checks the `required` new names have values."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  values = flags.FLAGS
  for old, new in RENAMED.items():
    if not values[old].present:
      continue
    if values[new].present:
      raise ValueError(f"--{old} is the deprecated name of --{new}: give only --{new}")
    values[new].value = values[old].value
    sys.stderr.write(f"{tool_name}: --{old} is deprecated: use --{new} (same meaning)\n")
  missing = [name for name in required if values[name].value is None]
  if missing:
    raise ValueError(f"--{missing[0]} is required")


def split_list(values):
  """Flattens a comma-list flag given once or several times."""
  out = []
  for value in values or []:
    out.extend(v for v in value.split(",") if v.strip())
  return out




def define_overwrite_flag(what: str = "--output_dir"):
  """`--overwrite`, shared by the tools that write one output directory or file."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  flags.DEFINE_bool("overwrite", False, f"Replace an existing {what} (a directory is moved aside "
                    "to <dir>.replaced-<time>) instead of refusing it before any work.")


def claim_output_file(path: str, overwrite: bool, flag: str = "--output_file") -> None:
  """Refuses an existing output file unless `overwrite` (then it is replaced, atomically, only
  when the new one is complete), a directory, or a path whose directory does not exist."""
  if os.path.isdir(path):
    raise ValueError(f"{flag}={path} is a directory, not a file")
  parent = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(parent):
    raise ValueError(f"{flag}={path}: its directory {parent} does not exist")
  if os.path.exists(path) and not overwrite:
    raise ValueError(f"{flag}={path} already exists: nothing was written; give a new path, or "
                     "--overwrite to replace it")


def claim_output_dir(path: str, overwrite: bool, flag: str = "--output_dir") -> None:
  """Refuses an existing, non-empty output directory (another run's files are never deleted), or
  with `overwrite` moves it aside to `<path>.replaced-<time>` and says so; a file is refused."""
  import time  # pylint: disable=g-import-not-at-top
  if os.path.exists(path) and not os.path.isdir(path):
    raise ValueError(f"{flag}={path} is a file, not a directory")
  if not os.path.isdir(path) or not os.listdir(path):
    return
  if not overwrite:
    raise ValueError(f"{flag}={path} already holds files ({', '.join(sorted(os.listdir(path))[:4])}"
                     f"{', ...' if len(os.listdir(path)) > 4 else ''}): nothing was written; give a "
                     "new directory, or --overwrite to move this one aside")
  aside = f"{path.rstrip('/')}.replaced-{time.strftime('%Y%m%d-%H%M%S')}"
  os.replace(path, aside)
  logging.info("moved the existing %s aside to %s (--overwrite)", path, aside)
