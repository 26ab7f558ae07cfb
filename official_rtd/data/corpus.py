"""Streaming reader for BERT/ELECTRA-format corpora, in independent work units.

Format: one sentence or paragraph per line, a blank (or whitespace-only) line between documents;
the end of a file also ends a document.

Each file is cut into byte ranges of `chunk_bytes` (`TextRange`). A document belongs to the range
holding the blank line just before it (the file's first document to the first range), and the
range's reader reads it whole, past the range's end if need be. So every document is read by
exactly one unit, never split, and a unit can be read by itself (after one seek) on any worker, in
any order: the local tool and the Beam pipeline cut the same units and produce the same chunks.
"""
import dataclasses
from typing import Callable, Iterator, List, Optional, Sequence

from official_rtd.data import paths

DOCUMENT_BREAK = ""  # the line value that ends a document inside a chunk
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
    matches = paths.glob(pattern) if paths.has_magic(pattern) else [pattern]
    if not matches:
      raise CorpusError(f"input pattern {pattern!r} matches no file")
    for path in matches:
      if not paths.isfile(path):
        raise CorpusError(f"input file {path} does not exist or is not a regular file")
      files.append(path)
  if not files:
    raise CorpusError("no input files given")
  return files


@dataclasses.dataclass
class Chunk:
  """The whole documents of one work unit, each followed by a `DOCUMENT_BREAK`.

  `key` names the unit ("<file index>:<range index>" for text); random states derive from it.
  """
  key: str
  lines: List[str]
  num_bytes: int = 0        # bytes of the text lines kept
  documents: int = 0
  lines_skipped: int = 0    # undecodable lines skipped (`on_decode_error='skip'`)


class _LineNumbers:
  """1-based line numbers of byte offsets in one file, counted only when an error needs one."""

  def __init__(self, path: str):
    self.path, self._offset, self._line = path, 0, 1

  def at(self, offset: int) -> int:
    if offset < self._offset:
      self._offset, self._line = 0, 1
    with paths.open_binary(self.path) as f:
      f.seek(self._offset)
      remaining = offset - self._offset
      while remaining > 0:
        block = f.read(min(remaining, 1 << 20))
        if not block:
          break
        self._line += block.count(b"\n")
        remaining -= len(block)
    self._offset = offset
    return self._line


def _decode(raw: bytes) -> str:
  line = raw.decode("utf-8").strip()
  return line[1:].strip() if line.startswith("\ufeff") else line


def _is_blank(raw: bytes) -> bool:
  try:
    return not _decode(raw)
  except UnicodeDecodeError:
    return False


