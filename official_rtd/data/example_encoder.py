"""Serializes many `tf.train.Example`s at once, in NumPy, byte-identical to protobuf.

`create_pretraining_data` writes hundreds of thousands of fixed-width examples; building one
protobuf object per row was over half of its time. Here every column is encoded for all rows at
once (packed varints for int64, little-endian fixed32 for floats), the few length prefixes come
from one computation per distinct length, and the pieces of every record are copied into one
buffer with vectorized ragged copies. The wire layout, with map keys sorted as protobuf's
deterministic serialization does:

  Example.features (1) > Features.feature (1, one map entry per column, by key)
    > key (1) + Feature (2) > float_list (2) | int64_list (3) > packed value (1)
"""
import functools
from typing import List, Mapping, Tuple

import numpy as np

from official_rtd.data import records

_TABLE_LIMIT = 1 << 21  # int columns below this (token ids) are encoded through a lookup table

Ragged = Tuple[np.ndarray, np.ndarray]  # (uint8 bytes of all rows, row-major; [rows] lengths)


def serialize_examples(columns: Mapping[str, np.ndarray]) -> List[bytes]:
  """Row `i` of every `[num_examples, width]` column as one serialized `tf.train.Example`.

  Columns named in `records.FLOAT_FEATURES` become float lists, the others int64 lists (which must
  be non-negative: token ids, positions, masks). Equal, byte for byte, to each row's
  `tf.train.Example(...).SerializeToString(deterministic=True)`.
  """
  names = sorted(columns)
  if not names:
    raise ValueError("no columns to serialize")
  row_counts = {len(columns[n]) for n in names}
  if len(row_counts) != 1:
    raise ValueError(f"columns have different numbers of rows: "
                     f"{ {n: len(columns[n]) for n in names} }")
  num_rows = row_counts.pop()
  pieces = []  # per column: its map-entry header, then its packed values
  for name in names:
    values = np.asarray(columns[name])
    if values.ndim != 2:
      raise ValueError(f"column {name!r} must be [num_examples, width], got shape {values.shape}")
    payload = _fixed32(values) if name in records.FLOAT_FEATURES else _varints(values, name)
    pieces += [_by_length(payload[1], lambda n, name=name: _entry_header(name, n)), payload]
  body_length = sum(lengths for _, lengths in pieces)
  pieces.insert(0, _by_length(body_length, lambda n: b"\x0a" + _varint(n)))  # Example.features

  record_length = body_length + pieces[0][1]
  ends = np.cumsum(record_length)
  out = np.empty(int(ends[-1]) if num_rows else 0, np.uint8)
  offset = ends - record_length
  for data, lengths in pieces:
    _ragged_copy(out, data, lengths, offset)
    offset = offset + lengths
  buffer = out.tobytes()
  return [buffer[s:e] for s, e in zip((ends - record_length).tolist(), ends.tolist())]


def _ragged_copy(out: np.ndarray, data: np.ndarray, lengths: np.ndarray, dest_start: np.ndarray):
  """Copies row `r`'s `lengths[r]` bytes of `data` to `out[dest_start[r]:]`."""
  src_start = np.cumsum(lengths) - lengths
  out[np.repeat(dest_start - src_start, lengths) + np.arange(len(data))] = data


def _by_length(lengths: np.ndarray, header_of) -> Ragged:
  """Per-row header bytes that depend only on a length: `header_of(n)` once per distinct `n`."""
  distinct, which = np.unique(lengths, return_inverse=True)
  headers = [header_of(int(n)) for n in distinct]
  table = np.zeros([len(headers), max(map(len, headers), default=0)], np.uint8)
  for i, header in enumerate(headers):
    table[i, :len(header)] = np.frombuffer(header, np.uint8)
  header_lengths = np.array([len(h) for h in headers], np.int64)[which]
  keep = np.arange(table.shape[1]) < header_lengths[:, np.newaxis]
  return table[which][keep], header_lengths


def _entry_header(name: str, payload_length: int) -> bytes:
  """The bytes before a column's packed values: map entry > key + Feature > list > values tag."""
  key = name.encode()
  values = (b"\x0a" + _varint(payload_length)) if payload_length else b""  # empty: no field
  list_tag = b"\x12" if name in records.FLOAT_FEATURES else b"\x1a"
  value_list = list_tag + _varint(len(values) + payload_length) + values
  entry = (b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(value_list) + payload_length)
           + value_list)
  return b"\x0a" + _varint(len(entry) + payload_length) + entry


def _varint(value: int) -> bytes:
  out = bytearray()
  while value >= 0x80:
    out.append((value & 0x7F) | 0x80)
    value >>= 7
  out.append(value)
  return bytes(out)


def _fixed32(values: np.ndarray) -> Ragged:
  data = values.astype("<f4").view(np.uint8).reshape(-1)
  return data, np.full([len(values)], 4 * values.shape[1], np.int64)


def _varints(values: np.ndarray, name: str) -> Ragged:
  """Protobuf varints of a non-negative `[rows, width]` int array."""
  rows = len(values)
  if values.size == 0:
    return np.zeros([0], np.uint8), np.zeros([rows], np.int64)
  if int(values.min()) < 0:
    raise ValueError(f"column {name!r} has negative values; only non-negative ints are encoded")
  high = int(values.max())
  if high < 0x80:  # one byte each, the value itself (masks, segment ids, short positions)
    return values.astype(np.uint8).reshape(-1), np.full([rows], values.shape[1], np.int64)
  if high < _TABLE_LIMIT:  # look every value's bytes up in a table of 0..2^k > high
    table, table_lengths = _varint_table(1 << high.bit_length())
    encoded, num_bytes = table[values], table_lengths[values]
  else:
    encoded, num_bytes = _encode_varints(values.astype(np.uint64))
  keep = np.arange(encoded.shape[-1]) < num_bytes[..., np.newaxis]
  return encoded[keep], num_bytes.sum(axis=1)


@functools.lru_cache(maxsize=None)
def _varint_table(size: int):
  """Varints of 0..size-1 (`_encode_varints`), built once per power-of-two size."""
  return _encode_varints(np.arange(size, dtype=np.uint64))


def _encode_varints(values: np.ndarray):
  """`[..., width]` uint8 varint bytes (zero padded) of uint64 `values`, and bytes used `[...]`."""
  num_bytes = np.ones(values.shape, np.int64)
  for k in range(1, 10):
    num_bytes += values >= np.uint64(1 << (7 * k))
  byte_index = np.arange(int(num_bytes.max()))
  shifts = byte_index.astype(np.uint64) * np.uint64(7)
  groups = (values[..., np.newaxis] >> shifts) & np.uint64(0x7F)
  groups |= np.where(byte_index < num_bytes[..., np.newaxis] - 1, np.uint64(0x80), np.uint64(0))
  return groups.astype(np.uint8), num_bytes
