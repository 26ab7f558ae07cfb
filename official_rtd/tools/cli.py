"""Shared command-line plumbing: `--help` lists the tool's own flags, user errors become one
`<tool>: error: ...` line and exit 1."""
import contextlib
import dataclasses
import os
import re
import signal
import sys
import textwrap
import typing
from typing import Callable, Dict, List, Sequence, Tuple

# Keep TensorFlow's C++ start-up chatter out of the tools' output unless the user asks for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags  # pylint: disable=g-import-not-at-top
from absl import logging  # pylint: disable=g-import-not-at-top

USER_ERRORS = (ValueError, OSError)

# TensorFlow's probe for a GPU at start-up, which XLA's C++ logging prints whatever
# TF_CPP_MIN_LOG_LEVEL says, e.g. on a machine with a CUDA runtime but no GPU:
# `E0000 ... cuda_platform.cc:51] failed call to cuInit: ...` (`quiet_device_probe` drops it).
CUDA_PROBE_NOISE = re.compile(r"failed call to cuInit|Could not find cuda drivers|"
                              r"cuda_diagnostics|kernel driver does not appear to be running")
# A line of TensorFlow's C++ log (absl's or TensorFlow's format; the file is C++, not a tool's .py):
# tests judge a tool's own lines without them.
TF_LOG_LINE = re.compile(r"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ |"
                         r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] )\S+\.(?:cc|h|cpp):\d+\]")


def quiet_device_probe(probe=None) -> None:
  """Runs TensorFlow's device discovery (`probe`, default: import TensorFlow and list the
  devices) with the process's stderr (file descriptor 2) captured, then writes back every
  captured line but the GPU probe's `CUDA_PROBE_NOISE`: the tools run on the CPU, and a user on a
  machine with CUDA libraries but no GPU would see that error above every tool's output."""
  import tempfile  # pylint: disable=g-import-not-at-top

  def default_probe():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.list_physical_devices()
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile(mode="w+b") as captured:
    os.dup2(captured.fileno(), 2)
    try:
      (probe or default_probe)()
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      captured.seek(0)
      kept = [line for line in captured.read().decode("utf-8", "replace").splitlines(True)
              if not CUDA_PROBE_NOISE.search(line)]
      sys.stderr.write("".join(kept))
      sys.stderr.flush()


def user_error_message(error: BaseException):
  """One line for an error caused by the user's input or machine, else None (a defect: its
  traceback is shown). `USER_ERRORS` and TensorFlow's runtime errors (a damaged checkpoint or
  record file, a missing path, memory exhausted) count; a TensorFlow error keeps only its first
  line, with its kind (e.g. `DataLossError`)."""
  if isinstance(error, USER_ERRORS):
    # Without the lines gin adds to an error raised inside a configurable ("  In call to
    # configurable 'TrainConfig' (...)"): the message itself names the parameter.
    return re.sub(r"\n\s+In (call to configurable|file) .*", "", str(error))
  tf = sys.modules.get("tensorflow")
  if tf is not None and isinstance(error, tf.errors.OpError):
    first = re.sub(r"\{\{[^}]*\}\}\s*", "", (error.message or "").strip().split("\n")[0])
    inner = re.match(r"\w*Error: (.*)", first)  # our error raised inside a tf.data function
    return inner.group(1) if inner else f"{type(error).__name__}: {first}"
  return None


HELP_ARGS = ("-h", "--help", "-help", "--helpshort", "-?")

OVERWRITE_HELP = ("Replace an existing {what} instead of refusing it before any work: the new "
                  "output is written first and the old one replaced (a directory moved aside to "
                  "<dir>.replaced-<time>) only once it is complete.")


@dataclasses.dataclass(frozen=True)
class Flag:
  """One command-line flag as `--help` and the README tables show it."""
  name: str
  kind: str  # bool, int, float, str, enum, multi (repeatable, comma lists), list (comma list)
  default: object
  help: str
  choices: Tuple[str, ...] = ()
  required: bool = False


