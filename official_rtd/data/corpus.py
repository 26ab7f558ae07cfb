"""Streaming reader for BERT/ELECTRA-format corpora.

Format: one sentence or paragraph per line, a blank line between documents; the end of a file also
ends a document. The reader never holds more than one chunk of text in memory.
"""
import dataclasses
import glob
import os
from typing import Iterator, List, Sequence

DOCUMENT_BREAK = ""  # the line value that marks a document boundary inside a chunk
DECODE_ERROR_POLICIES = ("fail", "skip")


class CorpusError(ValueError):
  """Unusable input text (missing files, undecodable bytes)."""


def expand_input_files(patterns: Sequence[str]) -> List[str]:
  """Expands comma lists / globs, in the given order (each glob sorted); raises on no match."""
  files = []
  for pattern in patterns:
    pattern = pattern.strip()
    if not pattern:
      continue
    matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    if not matches:
      raise CorpusError(f"input pattern {pattern!r} matches no file")
    for path in matches:
      if not os.path.isfile(path):
        raise CorpusError(f"input file {path} does not exist or is not a regular file")
      files.append(path)
  if not files:
    raise CorpusError("no input files given")
  return files


@dataclasses.dataclass
class Chunk:
  """A run of lines; `DOCUMENT_BREAK` entries separate documents. Chunks are cut only at line
  boundaries, so a document can span chunks (the packer starts a new example at a chunk start)."""
  index: int
  lines: List[str]
  num_bytes: int


@dataclasses.dataclass
class ReadStats:
  bytes_read: int = 0
  lines_skipped: int = 0
  documents: int = 0


def read_chunks(files: Sequence[str], chunk_bytes: int, on_decode_error: str = "fail",
                stats: ReadStats = None, warn=print) -> Iterator[Chunk]:
  """Yields `Chunk`s of about `chunk_bytes` bytes of text, streaming.

  Raises:
    CorpusError: `file:line` of the first undecodable line when `on_decode_error='fail'`.
  """
  if on_decode_error not in DECODE_ERROR_POLICIES:
    raise ValueError(f"on_decode_error must be one of {DECODE_ERROR_POLICIES}")
  stats = stats if stats is not None else ReadStats()
  lines, size, index = [], 0, 0
  in_document = False
  for path in files:
    with open(path, "rb") as f:
      for line_number, raw in enumerate(f, start=1):
        stats.bytes_read += len(raw)
        try:
          line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
          if on_decode_error == "fail":
            raise CorpusError(
                f"{path}:{line_number}: invalid UTF-8 at byte {e.start} of the line "
                f"(use --on_decode_error=skip to skip such lines)") from None
          warn(f"{path}:{line_number}: skipping a line that is not valid UTF-8")
          stats.lines_skipped += 1
          continue
        if line.startswith("\ufeff"):
          line = line[1:].strip()
        lines.append(line)
        size += len(raw)
        stats.documents += int(in_document and not line)
        in_document = bool(line)
        if size >= chunk_bytes:
          yield Chunk(index, lines, size)
          lines, size, index = [], 0, index + 1
    lines.append(DOCUMENT_BREAK)
    stats.documents += int(in_document)
    in_document = False
  if any(lines):
    yield Chunk(index, lines, size)
