"""run_pretraining as a user runs it: bad gin fails clearly, a killed run resumes."""
import os
import re
import shutil
import signal
import subprocess
import tempfile

import gin
import numpy as np
import tensorflow as tf

from official_rtd.tools import cli
from official_rtd.tools import run_pretraining
from official_rtd import runs
from official_rtd.data import vocab as vocab_lib
from tests import testutil
from tests import tool_server
from tests.training.test_trainer import make_records
from tests.training.test_trainer import RecordsTestCase

GIN_FILES = ["gin/models/tiny.gin", "gin/tasks/electra.gin"]
BASE = ["run_pretraining"] + [f"--gin_file={f}" for f in GIN_FILES]


class RunPretrainingCliTest(RecordsTestCase):
  PARAGRAPHS = 150

  def _run(self, *args):
    return tool_server.run(BASE + list(args), cwd=testutil.REPO, timeout=600)

  def test_bad_gin_and_records_fail_before_training(self):
    model_dir = os.path.join(self.tmp, "bad")
    cases = [
        (["--gin_param=EncoderConfig.hidden_sise = 3"],
         r"bad --gin_param='EncoderConfig.hidden_sise = 3' \(.*hidden_sise"),
        (["--gin_file=gin/models/nope.gin"], r"gin file gin/models/nope.gin not found"),
        (["--gin_param=EncoderConfig.vocab_size = 100"],
         r"vocab_size 100 differs from the records' vocab size 5883"),
        (["--gin_param=TrainConfig.max_seq_length = 32"],
         r"max_seq_length 64 but the run trains at 32 \(TrainConfig.max_seq_length"),
        ([f"--input_records={testutil.SAMPLE_CORPUS}"],
         r"gutenberg_sample.txt is a file, not a records directory: records are the directory "
         r"create_pretraining_data --output_dir wrote"),
        (["--gin_file=gin/recipes/one_machine_sentences.gin", "--gin_file=gin/models/tiny.gin"],
         r"--gin_file=gin/models/tiny.gin re-binds .* which the recipe "
         r"gin/recipes/one_machine_sentences.gin set to"),
        (["--mode=eval"], r"--mode=eval needs --eval_input"),
        (["--gin_param=TrainConfig.mixed_precision = 'half'"],
         r"--mixed_precision must be one of \['bfloat16', 'float16', 'float32'\], got 'half'"),
        (["--mode=eval", f"--eval_input={self.records}"], r"no checkpoint to evaluate in"),
        (["--gin_param=TrainConfig.num_train_steps = -2"],
         r"TrainConfig.num_train_steps = -2 must be >= 1"),
        (["--gin_param=OptimizerConfig.learning_rate = -0.001"],
         r"OptimizerConfig.learning_rate = -0.001 must be > 0"),
    ]
    # The first case through the command line (one line, exit 1); the rest in this process,
    # which raises the line's text as a user error (`cli.USER_ERRORS`).
    result = self._run(f"--input_records={self.records}", f"--model_dir={model_dir}",
                       *cases[0][0])
    self.assertEqual(result.returncode, 1, result.stderr[-2000:])
    errors = [l for l in result.stderr.splitlines() if l.startswith("run_pretraining: error:")]
    self.assertLen(errors, 1, result.stderr[-2000:])
    self.assertRegex(errors[0], cases[0][1])
    for extra, message in cases[1:]:
      gin_files = [a.split("=", 1)[1] for a in BASE[1:] + extra if a.startswith("--gin_file")]
      gin_params = [a.split("=", 1)[1] for a in extra if a.startswith("--gin_param")]
      options = dict(a[2:].split("=", 1) for a in extra if a.startswith("--mode")
                     or a.startswith("--eval_input"))
      records = next((a.split("=", 1)[1] for a in extra if a.startswith("--input_records")),
                     self.records)
      try:
        with self.assertRaisesRegex(cli.USER_ERRORS, message):
          runs.run_pretraining(gin_files, gin_params, records, model_dir,
                               log=lambda _: None, **options)
      finally:
        gin.clear_config()
    empty = tempfile.mkdtemp()
    result = self._run(f"--input_records={empty}", f"--model_dir={model_dir}")
    self.assertEqual(result.returncode, 1)
    self.assertIn(f"records directory {empty} is empty", result.stderr)
    self.assertFalse(os.path.exists(os.path.join(model_dir, "checkpoint")))

  def test_killed_run_resumes_from_latest_checkpoint(self):
    model_dir = os.path.join(self.tmp, "killed")
    args = [f"--input_records={self.records}", f"--model_dir={model_dir}",
            "--gin_param=TrainConfig.train_batch_size = 8",
            "--gin_param=TrainConfig.save_checkpoints_steps = 10",
            "--gin_param=TrainConfig.log_every_steps = 10",
            "--gin_param=EncoderConfig.num_layers = 1"]
    process = subprocess.Popen(BASE + args + ["--gin_param=TrainConfig.num_train_steps = 5000"],
                               cwd=testutil.REPO, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
      if "saved checkpoint" in line and line.rstrip().endswith("ckpt-20"):
        break
    process.send_signal(signal.SIGKILL)
    process.wait()
    latest = tf.train.latest_checkpoint(model_dir)
    saved_step = int(latest.rsplit("-", 1)[1])
    self.assertGreaterEqual(saved_step, 20)
    result = self._run(*args, f"--gin_param=TrainConfig.num_train_steps = {saved_step + 10}")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn(f"restored {latest} (step {saved_step})", result.stderr)
    self.assertRegex(result.stderr, rf"step {saved_step + 10}/{saved_step + 10} total_loss=")
    self.assertNotRegex(result.stderr, rf"step {saved_step}/")  # no step is repeated
    self.assertRegex(result.stderr,
                     r"examples/s=[\d.]+ tokens/s=\d+ train_flops=\S+ ETA \d+:\d\d:\d\d")
    self.assertTrue(re.search(r"fine-tunable export in .*export", result.stderr))

  def test_sigterm_saves_the_step_in_flight_and_resumes_there(self):
    model_dir = os.path.join(self.tmp, "preempted")
    args = [f"--input_records={self.records}", f"--model_dir={model_dir}",
            "--gin_param=TrainConfig.train_batch_size = 8",
            "--gin_param=TrainConfig.save_checkpoints_steps = 1000",
            "--gin_param=TrainConfig.log_every_steps = 1",
            "--gin_param=EncoderConfig.num_layers = 1"]
    process = subprocess.Popen(BASE + args + ["--gin_param=TrainConfig.num_train_steps = 1000"],
                               cwd=testutil.REPO, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
      if re.search(r"step 3/1000 ", line):
        break
    process.send_signal(signal.SIGTERM)  # what a preemption or a scheduler sends first
    rest = process.stderr.read()
    process.wait(timeout=300)
    self.assertEqual(process.returncode, 143, rest[-3000:])
    latest = tf.train.latest_checkpoint(model_dir)
    self.assertIsNotNone(latest, rest[-3000:])  # no periodic save happened before step 1000
    saved_step = int(latest.rsplit("-", 1)[1])
    self.assertGreaterEqual(saved_step, 3)
    self.assertIn(f"interrupted at step {saved_step}: saved that step", rest)
    self.assertIn("run_pretraining: terminated (SIGTERM)", rest)
    self.assertFalse(os.path.exists(os.path.join(model_dir, "export")))
    result = self._run(*args, f"--gin_param=TrainConfig.num_train_steps = {saved_step + 2}")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn(f"restored {latest} (step {saved_step})", result.stderr)
    self.assertRegex(result.stderr, rf"step {saved_step + 2}/{saved_step + 2} total_loss=")

  def test_a_diverging_run_stops_without_saving_non_finite_weights(self):
    for task in ("mlm", "electra"):
      model_dir = os.path.join(self.tmp, f"diverging_{task}")
      result = tool_server.run(
          ["run_pretraining", "--gin_file=gin/models/tiny.gin", f"--gin_file=gin/tasks/{task}.gin",
           f"--input_records={self.records}", f"--model_dir={model_dir}",
           "--gin_param=TrainConfig.train_batch_size = 8",
           "--gin_param=TrainConfig.num_train_steps = 30",
           "--gin_param=TrainConfig.save_checkpoints_steps = 2",
           "--gin_param=TrainConfig.log_every_steps = 2",
           "--gin_param=OptimizerConfig.warmup_steps = 0",
           "--gin_param=OptimizerConfig.learning_rate = 1e6"],
          cwd=testutil.REPO, timeout=600)
      self.assertEqual(result.returncode, 1, result.stderr[-3000:])
      errors = [l for l in result.stderr.splitlines() if l.startswith("run_pretraining: error:")]
      self.assertLen(errors, 1, result.stderr[-3000:])
      # The default policy skips such updates and stops after nonfinite_patience in a row.
      self.assertRegex(errors[0], r"(is|are) not finite at step \d+ \(learning rate .*\): \d+ updates "
                       r"in a row skipped \(TrainConfig.nonfinite_patience = 10\); the last "
                       r"checkpoint is .*OptimizerConfig.learning_rate = 1e\+06")
      self.assertFalse(os.path.exists(os.path.join(model_dir, "export")), task)
      latest = tf.train.latest_checkpoint(model_dir)
      if latest:  # only checkpoints of finite steps were written
        reader = tf.train.load_checkpoint(latest)
        for name in reader.get_variable_to_shape_map():
          value = reader.get_tensor(name)
          if hasattr(value, "dtype") and value.dtype.kind == "f":
            self.assertTrue(np.all(np.isfinite(value)), (task, latest, name))

  def test_a_rerun_with_other_settings_changes_nothing(self):
    model_dir = os.path.join(self.tmp, "settled")
    args = [f"--input_records={self.records}", f"--model_dir={model_dir}",
            "--gin_param=TrainConfig.train_batch_size = 8",
            "--gin_param=TrainConfig.save_checkpoints_steps = 2",
            "--gin_param=EncoderConfig.num_layers = 1"]
    result = self._run(*args, "--gin_param=TrainConfig.num_train_steps = 2")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    snapshot = lambda: {n: open(os.path.join(model_dir, n), "rb").read()
                        for n in sorted(os.listdir(model_dir))
                        if os.path.isfile(os.path.join(model_dir, n))}
    before = snapshot()
    for extra, message in [  # the tool's main in this process, with its flags as a config
        ("EncoderConfig.hidden_size = 64", r"EncoderConfig.hidden_size 128 → 64"),
        ("OptimizerConfig.learning_rate = 5e-4", r"OptimizerConfig.learning_rate "
                                                 r"0.001 → 0.0005"),
    ]:
      config = run_pretraining.RunPretrainingConfig(
          gin_file=tuple(GIN_FILES), input_records=self.records, model_dir=model_dir,
          gin_param=("TrainConfig.train_batch_size = 8", "TrainConfig.save_checkpoints_steps = 2",
                     "EncoderConfig.num_layers = 1", extra, "TrainConfig.num_train_steps = 4"))
      with self.assertRaisesRegex(ValueError,
                                  rf"holds a run trained with other settings \({message}\)"):
        run_pretraining.main(config)
      self.assertEqual(snapshot(), before)  # config, flags, vocab and checkpoints as they were
    result = self._run(*args, "--gin_param=TrainConfig.num_train_steps = 4")  # train longer
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("(step 2)", result.stderr)


  def test_an_evaluation_with_other_method_settings_is_one_line(self):
    """`--mode=eval` of a run trained without the masked-LM warm-up, with gin files that add
    its head: the checkpoint cannot fill the head, said in one line naming its variables."""
    model_dir = os.path.join(self.tmp, "other_settings")
    params = ["TrainConfig.train_batch_size = 8", "TrainConfig.save_checkpoints_steps = 2",
              "EncoderConfig.num_layers = 1", "TrainConfig.num_train_steps = 2"]
    try:
      runs.run_pretraining(GIN_FILES, params, self.records, model_dir, log=lambda _: None)
    finally:
      gin.clear_config()
    before = testutil.md5_tree(model_dir)
    try:
      with self.assertRaisesRegex(
          cli.USER_ERRORS, rf"^{model_dir}/ckpt-2 does not restore into this model \(a run of "
          r"other sizes, another method or other method settings\?\): this model's "
          r"electra/discriminator_masked_lm/\S+, .* are not in it; the directory was left as it "
          r"is$"):
        runs.run_pretraining(GIN_FILES,
                             params + ["masked_lm_warmup.discriminator_mlm_weight = 1.0"],
                             self.records, model_dir, log=lambda _: None, mode="eval",
                             eval_input=self.records)
    finally:
      gin.clear_config()
    self.assertEqual(testutil.md5_tree(model_dir), before)

  def test_damaged_checkpoints_and_records_of_another_vocabulary_are_one_line(self):
    model_dir = os.path.join(self.tmp, "damaged")
    params = ["TrainConfig.train_batch_size = 8", "TrainConfig.save_checkpoints_steps = 2",
              "EncoderConfig.num_layers = 1"]

    def pretrain(steps, records=None):
      try:
        return runs.run_pretraining(GIN_FILES, params + [f"TrainConfig.num_train_steps = {steps}"],
                                    records or self.records, model_dir, log=logged.append)
      finally:
        gin.clear_config()

    logged = []
    pretrain(4)
    data = os.path.join(model_dir, "ckpt-4.data-00000-of-00001")
    with open(data, "r+b") as f:
      f.truncate(os.path.getsize(data) // 2)
    before = testutil.md5_tree(model_dir)
    intact = os.path.join(model_dir, "ckpt-2")
    for attempt in (lambda: pretrain(6), lambda: runs.load_model(model_dir)):  # resume, export
      with self.assertRaisesRegex(
          cli.USER_ERRORS, rf"checkpoint {model_dir}/ckpt-4 is damaged: its files are truncated "
          rf"or corrupt .*; the newest intact checkpoint is {intact} \(step 2\): move ckpt-4\.\* "
          rf"out of {model_dir} and run the same command again"):
        attempt()
      self.assertEqual(testutil.md5_tree(model_dir), before)
    aside = os.path.join(self.tmp, "damaged_aside")
    os.makedirs(aside)
    for name in os.listdir(model_dir):
      if name.startswith("ckpt-4."):
        os.rename(os.path.join(model_dir, name), os.path.join(aside, name))
    logged.clear()
    pretrain(6)  # goes on from step 2 (tf.train.latest_checkpoint alone would restart at 0)
    self.assertIn(f"restored {intact} (step 2)", logged)
    self.assertEqual(tf.train.latest_checkpoint(model_dir), os.path.join(model_dir, "ckpt-6"))

    other_vocab = os.path.join(self.tmp, "other_vocab.txt")
    with open(testutil.SAMPLE_VOCAB) as f, open(other_vocab, "w") as g:
      g.write(f.read() + "zzzunseentoken\n")
    other = make_records(os.path.join(self.tmp, "other_records"), paragraphs=60,
                         vocab_file=other_vocab)
    before = testutil.md5_tree(model_dir)
    with self.assertRaisesRegex(
        cli.USER_ERRORS, rf"the records in {other} were built with another vocabulary "
        rf"\({other_vocab}, 5884 entries\) than the run in {model_dir} was trained with"):
      pretrain(8, other)
    self.assertEqual(testutil.md5_tree(model_dir), before)
    # The run's vocab.txt replaced by another (issue 70): export_model and score_pll load it with
    # one line in our words, not TensorFlow's "incompatible tensor with shape".
    vocab_copy = vocab_lib.find_vocab(model_dir)
    shutil.copyfile(other_vocab, vocab_copy)
    with self.assertRaisesRegex(
        cli.USER_ERRORS, rf"the run's {vocab_copy} has 5884 entries but its checkpoint "
        rf"{model_dir}/ckpt-6 was trained with 5883: the vocabulary file was replaced"):
      runs.load_model(model_dir)

if __name__ == "__main__":
  tf.test.main()