@dataclasses.dataclass(frozen=True)
class Flags:
  """A tool's command line, the one convention of every tool: a flag per field of the dataclass
  `config` named in `help` (in that order), whose name, type and default are the field's (a
  default is written once, in the dataclass; a field without one is required). The tool's main
  reads `values()`, a `config` instance.

  Attributes:
    enums: a field's allowed values.
    required: fields that must be given (besides those without a default).
    ranges: numeric fields' valid ranges (`ranges.Range`), stated in the help and checked.
    renamed: `{old: new}`: earlier names still accepted for one release, with one deprecation
      line (both given: refused).
    aliases: `{alias: field}`: other names of a field.
    whole: repeatable fields whose every value is kept whole (not split at commas), e.g. gin
      bindings, whose values hold commas.
    notes: `{field: text()}`: the end of a field's help, computed when the flags are listed (e.g.
      read from a registry whose import is not free).
  """
  config: type
  help: Dict[str, str]
  enums: Dict[str, Sequence[str]] = dataclasses.field(default_factory=dict)
  required: Sequence[str] = ()
  ranges: Dict[str, tuple] = dataclasses.field(default_factory=dict)
  renamed: Dict[str, str] = dataclasses.field(default_factory=dict)
  aliases: Dict[str, str] = dataclasses.field(default_factory=dict)
  whole: Sequence[str] = ()
  notes: Dict[str, Callable[[], str]] = dataclasses.field(default_factory=dict)

  def flags(self) -> List[Flag]:
    """The flags, in `help`'s order."""
    from official_rtd.utils import ranges as ranges_lib  # pylint: disable=g-import-not-at-top
    fields = {f.name: f for f in dataclasses.fields(self.config)}
    out = []
    for name, text in self.help.items():
      field = fields[name]
      if field.default is not dataclasses.MISSING:
        default = field.default
      elif field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
      else:
        default = None
      if name in self.notes:
        text = f"{text}{self.notes[name]()}"
      if name in self.ranges:
        text = f"{text} ({ranges_lib.range_text(self.ranges[name])})"
      kind = "enum" if name in self.enums else _kind(field.type)
      if kind in ("multi", "list"):
        default = list(default) if default else None
      out.append(Flag(name, kind, default, text, tuple(self.enums.get(name, ())),
                      required=name in self.required or field.default is dataclasses.MISSING
                      and field.default_factory is dataclasses.MISSING))
    return out

  def define(self) -> None:
    """Defines the absl flags (once per process: a tool's `run`)."""
    definers = {"bool": flags.DEFINE_bool, "int": flags.DEFINE_integer,
                "float": flags.DEFINE_float, "str": flags.DEFINE_string,
                "multi": flags.DEFINE_multi_string, "list": flags.DEFINE_list}
    for flag in self.flags():
      if flag.kind == "enum":
        flags.DEFINE_enum(flag.name, flag.default, list(flag.choices), flag.help)
      else:
        definers[flag.kind](flag.name, flag.default, flag.help)
    for alias, name in self.aliases.items():
      flags.DEFINE_alias(alias, name)
    for old, new in self.renamed.items():
      define_renamed_flag(old, new)

  def values(self):
    """The `config` of the parsed flags, after the renamed flags' values moved to their new
    names and the required ones were checked; ranges checked."""
    from official_rtd.utils import ranges as ranges_lib  # pylint: disable=g-import-not-at-top
    given = {}
    for flag in self.flags():
      value = flags.FLAGS[flag.name].value
      if flag.required and value in (None, []):
        raise ValueError(f"--{flag.name} is required")
      if value is None:  # unset: the field's default
        continue
      if flag.name in self.whole:
        value = tuple(value)
      elif flag.kind in ("multi", "list"):
        value = tuple(split_list(value))
      given[flag.name] = value
    config = self.config(**given)
    ranges_lib.check_ranges(config, self.ranges)
    return config

  def help_text(self) -> str:
    """The flags as `--help` lists them: name, help, allowed values and default."""
    lines = []
    for flag in self.flags():
      name = f"--[no]{flag.name}" if flag.kind == "bool" else f"--{flag.name}"
      text = flag.help + (f" (one of: {', '.join(flag.choices)})" if flag.choices else "")
      lines.append(textwrap.fill(f"{name}: {text}", 96, initial_indent="  ",
                                 subsequent_indent="    "))
      note = "required" if flag.required else f"default: {shown(flag)}"
      lines.append(f"    ({note})")
    for alias, name in self.aliases.items():
      lines.append(f"  --{alias}: another name of --{name}")
    for old, new in self.renamed.items():
      lines.append(f"  --{old}: deprecated name of --{new}, accepted until the next release")
    return "\n".join(lines)