@dataclasses.dataclass(frozen=True)
class TextRange:
  """Bytes [start, end) of one text file: the unit of work (picklable, for Beam workers).

  Ownership: a document of at most `max_document_bytes` belongs whole to the range where it
  starts; a longer one is cut between lines at range boundaries, each piece belonging to the range
  where its first line starts (the packer sees each piece as a document). A reader decides this
  from at most `max_document_bytes` of text around its range, so units are independent.
  """
  key: str
  path: str
  start: int
  end: int
  max_document_bytes: int

  @property
  def size(self) -> int:
    return self.end - self.start

  def _begun_before(self, f, position: int) -> Optional[bool]:
    """For the line at `position` (a line start): None if it does not continue a document begun
    before it; else whether that document is longer than `max_document_bytes`."""
    cap = self.max_document_bytes
    low = max(0, position - cap - 1)
    while low > 0:  # back to a line start, so every line in the block is whole
      f.seek(max(0, low - 4096))
      block = f.read(low - max(0, low - 4096))
      cut = block.rfind(b"\n")
      if cut >= 0:
        low = max(0, low - 4096) + cut + 1
        break
      low = max(0, low - 4096)
    f.seek(low)
    before = f.read(position - low).split(b"\n")[:-1]  # whole lines, newlines dropped
    if not before or _is_blank(before[-1]):
      return None  # a document starts here (or a blank line does)
    document_start = None
    offset = position
    for raw in reversed(before):
      offset -= len(raw) + 1
      if _is_blank(raw):
        document_start = offset + len(raw) + 1
        break
    if document_start is None:
      if low > 0:
        return True
      document_start = 0
    f.seek(position)
    end = position
    for raw in iter(f.readline, b""):
      if _is_blank(raw):
        break
      end += len(raw)
      if end - document_start > cap:
        return True
    return False

  def read(self, on_decode_error: str = "fail", warn: Callable[[str], None] = print) -> Chunk:
    """Reads the documents (and pieces of long ones) this range owns.

    Raises:
      CorpusError: `file:line` of an undecodable line when `on_decode_error='fail'`.
    """
    chunk = Chunk(self.key, [])
    numbers = _LineNumbers(self.path)
    with paths.open_binary(self.path) as f:
      position = self.start
      if self.start > 0:  # align on the first line that starts at or after `start`
        f.seek(self.start - 1)
        position += len(f.readline()) - 1
      long_before = self._begun_before(f, position) if position > 0 else None
      skipping = long_before is False  # the rest of a short document owned by an earlier range
      # The current document: [(line start, text or None if undecodable, bytes)].
      document, document_start, is_piece, is_long = [], None, bool(long_before), bool(long_before)
      if is_piece:
        document_start = position

      def flush():
        nonlocal document, document_start, is_piece, is_long
        texts = [(t, n) for _, t, n in document if t is not None]
        chunk.lines_skipped += len(document) - len(texts)
        if texts:
          chunk.lines += [t for t, _ in texts] + [DOCUMENT_BREAK]
          chunk.num_bytes += sum(n for _, n in texts)
          chunk.documents += int(not is_piece)
        document, document_start, is_piece, is_long = [], None, False, False

      f.seek(position)
      for raw in iter(f.readline, b""):
        line_start, position = position, position + len(raw)
        try:
          text = _decode(raw)
        except UnicodeDecodeError as e:
          if (skipping or (line_start >= self.end and (document_start is None or is_long))):
            text = "<undecodable>"  # not ours: the owner reports it
          else:
            where = f"{self.path}:{numbers.at(line_start)}"
            if on_decode_error == "fail":
              raise CorpusError(f"{where}: invalid UTF-8 at byte {e.start} of the line "
                                "(use --on_decode_error=skip to skip such lines)") from None
            warn(f"{where}: skipping a line that is not valid UTF-8")
            text = None
        if not text and text is not None:  # a blank line ends a document
          skipping = False
          if document_start is not None:
            flush()
          if line_start >= self.end:
            break
          continue
        if skipping:
          continue
        if document_start is None:
          if line_start >= self.end:
            break  # the next range's document
          document_start = line_start
        if is_long and line_start >= self.end:
          break  # the next range's piece
        document.append((line_start, text, len(raw)))
        if not is_long and position - document_start > self.max_document_bytes:
          is_long = True  # cut at our end: later lines are the next ranges' pieces
          document = [d for d in document if d[0] < self.end]
          if line_start >= self.end:
            break
      if document_start is not None:
        flush()
    return chunk


def plan_text_units(files: Sequence[str], chunk_bytes: int) -> List[TextRange]:
  """Cuts each file into `chunk_bytes` ranges (an empty file gives none); documents longer than
  `chunk_bytes` are cut at range boundaries."""
  if chunk_bytes < 1:
    raise ValueError(f"chunk_bytes={chunk_bytes} must be >= 1")
  units = []
  for file_index, path in enumerate(files):
    size = paths.getsize(path)
    for range_index, start in enumerate(range(0, size, chunk_bytes)):
      units.append(TextRange(f"{file_index}:{range_index}", path, start,
                             min(start + chunk_bytes, size), chunk_bytes))
  return units


def read_chunks(files: Sequence[str], chunk_bytes: int, on_decode_error: str = "fail",
                warn: Callable[[str], None] = print) -> Iterator[Chunk]:
  """Yields the chunks of `files` in order, streaming (one unit's text in memory at a time)."""
  if on_decode_error not in DECODE_ERROR_POLICIES:
    raise ValueError(f"on_decode_error must be one of {DECODE_ERROR_POLICIES}")
  for unit in plan_text_units(files, chunk_bytes):
    yield unit.read(on_decode_error, warn)
