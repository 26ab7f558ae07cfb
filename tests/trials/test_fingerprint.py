"""Run fingerprints: a setting added in a later version resumes a directory that never recorded
it, at its default only."""
import glob
import os
import shutil
import tempfile

import tensorflow as tf

from official_rtd.finetune import configs
from official_rtd.interop import export
from official_rtd.trials import fingerprint
from official_rtd.utils import run_lock
from tests import testutil
from tests.training.test_trainer import tiny_export


class FingerprintTest(tf.test.TestCase):

  def test_a_setting_added_later_counts_as_its_default(self):
    config = configs.MultipleChoiceConfig(init_checkpoint="", model_dir="", data_dir="")
    new = fingerprint.fingerprint("MultipleChoiceRunner", config)
    old = {"tool": "MultipleChoiceRunner", "inputs": {},
           "settings": {k: v for k, v in new["settings"].items() if k != "protocol"}}
    defaults = fingerprint.field_defaults(config)
    self.assertEqual(defaults["protocol"], "electra")
    self.assertEqual(fingerprint.differences(old, new, defaults), [])
    self.assertEqual(fingerprint.differences(old, new), ["--protocol None → 'electra'"])
    shao = fingerprint.fingerprint("MultipleChoiceRunner", configs.MultipleChoiceConfig(
        init_checkpoint="", model_dir="", data_dir="", protocol="shao"))
    self.assertEqual(fingerprint.differences(old, shao, defaults),
                     ["--protocol 'electra' → 'shao'"])


  def test_a_renamed_setting_resumes_under_its_new_name(self):
    new = {"tool": "CvtRunner", "inputs": {}, "settings": {"train_batch_size": 64, "seed": 0}}
    old = {"tool": "CvtRunner", "inputs": {}, "settings": {"batch_size": 64, "seed": 0}}
    self.assertEqual(fingerprint.differences(old, new), [])
    old["settings"]["batch_size"] = 32
    self.assertEqual(fingerprint.differences(old, new), ["--train_batch_size 32 → 64"])


  def test_an_extendable_budget_may_grow_and_is_recorded(self):
    model_dir = tempfile.mkdtemp()
    run = {"tool": "CvtRunner", "inputs": {}, "settings": {"train_steps": 8, "seed": 0}}
    self.assertFalse(fingerprint.check_or_record(model_dir, run, extendable=("train_steps",)))
    longer = {**run, "settings": {"train_steps": 16, "seed": 0}}
    self.assertTrue(fingerprint.check_or_record(model_dir, longer, extendable=("train_steps",)))
    self.assertEqual(fingerprint.recorded_settings(model_dir)["train_steps"], 16)
    with self.assertRaisesRegex(fingerprint.RunMismatchError, r"--train_steps 16 → 8 \(a run's "
                                r"budget can be raised, not lowered\)"):
      fingerprint.check_or_record(model_dir, run, extendable=("train_steps",))
    with self.assertRaisesRegex(fingerprint.RunMismatchError, r"--train_steps 16 → 32\)"):
      fingerprint.check_or_record(model_dir, {**run, "settings": {"train_steps": 32, "seed": 0}})
    self.assertEqual(fingerprint.recorded_settings(model_dir)["train_steps"], 16)

  def test_a_folder_named_like_a_setting_is_not_an_input(self):
    """Issue 70: `--task=rte --model_dir=rte/x` (and run_cvt's `--mode=cvt` beside a `cvt/`
    folder) resumes; only declared inputs are digested, and a changed one is still refused."""
    from official_rtd.cvt import runner  # pylint: disable=g-import-not-at-top
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    self.addCleanup(os.chdir, os.getcwd())
    os.chdir(tmp)
    os.makedirs(os.path.join(tmp, "data"))
    data = testutil.write_text(os.path.join(tmp, "data", "train.tsv"), "a\tb\n")
    for tool, config, folder in (
        ("GlueRunner", configs.GlueConfig(init_checkpoint="", model_dir="rte/x", task="rte",
                                          data_dir="data"), "rte"),
        ("CvtRunner", runner.CvtRunConfig(tasks="chunk", data_dir="data", model_dir="cvt/x",
                                          mode="cvt"), "cvt")):
      model_dir = config.model_dir
      os.makedirs(model_dir)
      self.assertFalse(fingerprint.check_or_record(model_dir,
                                                   fingerprint.fingerprint(tool, config)))
      testutil.write_text(os.path.join(folder, "other_file"), "new content")  # the folder changes
      recorded = fingerprint.fingerprint(tool, config)
      self.assertEqual(sorted(recorded["inputs"]), ["data_dir"])
      self.assertTrue(fingerprint.check_or_record(model_dir, recorded))  # the same command resumes
      # A directory recorded by the earlier code (which digested the folder named by --task or
      # --mode) resumes too.
      old = dict(recorded, inputs=dict(recorded["inputs"], **{"task": "0" * 64, "mode": "1" * 64}))
      self.assertEqual(fingerprint.differences(old, recorded), [])
      testutil.write_text(data, "changed\n")  # a declared input that changed is still refused
      with self.assertRaisesRegex(fingerprint.RunMismatchError, "the content of --data_dir changed"):
        fingerprint.check_or_record(model_dir, fingerprint.fingerprint(tool, config))
      testutil.write_text(data, "a\tb\n")

  def test_runs_inside_the_data_folder_are_not_its_content(self):
    """Issue 87: a --model_dir under --data_dir resumes (its own files, written after the
    fingerprint, are not the data), and a second run beside it does not invalidate the first."""
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    testutil.write_text(os.path.join(data, "train.tsv"), "a\tb\n")
    first = configs.GlueConfig(init_checkpoint="", model_dir=os.path.join(data, "run"),
                               task="rte", data_dir=data)
    second = configs.GlueConfig(init_checkpoint="", model_dir=os.path.join(data, "runs", "b"),
                                task="rte", data_dir=data)
    os.makedirs(first.model_dir)
    testutil.write_text(os.path.join(first.model_dir, run_lock.LOCK_NAME), "")  # locked first
    self.assertFalse(fingerprint.check_or_record(
        first.model_dir, fingerprint.fingerprint("GlueRunner", first)))
    os.makedirs(os.path.join(first.model_dir, "trial_0"))
    testutil.write_text(os.path.join(first.model_dir, "trial_0", "checkpoint"), "the run's own")
    self.assertFalse(fingerprint.check_or_record(
        second.model_dir, fingerprint.fingerprint("GlueRunner", second)))
    testutil.write_text(os.path.join(second.model_dir, "results.json"), "{}")
    for config in (first, second):  # each resumes, the other's files beside it
      self.assertTrue(fingerprint.check_or_record(
          config.model_dir, fingerprint.fingerprint("GlueRunner", config)))
    testutil.write_text(os.path.join(data, "dev.tsv"), "c\td\n")  # the data itself changes
    with self.assertRaisesRegex(fingerprint.RunMismatchError, "the content of --data_dir changed"):
      fingerprint.check_or_record(first.model_dir, fingerprint.fingerprint("GlueRunner", first))

  def test_a_failed_start_leaves_no_fingerprint_to_block_the_fix(self):
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    good = tiny_export(tmp)
    damaged = os.path.join(tmp, "damaged_export")
    shutil.copytree(good, damaged)
    data = glob.glob(os.path.join(damaged, "*.data-*"))[0]
    with open(data, "r+b") as f:
      f.truncate(os.path.getsize(data) // 2)
    model_dir = os.path.join(tmp, "rte")
    with self.assertRaisesRegex(export.ExportError, "are damaged: its files are truncated"):
      testutil.fine_tune_rte(self, damaged, model_dir)
    self.assertFalse(os.path.exists(model_dir))  # no run_fingerprint.json, no trial_0/
    os.makedirs(model_dir)  # an existing (empty) directory is left as it was, too
    with self.assertRaises(export.ExportError):
      testutil.fine_tune_rte(self, damaged, model_dir)
    self.assertEqual(os.listdir(model_dir), [])
    testutil.fine_tune_rte(self, good, model_dir)  # the corrected command runs
    self.assertTrue(os.path.isfile(os.path.join(model_dir, fingerprint.FILE)))


if __name__ == "__main__":
  tf.test.main()
