"""run_cvt's settings: one range table for run_cvt and cvt_translate, checked where the config is
built; `--unlabeled_remainder` (the task's own left-out training sentences as unlabeled text)."""
import dataclasses
import os

import tensorflow as tf

from official_rtd.tools import cvt_translate
from official_rtd.cvt import runner
from official_rtd.cvt import settings
from official_rtd.trials import fingerprint
from tests import testutil

TAGGING = os.path.join(testutil.SHARED_DATA, "tagging")


def config(**overrides):
  return runner.CvtRunConfig(**{"tasks": "chunk", "data_dir": TAGGING, "model_dir": "",
                                **overrides})


class RangesTest(tf.test.TestCase):

  def test_every_number_is_checked_where_the_config_is_built(self):
    for name, value, message in (
        ("attention_dropout", 1.5, r"--attention_dropout=1.5 must be in \[0, 1\)"),
        ("attention_dropout", 1.0, r"--attention_dropout=1.0 must be in \[0, 1\)"),
        ("attention_dropout", -0.1, r"--attention_dropout=-0.1 must be in \[0, 1\)"),
        ("beam_size", 0, r"--beam_size=0 must be >= 1"),
        ("max_decode_length", 0, r"--max_decode_length=0 must be >= 1"),
        ("learning_rate", -0.5, r"--learning_rate=-0.5 must be >= 0"),
        ("train_fraction", 0.0, r"--train_fraction=0.0 must be in \(0, 1\]"),
        ("train_steps", 0, r"--train_steps=0 must be >= 1"),
        ("unlabeled_loss_weight", 0.0, r"--unlabeled_loss_weight=0.0 must be > 0")):
      with self.assertRaisesRegex(ValueError, message):
        config(**{name: value})
    config(attention_dropout=0.0)  # the lowest is allowed
    with self.assertRaisesRegex(ValueError, "--on_bad_pair must be fail or skip"):
      config(on_bad_pair="drop")
    for bad in ("", "future,future", "attention_dropout,primary"):
      with self.assertRaisesRegex(ValueError, "--auxiliary_decoders must be a comma list of "
                                  f"attention_dropout, future \\(each once\\), got '{bad}'"):
        config(auxiliary_decoders=bad)
    config(auxiliary_decoders="future")

  def test_every_numeric_field_has_a_range_and_both_tools_share_them(self):
    numeric = {f.name for f in runner.CvtRunConfig.__dataclass_fields__.values()
               if f.type in (int, float, "int", "float")} - {"seed"}
    self.assertEqual(numeric, set(settings.RUN_CONFIG_RANGES))
    for name in ("beam_size", "max_decode_length"):
      self.assertEqual(cvt_translate.COMMAND_LINE.ranges[name], settings.RUN_CONFIG_RANGES[name])


class TaskSettingsTest(tf.test.TestCase):

  def test_translation_settings_are_its_own_and_earlier_runs_still_resume(self):
    shared = {f.name for f in dataclasses.fields(settings.CvtSharedConfig)}
    own = {f.name for f in dataclasses.fields(settings.TranslationSettings)}
    self.assertEqual(own, {"on_bad_pair", "target_min_count", "beam_size", "max_decode_length",
                           "attention_dropout", "auxiliary_decoders"})
    self.assertEmpty(shared & own)
    # The settings a run directory written before the split recorded (run_fingerprint.json of a
    # run_cvt --tasks=chunk at commit 58e90de): the same keys, so it resumes.
    recorded = [
        "attention_dropout", "beam_size", "char_dim", "data_dir", "ema_decay", "eval_every_steps",
        "hidden_size", "init_from_encoder", "learning_rate", "lstm1_size", "lstm2_size",
        "max_decode_length", "max_sentence_length", "max_train_sentences", "mode", "on_bad_pair",
        "on_decode_error", "patience", "projection_size", "seed", "target_min_count", "tasks",
        "train_batch_size", "train_fraction", "train_steps", "unlabeled_data",
        "unlabeled_loss_weight", "unlabeled_remainder", "unlabeled_start_step", "vocab_min_count",
        "vocab_unlabeled_sentences", "warmup_steps", "word_dim", "word_embeddings"]
    current = fingerprint.fingerprint("CvtRunner", config())
    # Settings added since (auxiliary_decoders) count as their defaults for such a directory.
    self.assertEqual(sorted(set(current["settings"]) - {"auxiliary_decoders"}), recorded)
    old = {"tool": "CvtRunner", "settings": {k: current["settings"][k] for k in recorded}}
    defaults = fingerprint.field_defaults(settings.CvtRunConfig)
    self.assertEqual(fingerprint.differences(old, current, defaults), [])
    self.assertEqual(fingerprint.differences(
        old, fingerprint.fingerprint("CvtRunner", config(auxiliary_decoders="future")), defaults),
        ["--auxiliary_decoders 'attention_dropout,future' → 'future'"])