def _kind(annotation) -> str:
  """bool, int, float, str, multi (a tuple) or list from a field's type (Optional[X] is X)."""
  if typing.get_origin(annotation) is typing.Union:
    annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
  origin = typing.get_origin(annotation) or annotation
  if origin is tuple:
    return "multi"
  if origin is list:
    return "list"
  return {bool: "bool", int: "int", float: "float"}.get(annotation, "str")


def shown(flag: Flag) -> str:
  """A flag's default as `--help` and the README show it."""
  if flag.default is None:
    return "unset"
  if flag.kind == "bool":
    return str(flag.default).lower()
  if flag.kind in ("multi", "list"):
    return ",".join(flag.default)
  if flag.kind in ("str", "enum"):
    return f"'{flag.default}'"
  return f"{flag.default:g}" if isinstance(flag.default, float) else str(flag.default)


def tool_help(main, tool_name: str, spec: Flags) -> str:
  """The tool's usage (its module docstring) and its flags (`spec.help_text`)."""
  module = sys.modules[main.__module__]
  usage = textwrap.dedent(module.__doc__ or "").strip()
  sections = [f"{tool_name}: {usage}" if usage else tool_name, "flags:", spec.help_text(),
              "Absl and TensorFlow flags: --helpfull."]
  return "\n\n".join(sections) + "\n"


class Terminated(KeyboardInterrupt):
  """SIGTERM (a scheduler's or `kill`'s stop), raised like Ctrl-C so that every cleanup runs:
  temporary files and staging directories are removed and worker pools are stopped."""


class _Stopping:
  """Ctrl-C / SIGTERM: the first raises (KeyboardInterrupt / `Terminated`) so that every cleanup
  runs; a second while that cleanup runs (a checkpoint being saved) is only acknowledged, so the
  save is never cut short; a third quits at once, without cleanup."""

  def __init__(self, tool_name: str):
    self.tool_name = tool_name
    self.signals = 0

  def __call__(self, signum, frame):  # pylint: disable=unused-argument
    self.signals += 1
    if self.signals == 1:
      raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    if self.signals == 2:
      sys.stderr.write(f"{self.tool_name}: already stopping (saving what is finished); a third "
                       "signal quits at once, without cleaning up\n")
      sys.stderr.flush()
      return
    os._exit(128 + signum)  # pylint: disable=protected-access


def _exit_now(code: int) -> None:
  """Exits once the tool's own cleanup has run, without the interpreter's teardown (TensorFlow's
  input threads and the like took up to 6 s after an interrupt): streams and logs flushed."""
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)  # pylint: disable=protected-access


def run_main(main, tool_name: str, spec: Flags, probe_devices: bool = True):
  """Defines `spec`'s flags and runs `main(config)` (`spec.values()`) under `absl.app.run`;
  `--help` / `-h` prints this tool's flags (exit 0) and user errors (ValueError subclasses,
  OSError) are reported on one line. `probe_devices`: run `quiet_device_probe` before `main`
  (False: `main` calls it itself, e.g. after starting work that should overlap TensorFlow's
  import)."""
  if any(arg in HELP_ARGS for arg in sys.argv[1:]):
    sys.stdout.write(tool_help(main, tool_name, spec))
    sys.exit(0)
  spec.define()

  def wrapped(argv):
    if len(argv) > 1:
      raise app.UsageError(f"unexpected positional arguments: {' '.join(argv[1:])}")
    logging.set_verbosity(logging.INFO)
    stopping = _Stopping(tool_name)
    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    try:
      apply_renamed_flags(tool_name)
      config = spec.values()
      if probe_devices:
        quiet_device_probe()
      main(config)
    except KeyboardInterrupt as e:
      what = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
      sys.stderr.write(f"{tool_name}: {what}: finished outputs and checkpoints are kept, "
                       "unfinished files removed; the same command resumes or redoes the rest\n")
      _exit_now(128 + signal.SIGTERM if isinstance(e, Terminated) else 130)
    except Exception as e:  # pylint: disable=broad-except; only the user errors are caught
      message = user_error_message(e)
      if message is None:
        raise
      sys.stderr.write(f"{tool_name}: error: {message}\n")
      # Without the interpreter's teardown: a failed restore's status, still referenced by the
      # error, would otherwise log TensorFlow's per-value warnings (hundreds) after our line.
      _exit_now(1)

  def parse_flags(argv):
    """absl's parser, with a bad flag (unknown, misspelled, a value of the wrong type or outside
    its choices) told on one line that names it, instead of absl's two."""
    try:
      return flags.FLAGS(argv)
    except flags.Error as e:
      sys.stderr.write(f"{tool_name}: error: {e} (--help lists this tool's flags)\n")
      sys.exit(1)

  app.run(wrapped, flags_parser=parse_flags)


