"""The shared timing of progress lines (`progress.Throttle`) on a hand-driven clock."""
from unittest import mock

import tensorflow as tf

from official_rtd.utils import progress


class ThrottleTest(tf.test.TestCase):

  def test_due_rate_and_eta_by_hand(self):
    clock = [100.0]
    with mock.patch.object(progress.time, "time", lambda: clock[0]):
      throttle = progress.Throttle(total=1000, every_seconds=10)
      clock[0] = 105.0
      self.assertFalse(throttle.due())           # 5 s since the start
      self.assertTrue(throttle.due(force=True))  # the end's line is always due
      clock[0] = 114.0
      self.assertFalse(throttle.due())           # 9 s since the forced line
      clock[0] = 115.0
      self.assertTrue(throttle.due())
      self.assertAllClose(throttle.rate(300), 300 / 15)     # units/s since the start
      self.assertEqual(throttle.eta(300), "0:00:35")        # 700 left at 20/s
      throttle.restart()                                    # e.g. after a compilation
      clock[0] = 125.0
      self.assertAllClose(throttle.rate(100), 10.0)
      self.assertEqual(throttle.eta(0), "unknown")          # nothing done yet: no rate
      self.assertEqual(progress.Throttle(10).eta(20), "0:00:00")  # past the total


if __name__ == "__main__":
  tf.test.main()
