"""Reading text and JSON inputs with errors that name the file and line (`path:line: ...`), and
writing outputs whole or not at all.

Every reader of user files goes through `numbered_lines` or `load_json`, so a byte that is not
UTF-8 or a malformed JSON value is reported where it is, never as a bare traceback. Every small
output (JSON, text lines) goes through `write_atomic`: a temporary file renamed over the target, so
a full disk or an interrupt leaves the previous file (or none), and the error names the path.
"""
import contextlib
import json
import math
import os
from typing import Any, Iterator, Tuple


class InputFileError(ValueError):
  """An input file that cannot be read as the text or JSON it should be."""


def numbered_lines(path: str, encoding: str = "utf-8") -> Iterator[Tuple[int, str]]:
  """(1-based line number, line with its newline) of a text file. `encoding="utf-8-sig"` drops a
  leading byte-order mark."""
  with open(path, "rb") as f:
    for number, raw in enumerate(f, start=1):
      try:
        yield number, raw.decode(encoding if number == 1 else "utf-8")
      except UnicodeDecodeError as e:
        raise InputFileError(f"{path}:{number}: not UTF-8 text ({e.reason} at byte {e.start} of "
                             "the line)") from None


def read_text(path: str, encoding: str = "utf-8") -> str:
  return "".join(line for _, line in numbered_lines(path, encoding))


def load_json(path: str, encoding: str = "utf-8") -> Any:
  """The JSON value of a file; errors name `path:line:column`."""
  try:
    return json.loads(read_text(path, encoding))
  except json.JSONDecodeError as e:
    raise InputFileError(f"{path}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None


def json_line(path: str, number: int, line: str) -> Any:
  """The JSON value of line `number` of a JSON-lines file."""
  try:
    return json.loads(line)
  except json.JSONDecodeError as e:
    raise InputFileError(f"{path}:{number}: not valid JSON ({e.msg} at column {e.colno})"
                         ) from None


@contextlib.contextmanager
def naming_path(path: str):
  """Re-raises an `OSError` without a file name (e.g. `[Errno 28] No space left on device` from a
  write) with `path` as its file name, so the one-line error says where."""
  try:
    yield
  except OSError as e:
    if e.filename is None and e.errno is not None:
      raise type(e)(e.errno, e.strerror or str(e), path) from None
    raise


def write_atomic(path: str, write) -> None:
  """Calls `write(file)` on a temporary file renamed to `path`; on any failure (a full disk, an
  interrupt) the temporary file is removed and `path` is left as it was."""
  tmp = f"{path}.tmp-{os.getpid()}"
  try:
    with naming_path(path):
      with open(tmp, "w", encoding="utf-8") as f:
        write(f)
      os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def umask_mode(path: str) -> None:
  """Gives `path` the mode a plain `open` would (0666 less the umask): libraries that write
  through a private temporary file (safetensors) leave 0600, unreadable to others."""
  mask = os.umask(0)
  os.umask(mask)
  os.chmod(path, 0o666 & ~mask)


def write_lines_atomic(path: str, lines) -> None:
  """Writes `lines` (each followed by a newline) to a temporary file renamed to `path`."""
  write_atomic(path, lambda f: f.write("".join(line + "\n" for line in lines)))


def write_json_atomic(path: str, obj) -> None:
  """Writes `obj` as JSON (`allow_nan=False`: NaN and infinity are refused, never written as
  invalid JSON) to a temporary file renamed to `path`."""
  try:
    text = json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n"
  except ValueError:
    raise ValueError(f"not writing {path}: {_first_non_finite(obj)} is not a finite number "
                     "(a diverged run? see the log above)") from None
  write_atomic(path, lambda f: f.write(text))


def _first_non_finite(obj, where: str = "") -> str:
  """The key path (e.g. `metrics.pearson`) of the first NaN or infinity in `obj`."""
  if isinstance(obj, float) and not math.isfinite(obj):
    return where or "the value"
  items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(
      obj, (list, tuple)) else ()
  for key, value in items:
    found = _first_non_finite(value, f"{where}.{key}" if where else str(key))
    if found:
      return found
  return ""