# `--old` -> `--new`: earlier flag names still accepted for one release (`define_renamed_flag`).
RENAMED = {}


def define_renamed_flag(old: str, new: str):
  """`--old`, the earlier name of the (already defined) `--new`, accepted for one more release:
  given alone it sets `--new` and the tool says once that it is deprecated; with `--new` too
  the command is refused."""
  target = flags.FLAGS[new]
  text = f"Deprecated name of --{new}, accepted until the next release."
  if isinstance(target, flags.BooleanFlag):
    flags.DEFINE_bool(old, None, text)
  else:  # the same parser: the value has the new flag's type
    flags.DEFINE(target.parser, old, None, text, serializer=target.serializer)
  RENAMED[old] = new


def apply_renamed_flags(tool_name: str):
  """Moves each renamed flag's value to its new name (one deprecation line on stderr)."""
  values = flags.FLAGS
  for old, new in RENAMED.items():
    if not values[old].present:
      continue
    if values[new].present:
      raise ValueError(f"--{old} is the deprecated name of --{new}: give only --{new}")
    values[new].value = values[old].value
    sys.stderr.write(f"{tool_name}: --{old} is deprecated: use --{new} (same meaning)\n")


def split_list(values):
  """Flattens a comma-list flag given once or several times."""
  out = []
  for value in values or []:
    out.extend(v for v in value.split(",") if v.strip())
  return out


def claim_output_file(path: str, overwrite: bool, flag: str = "--output_file") -> None:
  """Refuses an existing output file unless `overwrite` (then it is replaced, atomically, only
  when the new one is complete), a directory, or a path whose directory does not exist."""
  if os.path.isdir(path):
    raise ValueError(f"{flag}={path} is a directory, not a file")
  parent = os.path.dirname(os.path.abspath(path))
  below = parent
  while below != os.path.dirname(below) and not os.path.exists(below):
    below = os.path.dirname(below)
  if os.path.exists(below) and not os.path.isdir(below):
    raise ValueError(f"{flag}={path}: {below} is a file, not a directory")
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
    names = sorted(os.listdir(path))
    raise ValueError(f"{flag}={path} already holds files ({', '.join(names[:4])}"
                     f"{', ...' if len(names) > 4 else ''}): nothing was written; give a new "
                     "directory, or --overwrite to move this one aside")
  aside = f"{path.rstrip('/')}.replaced-{time.strftime('%Y%m%d-%H%M%S')}"
  os.replace(path, aside)
  logging.info("moved the existing %s aside to %s (--overwrite)", path, aside)


@contextlib.contextmanager
def staged_output_dir(path: str, overwrite: bool, flag: str = "--output_dir"):
  """Yields a staging directory beside `path` for the tool to write its whole output into; only
  when the body succeeds is `path` claimed (`claim_output_dir`: with `overwrite` the previous
  output is moved aside only now) and the staging directory renamed to it. On any failure (a
  full disk, an interrupt) the staging files are removed and `path` is left exactly as it was.
  An occupied `path` without `overwrite` is refused before the body runs."""
  import glob  # pylint: disable=g-import-not-at-top
  import shutil  # pylint: disable=g-import-not-at-top

  from official_rtd.utils import textio  # pylint: disable=g-import-not-at-top
  if overwrite:
    _check_not_a_file(path, flag)
  else:
    claim_output_dir(path, False, flag)
  staging = f"{path.rstrip('/')}.staging-{os.getpid()}"
  shutil.rmtree(staging, ignore_errors=True)
  try:
    with textio.naming_path(path):
      yield staging
    claim_output_dir(path, overwrite, flag)
    if os.path.isdir(path):  # empty: claimed as it is
      os.rmdir(path)
    os.replace(staging, path)
  except BaseException:
    for debris in glob.glob(glob.escape(staging) + "*"):  # the writers' own temporary folders too
      shutil.rmtree(debris, ignore_errors=True)
    raise


def _check_not_a_file(path: str, flag: str) -> None:
  if os.path.exists(path) and not os.path.isdir(path):
    raise ValueError(f"{flag}={path} is a file, not a directory")