@testutil.requires(TAGGING)
class DataLayoutTest(tf.test.TestCase):
  """Issue 70: a data root that lacks one of several tasks, and a chunking slice too short to set
  a dev set aside, are told in run_cvt's terms."""

  def test_a_missing_task_folder_and_a_short_chunking_file(self):
    root = self.create_tempdir().full_path
    with open(os.path.join(TAGGING, "chunk_conll2000", "train.txt"), encoding="utf-8") as f:
      sentences = f.read().strip().split("\n\n")
    chunking = os.path.join(root, "chunk_conll2000")
    os.makedirs(chunking)
    testutil.write_text(os.path.join(chunking, "train.txt"), "\n\n".join(sentences[:800]) + "\n")
    with self.assertRaisesRegex(FileNotFoundError, r"--tasks=pos,chunk: --data_dir=.* has no "
                                r"pos_ptb/ for pos; with several tasks --data_dir is a root "
                                r"holding each task's folder \(pos_ptb/, chunk_conll2000/"):
      runner.CvtRunner(config(tasks="pos,chunk", data_dir=root, mode="supervised"),
                       lambda _: None)
    with self.assertRaisesRegex(ValueError, r"chunk: .*train.txt holds 800 sentences and the task "
                                r"has no dev file, so run_cvt sets its last 1000 sentences aside "
                                r"as dev: give it more than 1000"):
      runner.CvtRunner(config(data_dir=root, mode="supervised"), lambda _: None)


@testutil.requires(TAGGING)
class UnlabeledRemainderTest(tf.test.TestCase):

  def test_the_left_out_training_sentences_are_the_unlabeled_text(self):
    full = runner.CvtRunner(config(mode="supervised", vocab_unlabeled_sentences=0),
                            lambda _: None)
    cut = runner.CvtRunner(config(train_fraction=0.1, unlabeled_remainder=True,
                                  vocab_unlabeled_sentences=100), lambda _: None)
    everything = [tuple(s.words) for s in full.tasks["chunk"].train]
    kept = [tuple(s.words) for s in cut.tasks["chunk"].train]
    left_out = [tuple(s.words) for s in cut.tasks["chunk"].remainder]
    self.assertLen(kept, round(0.1 * len(everything)))
    self.assertCountEqual(kept + left_out, everything)  # a partition: nothing kept twice or lost
    stream = cut.inputs.unlabeled_stream(0)
    pool = set(left_out)
    drawn = [tuple(next(stream)) for _ in range(2 * len(left_out))]
    self.assertTrue(set(drawn) <= pool)  # only the remainder, never a labeled sentence
    self.assertEqual(set(drawn), {s for s in pool if 2 <= len(s) <= 100})  # every one, each pass
    with self.assertRaisesRegex(ValueError, "--mode=cvt needs --unlabeled_data .* or "
                                "--unlabeled_remainder"):
      runner.CvtRunner(config(), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--unlabeled_remainder: .* leave no training "
                                "sentences out"):
      runner.CvtRunner(config(unlabeled_remainder=True), lambda _: None)


if __name__ == "__main__":
  tf.test.main()
