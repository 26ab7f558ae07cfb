"""One run per output directory; a failed start leaves the directory as it found it."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import gin
import tensorflow as tf

from official_rtd import runs
from official_rtd.utils import run_lock
from tests import testutil
from tests.training.test_trainer import build_records
from tests.training.test_trainer import make_records

HOLDER = """
import sys, time
from official_rtd.utils import run_lock
from official_rtd import runs
fd = run_lock.acquire(sys.argv[1], log=lambda _: None)
print("held", flush=True)
time.sleep(120)
"""


def dead_pid() -> int:
  process = subprocess.Popen([sys.executable, "-c", "pass"])
  process.wait()
  return process.pid


class RunLockTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.tmp)
    self.dir = os.path.join(self.tmp, "run")

  def hold_in_another_process(self):
    os.makedirs(self.dir, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-c", HOLDER, self.dir], cwd=testutil.REPO,
                               stdout=subprocess.PIPE, text=True)
    self.addCleanup(process.wait)
    self.addCleanup(process.kill)
    self.assertEqual(process.stdout.readline().strip(), "held")
    return process

  def test_a_second_run_is_refused_naming_the_holder(self):
    holder = self.hold_in_another_process()
    before = testutil.md5_tree(self.dir)
    with self.assertRaisesRegex(
        run_lock.DirectoryLockedError,
        rf"--model_dir={self.dir} is in use by another run \(pid {holder.pid} on "
        rf"{socket.gethostname()}, since .*\); wait for it to end or give another --model_dir"):
      with run_lock.holding(self.dir, log=lambda _: None):
        self.fail("the body must not run")
    self.assertEqual(testutil.md5_tree(self.dir), before)  # the holder's lock file untouched

  def test_a_dead_runs_lock_is_taken_over_with_a_note(self):
    os.makedirs(self.dir)
    with open(os.path.join(self.dir, run_lock.LOCK_NAME), "w") as f:
      json.dump({"pid": dead_pid(), "host": socket.gethostname(), "started": "earlier"}, f)
    notes = []
    with run_lock.holding(self.dir, log=notes.append):
      with open(os.path.join(self.dir, run_lock.LOCK_NAME)) as f:
        self.assertEqual(json.load(f)["pid"], os.getpid())
    self.assertLen(notes, 1)
    self.assertIn("took over the lock of a run that is no longer running", notes[0])
    self.assertFalse(os.path.exists(os.path.join(self.dir, run_lock.LOCK_NAME)))

  def test_another_hosts_lock_is_refused_naming_the_file(self):
    os.makedirs(self.dir)
    path = os.path.join(self.dir, run_lock.LOCK_NAME)
    with open(path, "w") as f:
      json.dump({"pid": 1, "host": "another-host", "started": "earlier"}, f)
    with self.assertRaisesRegex(run_lock.DirectoryLockedError,
                                f"locked by a run on another machine .*delete {path}"):
      with run_lock.holding(self.dir, log=lambda _: None):
        pass

  def test_a_failed_start_leaves_the_directory_as_found(self):
    with self.assertRaises(RuntimeError):  # a new directory: absent again
      with run_lock.holding(self.dir, keep=lambda d: False):
        os.makedirs(os.path.join(self.dir, "trial_0"))
        open(os.path.join(self.dir, "run_fingerprint.json"), "w").close()
        raise RuntimeError("the export is truncated")
    self.assertFalse(os.path.exists(self.dir))
    os.makedirs(self.dir)
    testutil.write_text(os.path.join(self.dir, "notes.txt"), "the user's own file\n")
    before = testutil.md5_tree(self.dir)
    with self.assertRaises(RuntimeError):  # an existing directory: byte-identical
      with run_lock.holding(self.dir, keep=lambda d: False):
        testutil.write_text(os.path.join(self.dir, "operative_config.gin"), "x = 1\n")
        raise RuntimeError("records of another vocabulary")
    self.assertEqual(testutil.md5_tree(self.dir), before)
    with self.assertRaises(KeyboardInterrupt):  # progress worth keeping is kept
      with run_lock.holding(self.dir, keep=lambda d: True):
        testutil.write_text(os.path.join(self.dir, "ckpt-2.index"), "x")
        raise KeyboardInterrupt()
    self.assertIn("ckpt-2.index", os.listdir(self.dir))
    self.assertNotIn(run_lock.LOCK_NAME, os.listdir(self.dir))

  def test_data_preparation_and_pretraining_take_the_lock(self):
    records = make_records(os.path.join(self.tmp, "records"), paragraphs=40)
    self.hold_in_another_process()
    before = testutil.md5_tree(self.dir)
    with self.assertRaisesRegex(run_lock.DirectoryLockedError,
                                rf"--output_dir={self.dir} is in use by another run"):
      build_records(self.dir, paragraphs=40)
    try:
      with self.assertRaisesRegex(run_lock.DirectoryLockedError,
                                  rf"--model_dir={self.dir} is in use by another run"):
        runs.run_pretraining(["gin/models/tiny.gin", "gin/tasks/mlm.gin"],
                             ["TrainConfig.num_train_steps = 2"], records, self.dir,
                             log=lambda _: None)
    finally:
      gin.clear_config()
    self.assertEqual(testutil.md5_tree(self.dir), before)

if __name__ == "__main__":
  tf.test.main()
