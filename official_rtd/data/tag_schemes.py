"""Span tag schemes (IOB1, IOB2, BIOES) and `conlleval`'s reading of them.

A tag is `O` or `<prefix>-<type>` with prefix B, I, E or S. Spans are read with the chunk
boundary rules of the CoNLL `conlleval` script (so `I-X` after `O` or after another type starts a
span, as IOB1 requires), extended with `S-` (a one-token span) and `E-` (ends a span) so BIOES
reads right too. Conversions go through spans: `convert(tags, "bioes")` is
`tags_of(spans_of(tags), len(tags), "bioes")`.
"""
from typing import List, Sequence, Tuple

SCHEMES = ("iob1", "iob2", "bioes")
Span = Tuple[str, int, int]  # (type, first token, last token + 1)


def split_tag(tag: str) -> Tuple[str, str]:
  """`"B-PER"` -> `("B", "PER")`; `"O"` -> `("O", "")`; a tag without a known prefix is a
  type with prefix `I` (conlleval's reading of bare chunk tags)."""
  if tag == "O":
    return "O", ""
  prefix, dash, kind = tag.partition("-")
  if dash and prefix in ("B", "I", "E", "S"):
    return prefix, kind
  return "I", tag


def is_span_tag(tag: str) -> bool:
  """`O`, or a known prefix, a dash and a non-empty type (`B-PER`, `I-NP`, `S-LOC`)."""
  prefix, dash, kind = tag.partition("-")
  return tag == "O" or bool(dash and prefix in ("B", "I", "E", "S") and kind)


def _ends(prev: str, prev_type: str, prefix: str, kind: str) -> bool:
  """conlleval `endOfChunk`, plus S (always one token)."""
  if prev in ("O", ""):
    return False
  if prev in ("E", "S") or prefix in ("B", "S", "O"):
    return True
  return prev_type != kind


def _starts(prev: str, prev_type: str, prefix: str, kind: str) -> bool:
  """conlleval `startOfChunk`, plus S (always one token)."""
  if prefix == "O":
    return False
  if prefix in ("B", "S") or prev in ("O", "", "E", "S"):
    return True
  return prev_type != kind


def spans_of(tags: Sequence[str]) -> List[Span]:
  """The `(type, start, end)` spans of a tag sequence under conlleval's rules."""
  spans, start, prev, prev_type = [], None, "", ""
  for i, tag in enumerate(list(tags) + ["O"]):
    prefix, kind = split_tag(tag)
    if start is not None and _ends(prev, prev_type, prefix, kind):
      spans.append((prev_type, start, i))
      start = None
    if _starts(prev, prev_type, prefix, kind):
      start = i
    prev, prev_type = prefix, kind
  return spans


def tags_of(spans: Sequence[Span], length: int, scheme: str) -> List[str]:
  """Tags of `length` tokens holding `spans` (non-overlapping) in `scheme`."""
  if scheme not in SCHEMES:
    raise ValueError(f"tag scheme must be one of {SCHEMES}, got {scheme!r}")
  tags = ["O"] * length
  previous_end, previous_type = -1, None
  for kind, start, end in sorted(spans, key=lambda s: s[1]):
    for i in range(start, end):
      tags[i] = f"I-{kind}"
    if scheme == "iob2":
      tags[start] = f"B-{kind}"
    elif scheme == "iob1":  # B only where a span directly follows one of the same type
      if previous_end == start and previous_type == kind:
        tags[start] = f"B-{kind}"
    elif end - start == 1:
      tags[start] = f"S-{kind}"
    else:
      tags[start], tags[end - 1] = f"B-{kind}", f"E-{kind}"
    previous_end, previous_type = end, kind
  return tags


def convert(tags: Sequence[str], scheme: str) -> List[str]:
  """`tags` (any scheme conlleval reads) rewritten in `scheme`, holding the same spans."""
  return tags_of(spans_of(tags), len(tags), scheme)
