"""Valid ranges of numeric settings, checked before any work starts and stated in `--help`.

A range is `(lowest, highest, whether the lowest is allowed)`, optionally with a fourth item,
whether the highest is allowed (default True); `highest` None is unbounded. A value of None means
"unset" (a default resolved later) and is not checked.
"""
import numbers
from typing import Dict, Tuple

Range = Tuple  # (lowest, highest, lowest allowed[, highest allowed])


def range_text(valid: Range) -> str:
  """E.g. `>= 1`, `> 0`, `in (0, 1]` or `in [0, 1)`."""
  low, high, inclusive = valid[:3]
  if high is None:
    return f"{'>=' if inclusive else '>'} {low}"
  high_inclusive = valid[3] if len(valid) > 3 else True
  return f"in {'[' if inclusive else '('}{low}, {high}{']' if high_inclusive else ')'}"


def check_ranges(config, ranges: Dict[str, Range], setting: str = "--{name}={value}") -> None:
  """Raises ValueError naming the first setting of `config` outside its range (or not a number),
  written as `setting` (a flag `--{name}={value}`, or a gin binding `TrainConfig.{name} =
  {value}`)."""
  for name, valid in ranges.items():
    low, high, inclusive = valid[:3]
    high_inclusive = valid[3] if len(valid) > 3 else True
    value = getattr(config, name, None)
    if value is None:
      continue
    if not isinstance(value, numbers.Real):  # e.g. a gin binding of a string
      raise ValueError(f"{setting.format(name=name, value=repr(value))} must be a number "
                       f"{range_text(valid)}")
    if ((value < low if inclusive else value <= low)
        or (high is not None and (value > high if high_inclusive else value >= high))):
      raise ValueError(f"{setting.format(name=name, value=value)} must be {range_text(valid)}")
