"""Reading text and JSON inputs with errors that name the file and line (`path:line: ...`).

Every reader of user files goes through `numbered_lines` or `load_json`, so a byte that is not
UTF-8 or a malformed JSON value is reported where it is, never as a bare traceback.
"""
import json
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
