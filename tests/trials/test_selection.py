"""Dev selection and patience of a trial, followed by hand over a scripted curve, and kept across
a resume (and an evaluation a resumed trial repeats replaces the one it had recorded)."""
import os
import tempfile

import tensorflow as tf

from official_rtd.trials import selection


class DevSelectionTest(tf.test.TestCase):

  def test_best_patience_and_resume_by_hand(self):
    path = os.path.join(tempfile.mkdtemp(), "selection.json")
    chosen = selection.DevSelection(path, patience=2)
    scripted = [(250, 0.5, True), (500, 0.7, True), (750, 0.6, False), (1000, 0.7, False)]
    for step, score, new_best in scripted:
      self.assertEqual(chosen.record(step, {"f1": score}, score), new_best, step)
    self.assertEqual(chosen.best, {"step": 500, "score": 0.7, "dev": {"f1": 0.7}})
    self.assertEqual(chosen.since_best(), 2)  # a tie is not a new best
    self.assertTrue(chosen.exhausted())
    # A process killed after step 1000 resumes from the checkpoint at 750: the file holds the
    # whole curve, the resumed trial forgets what came after its checkpoint.
    resumed = selection.DevSelection(path, patience=2)
    self.assertEqual([p["step"] for p in resumed.curve], [250, 500, 750, 1000])
    resumed.resume_at(750)
    self.assertEqual([p["step"] for p in resumed.curve], [250, 500, 750])
    self.assertFalse(resumed.exhausted())
    self.assertFalse(resumed.record(1000, {"f1": 0.65}, 0.65))
    self.assertTrue(resumed.exhausted())
    self.assertFalse(selection.DevSelection(path, patience=0).exhausted())  # 0: never stops
    # Without resume_at (fine-tuning, whose step loop restores inside `trial_steps.train`), an
    # evaluation repeated after a restart replaces the recorded one and those after it.
    again = selection.DevSelection(path)
    again.record(750, {"f1": 0.5}, 0.5)
    self.assertEqual([(p["step"], p["f1"]) for p in again.curve],
                     [(250, 0.5), (500, 0.7), (750, 0.5)])

  def test_a_new_file_has_no_best(self):
    chosen = selection.DevSelection(os.path.join(tempfile.mkdtemp(), "s.json"), patience=1)
    self.assertIsNone(chosen.best)
    self.assertEqual(chosen.since_best(), 0)
    self.assertFalse(chosen.exhausted())


if __name__ == "__main__":
  tf.test.main()
