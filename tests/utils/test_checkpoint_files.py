"""Damaged checkpoints are named with what is wrong and the newest intact one beside them."""
import glob
import os
import shutil
import signal
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.utils import checkpoint_files
from tests import testutil


def three_checkpoints(directory):
  """ckpt-1..3 of one 64 × 64 variable (values 1, 2, 3) written by a CheckpointManager."""
  variable = tf.Variable(np.zeros([64, 64], np.float32))
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), directory, max_to_keep=5)
  for step in (1, 2, 3):
    variable.assign(np.full([64, 64], step, np.float32))
    manager.save(checkpoint_number=step)
  return variable


class CheckpointFilesTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir)
    self.variable = three_checkpoints(self.dir)
    self.prefix = os.path.join(self.dir, "ckpt-3")

  def test_intact_checkpoints_have_no_problem(self):
    self.assertEqual(checkpoint_files.latest(self.dir), self.prefix)
    self.assertEqual(checkpoint_files.existing(self.dir),
                     [os.path.join(self.dir, f"ckpt-{n}") for n in (3, 2, 1)])
    self.assertIsNone(checkpoint_files.problem(self.prefix))
    self.assertIsNone(checkpoint_files.damaged_message(self.prefix))

  def test_truncated_data_names_the_newest_intact_one(self):
    data = self.prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:
      f.truncate(os.path.getsize(data) // 2)
    with self.assertRaises(Exception):  # what TensorFlow itself says is not one clear line
      tf.train.Checkpoint(v=self.variable).restore(self.prefix).assert_consumed()
    message = checkpoint_files.damaged_message(self.prefix)
    self.assertIn("ckpt-3 is damaged: its files are truncated or corrupt", message)
    self.assertIn(f"the newest intact checkpoint is {os.path.join(self.dir, 'ckpt-2')} (step 2)",
                  message)

  def test_empty_index(self):
    open(self.prefix + ".index", "w").close()
    self.assertEqual(checkpoint_files.problem(self.prefix), "ckpt-3.index is empty")
    self.assertIn("step 2", checkpoint_files.damaged_message(self.prefix))

  def test_moved_aside_the_run_goes_on_from_the_one_before(self):
    # tf.train.latest_checkpoint gives up when the state file's latest is gone: a resume would
    # start again from step 0.
    for name in os.listdir(self.dir):
      if name.startswith("ckpt-3."):
        os.remove(os.path.join(self.dir, name))
    self.assertIsNone(tf.train.latest_checkpoint(self.dir))
    latest = checkpoint_files.latest(self.dir)
    self.assertEqual(latest, os.path.join(self.dir, "ckpt-2"))
    tf.train.Checkpoint(v=self.variable).restore(latest).assert_consumed()
    self.assertAllEqual(self.variable.numpy(), np.full([64, 64], 2.0))

  def test_none_intact(self):
    for step in (1, 2, 3):
      open(os.path.join(self.dir, f"ckpt-{step}.index"), "w").close()
    self.assertIn("no intact checkpoint is left", checkpoint_files.damaged_message(self.prefix))


class InterruptDuringSaveTest(tf.test.TestCase):
  """Ctrl-C or SIGTERM raised from inside a save (after the files are written, before the state
  file names them; and during a plain `write`) is held until the save ends, then delivered."""

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.dir)
    self.variable = tf.Variable(np.ones([64, 64], np.float32))
    self.manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=self.variable), self.dir,
                                              max_to_keep=1)
    checkpoint_files.save(self.manager, 1)

  def signal_inside(self, obj, name, signum):
    original = getattr(obj, name)

    def interrupted(*args, **kwargs):
      os.kill(os.getpid(), signum)  # Python runs the handler right after this call returns
      return original(*args, **kwargs)
    setattr(obj, name, interrupted)

  def test_sigint_in_the_middle_of_a_save(self):
    testutil.python_ctrl_c(self)
    self.signal_inside(self.manager, "_record_state", signal.SIGINT)
    with self.assertRaises(KeyboardInterrupt):  # delivered once the save is complete
      checkpoint_files.save(self.manager, 2)
    self.assertEqual(tf.train.latest_checkpoint(self.dir), os.path.join(self.dir, "ckpt-2"))
    self.assertEqual(sorted(os.path.basename(p) for p in glob.glob(self.dir + "/*")),
                     ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index"])
    self.assertIsNone(checkpoint_files.problem(os.path.join(self.dir, "ckpt-2")))
    self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

  def test_sigterm_goes_to_the_handler_installed_before(self):
    received = []
    previous = signal.signal(signal.SIGTERM, lambda number, _: received.append(number))
    self.addCleanup(signal.signal, signal.SIGTERM, previous)
    checkpoint = tf.train.Checkpoint(v=self.variable)
    self.signal_inside(checkpoint, "write", signal.SIGTERM)
    checkpoint_files.write(checkpoint, os.path.join(self.dir, "model"))
    self.assertEqual(received, [signal.SIGTERM])
    self.assertIsNone(checkpoint_files.problem(os.path.join(self.dir, "model")))


if __name__ == "__main__":
  tf.test.main()
