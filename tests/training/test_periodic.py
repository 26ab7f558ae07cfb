"""Periodic actions: when each is due, checked against a brute-force walk over the steps."""
import tensorflow as tf

from official_rtd.training import periodic


class PeriodicTest(tf.test.TestCase):

  def test_the_loop_stops_exactly_at_every_due_step(self):
    ran = []
    actions = [
        periodic.PeriodicAction("a", lambda s: ran.append(("a", s)), periods=(4, 0, 6)),
        periodic.PeriodicAction("b", lambda s: ran.append(("b", s)), at_steps=(7, 2),
                                at_end=False),
        periodic.PeriodicAction("c", lambda s: ran.append(("c", s)), periods=(5,),
                                skip={10}.__contains__)]
    last, step, stops = 17, 0, []
    while step < last:
      step += periodic.steps_to_next(actions, step, last)
      stops.append(step)
      periodic.run_due(actions, step, last)
    # Brute force: every step of 1..17, what is due there.
    expected = []
    for s in range(1, last + 1):
      expected += [("a", s)] if s % 4 == 0 or s % 6 == 0 or s == last else []
      expected += [("b", s)] if s in (2, 7) else []
      expected += [("c", s)] if (s % 5 == 0 or s == last) and s != 10 else []
    self.assertEqual(ran, expected)
    self.assertEqual(stops, [2, 4, 5, 6, 7, 8, 10, 12, 15, 16, 17])

  def test_negative_period_refused(self):
    with self.assertRaisesRegex(ValueError, "'x'.*must be >= 0"):
      periodic.PeriodicAction("x", print, periods=(-1,))


if __name__ == "__main__":
  tf.test.main()
