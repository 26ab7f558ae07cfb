"""Range checks name the setting, its value and the valid range, in the caller's spelling."""
import dataclasses
from typing import Optional

import tensorflow as tf

from official_rtd.utils import ranges


@dataclasses.dataclass
class Settings:
  steps: int = 1
  rate: Optional[float] = None
  share: float = 0.5


RANGES = {"steps": (1, None, True), "rate": (0, None, False), "share": (0, 1, False)}


class RangesTest(tf.test.TestCase):

  def test_texts(self):
    self.assertEqual(ranges.range_text((1, None, True)), ">= 1")
    self.assertEqual(ranges.range_text((0, None, False)), "> 0")
    self.assertEqual(ranges.range_text((0, 1, False)), "in (0, 1]")

  def test_bounds_and_unset_values(self):
    ranges.check_ranges(Settings(steps=1, rate=None, share=1.0), RANGES)  # bounds allowed
    for settings, message in ((Settings(steps=0), "--steps=0 must be >= 1"),
                              (Settings(rate=0.0), "--rate=0.0 must be > 0"),
                              (Settings(share=0.0), r"--share=0.0 must be in \(0, 1\]"),
                              (Settings(share=1.5), r"--share=1.5 must be in \(0, 1\]")):
      with self.assertRaisesRegex(ValueError, message):
        ranges.check_ranges(settings, RANGES)

  def test_gin_spelling(self):
    with self.assertRaisesRegex(ValueError, r"^Train.steps = -2 must be >= 1$"):
      ranges.check_ranges(Settings(steps=-2), RANGES, "Train.{name} = {value}")
    # A gin binding of a string where a number is meant: our line, not a TypeError traceback.
    with self.assertRaisesRegex(ValueError, r"^Train.steps = 'ten' must be a number >= 1$"):
      ranges.check_ranges(Settings(steps="ten"), RANGES, "Train.{name} = {value}")


if __name__ == "__main__":
  tf.test.main()
