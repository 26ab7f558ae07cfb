"""A full disk (a real 200 KB tmpfs): every tool names the path, removes its partial files and
leaves earlier outputs byte-identical."""
import errno
import os
import re
import shutil
import subprocess
import tempfile

import gin
import tensorflow as tf

from official_rtd.tools import export_model
from official_rtd import runs
from official_rtd.data import build_vocab
from official_rtd.utils import textio
from tests import testutil
from tests.training.test_trainer import build_records
from tests.training.test_trainer import make_records


def mount_small_tmpfs(test, size="200k") -> str:
  """A fresh tmpfs of `size` (unmounted at cleanup); skips where mounting is not allowed."""
  point = tempfile.mkdtemp()
  result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", point],
                          capture_output=True, text=True)
  if result.returncode:
    os.rmdir(point)
    test.skipTest(f"cannot mount a tmpfs here ({result.stderr.strip() or 'not root'}); the "
                  "disk-full cases need one")
  test.addCleanup(os.rmdir, point)
  test.addCleanup(subprocess.run, ["umount", point])
  return point


def fill(point: str, leave_bytes: int) -> None:
  """Writes a filler file so that about `leave_bytes` stay free."""
  stat = os.statvfs(point)
  free = stat.f_bavail * stat.f_frsize
  with open(os.path.join(point, "filler"), "wb") as f:
    f.write(b"\0" * max(free - leave_bytes, 0))


class DiskFullTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.run_dir = os.path.join(cls.tmp, "pretrain")
    try:
      runs.run_pretraining(["gin/models/tiny.gin", "gin/tasks/electra.gin"],
                           ["TrainConfig.num_train_steps = 2", "TrainConfig.train_batch_size = 8"],
                           make_records(os.path.join(cls.tmp, "records"), paragraphs=60),
                           cls.run_dir, log=lambda _: None)
    finally:
      gin.clear_config()
    cls.export = os.path.join(cls.run_dir, "export")

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.tmp, ignore_errors=True)
    super().tearDownClass()

  def test_export_model_overwrite_keeps_the_previous_export(self):
    disk = mount_small_tmpfs(self)
    out = os.path.join(disk, "hf")
    os.makedirs(os.path.join(out, "discriminator"))
    testutil.write_text(os.path.join(out, "discriminator", "config.json"), '{"previous": 1}\n')
    before = testutil.md5_tree(out)
    with self.assertRaises(OSError) as raised:
      export_model.main(export_model.ExportModelConfig(
          run_dir=self.run_dir, output_dir=out, overwrite=True))
    self.assertEqual(raised.exception.errno, errno.ENOSPC)
    self.assertIn(disk, str(raised.exception))  # the one line names where
    self.assertEqual(testutil.md5_tree(out), before)
    self.assertEqual(sorted(os.listdir(disk)), ["hf"])  # no staging or .replaced- folder left

  def test_build_vocab_names_the_output_file(self):
    disk = mount_small_tmpfs(self)
    output = os.path.join(disk, "vocab.txt")
    testutil.write_text(output, "[PAD]\n")
    fill(disk, 0)
    before = testutil.md5_tree(output)
    corpus = os.path.join(self.tmp, "corpus.txt")
    testutil.write_text(corpus, "\n".join(testutil.sample_paragraphs(200)) + "\n")
    with self.assertRaises(OSError) as raised:
      build_vocab.build_vocab([corpus], output, vocab_size=500, log=lambda _: None)
    self.assertEqual(raised.exception.errno, errno.ENOSPC)
    self.assertEqual(raised.exception.filename, output)
    self.assertEqual(testutil.md5_tree(output), before)
    self.assertEqual(sorted(os.listdir(disk)), ["filler", "vocab.txt"])

  def test_small_outputs_name_the_path_and_keep_the_old_file(self):
    # What score_pll, score_pairs, run_probes and every results file write through.
    disk = mount_small_tmpfs(self)
    output = os.path.join(disk, "scores.tsv")
    testutil.write_text(output, "old\tscores\n")
    fill(disk, 0)
    with self.assertRaises(OSError) as raised:
      textio.write_lines_atomic(output, ["a\tb"] * 20000)
    self.assertEqual(raised.exception.errno, errno.ENOSPC)
    self.assertEqual(raised.exception.filename, output)
    self.assertEqual(open(output).read(), "old\tscores\n")
    self.assertEqual(sorted(os.listdir(disk)), ["filler", "scores.tsv"])  # no .tmp-<pid> left

  def test_create_pretraining_data_removes_its_staging_folder(self):
    disk = mount_small_tmpfs(self, size="300k")
    out = os.path.join(disk, "records")
    build_records(out, paragraphs=10)  # an earlier, complete output
    before = testutil.md5_tree(out)
    with self.assertRaises(OSError) as raised:
      build_records(out, paragraphs=600)
    self.assertEqual(raised.exception.errno, errno.ENOSPC)
    self.assertIn(out, str(raised.exception))
    self.assertEqual(testutil.md5_tree(out), before)  # no .tmp-<pid>/ with partial shards

  def test_beam_reports_the_first_cause_once(self):
    disk = mount_small_tmpfs(self, size="300k")
    out = os.path.join(disk, "records")
    corpus = testutil.write_text(os.path.join(self.tmp, "beam_corpus.txt"),
                                 "\n".join(testutil.sample_paragraphs(600)) + "\n")
    result = subprocess.run(
        ["create_pretraining_data", f"--input_files={corpus}", f"--output_dir={out}",
         f"--vocab_file={testutil.SAMPLE_VOCAB}", "--runner=DirectRunner",
         "--max_seq_length=64", "--dupe_factor=4"],  # a worker process per core: they printed
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,  # 2 tracebacks
        env={**os.environ, "TMPDIR": self.tmp})
    self.assertEqual(result.returncode, 1, result.stderr[-3000:])
    last = result.stderr.strip().splitlines()[-1]
    found = re.match(rf"^create_pretraining_data: error: \[Errno 28\] No space left on device \(a "
                     rf"Beam worker; its output: ({self.tmp}/create_pretraining_data_workers_\S+\.log)"
                     rf"\): '{out}/", last)
    self.assertTrue(found, last)
    self.assertNotIn("Traceback", result.stderr)  # the workers' are in their log
    with open(found.group(1), encoding="utf-8") as f:
      self.assertIn("No space left on device", f.read())
    self.assertEqual(os.listdir(disk), [])  # no staging folder: as it was found

  def test_fine_tuning_removes_a_partial_checkpoint(self):
    disk = mount_small_tmpfs(self, size="400k")
    model_dir = os.path.join(disk, "rte")
    from official_rtd.finetune import runner as runner_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.finetune.glue import task as glue  # pylint: disable=g-import-not-at-top
    glue_dir = os.path.join(testutil.SHARED_DATA, "glue", "RTE")
    reason = testutil.missing_data_reason(glue_dir)
    if reason:
      self.skipTest(reason)
    with self.assertRaises(OSError) as raised:
      runner_lib.Runner(glue.GlueConfig(
          task="rte", init_checkpoint=self.export, model_dir=model_dir, data_dir=glue_dir,
          max_seq_length=64, max_train_examples=64, num_train_epochs=1, train_batch_size=16,
          save_checkpoints_steps=1), log=lambda _: None).run()
    self.assertEqual(raised.exception.errno, errno.ENOSPC)
    self.assertIn(model_dir, str(raised.exception))
    self.assertIn("no space left on the disk holding", str(raised.exception))
    self.assertNotIn("function_node", str(raised.exception))
    self.assertEqual(os.listdir(disk), [])  # no ckpt-1_temp/, no fingerprint: as it was found


if __name__ == "__main__":
  tf.test.main()
