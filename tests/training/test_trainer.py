"""The trainer on real text: losses fall, resume is exact, exports load, bad set-ups fail early."""
import functools
import math
import os
import shutil
import tempfile

import gin
import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.data import pretraining_data
from official_rtd.interop import export
from official_rtd.methods import electra
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.ops import sampling
from official_rtd.training import optimization
from official_rtd.training import periodic
from official_rtd.training import trainer as trainer_lib
from tests import testutil

# One layer: what the training machinery does is the same at any depth, and tracing a step costs
# per layer (tests/training's four longest modules took 260 s with two layers, 170 s with one).
# Tests where depth matters (layer order in conversions, TEAMS' shared layers) ask for two.
TINY = EncoderConfig(hidden_size=64, num_layers=1, num_attention_heads=2, intermediate_size=128,
                     embedding_size=64, max_position_embeddings=64)


def make_records(output_dir, paragraphs=400, **kwargs):
  """`build_records`'s output, built once per test run for each setting (`testutil.session_copy`)
  unless a setting names a file (whose content the key would not know)."""
  if any(isinstance(value, str) and os.sep in value for value in kwargs.values()):
    return build_records(output_dir, paragraphs, **kwargs)
  return testutil.session_copy(("records", paragraphs, sorted(kwargs.items())),
                               lambda path: build_records(path, paragraphs, **kwargs), output_dir)


def build_records(output_dir, paragraphs=400, **kwargs):
  """Masked records (`create_pretraining_data`, 64 tokens, 2 shards) of `paragraphs` real
  paragraphs in `output_dir`, their corpus beside it (`<output_dir>.txt`)."""
  corpus = os.path.join(output_dir + ".txt")
  testutil.write_text(corpus, "\n".join(testutil.sample_paragraphs(paragraphs)) + "\n")
  values = dict(input_files=(corpus,), vocab_file=testutil.SAMPLE_VOCAB, output_dir=output_dir,
                max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, num_shards=2,
                num_workers=1)
  values.update(kwargs)
  pretraining_data.create_pretraining_data(pretraining_data.DataConfig(**values),
                                           log=lambda _: None)
  return output_dir


def capture_logs(trainer):
  """Returns a list that receives every dict of figures `trainer` logs (the reporting hook)."""
  logged = []
  trainer.reporter.add_listener(lambda kind, row: logged.append(row) if kind == "train" else None)
  return logged


def text_trainer(model_dir, records, model_fn, steps=100, log_every_steps=20, encoder_config=TINY,
                 learning_rate=2e-3, warmup_steps=10, optimizer="adamw", **train_config):
  """A Trainer of batch 16 × 64 tokens on real-text `records` (one checkpoint, at the end) and the
  list its logged figures go to: `(trainer, logged)`."""
  trainer = runs.build_trainer(
      model_dir, records, tf.distribute.get_strategy(),
      train_config=trainer_lib.TrainConfig(
          train_batch_size=16, num_train_steps=steps, max_seq_length=64,
          max_predictions_per_seq=10, log_every_steps=log_every_steps,
          **{"save_checkpoints_steps": steps, **train_config}),
      optimizer_config=optimization.OptimizerConfig(optimizer=optimizer,
                                                    learning_rate=learning_rate,
                                                    warmup_steps=warmup_steps),
      encoder_config=encoder_config, model_fn=model_fn, log=lambda _: None)
  return trainer, capture_logs(trainer)


def tiny_export(directory, steps=4):
  """Pre-trains the TINY ELECTRA for `steps` steps of 8 × 64 tokens on real text in `directory`
  (once per test run for each `steps`: `testutil.session_copy`); returns its fine-tunable
  export."""
  os.makedirs(directory, exist_ok=True)
  testutil.session_copy(("tiny_export", steps), lambda path: pretrain_tiny(path, steps), directory)
  return os.path.join(directory, "pretrain", "export")


def pretrain_tiny(directory, steps):
  records = build_records(os.path.join(directory, "records"), paragraphs=100)
  trainer = runs.build_trainer(
      os.path.join(directory, "pretrain"), records, tf.distribute.get_strategy(),
      train_config=trainer_lib.TrainConfig(train_batch_size=8, num_train_steps=steps,
                                           max_seq_length=64, max_predictions_per_seq=10,
                                           log_every_steps=steps, save_checkpoints_steps=steps),
      encoder_config=TINY, model_fn=electra.build_electra_pretrainer, log=lambda _: None)
  trainer.train()


class RecordsTestCase(tf.test.TestCase):
  """Makes `cls.records` (masked records of `PARAGRAPHS` real paragraphs) in `cls.tmp`."""
  PARAGRAPHS = 400

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.records = make_records(os.path.join(cls.tmp, "records"), paragraphs=cls.PARAGRAPHS)


class TrainerTest(RecordsTestCase):

  def _trainer(self, model_dir, steps=20, records=None, encoder=TINY, **train_kwargs):
    train = dict(train_batch_size=16, num_train_steps=steps, max_seq_length=64,
                 max_predictions_per_seq=10, save_checkpoints_steps=10, log_every_steps=10,
                 shuffle_buffer_size=100, seed=3)
    train.update(train_kwargs)
    return runs.build_trainer(
        model_dir, records or self.records, tf.distribute.OneDeviceStrategy("/cpu:0"),
        train_config=trainer_lib.TrainConfig(**train),
        optimizer_config=optimization.OptimizerConfig(learning_rate=2e-3, warmup_steps=10),
        encoder_config=encoder,
        model_fn=functools.partial(electra.build_electra_pretrainer, generator_size=0.5),
        log=lambda _: None)

  def test_losses_fall_on_real_text(self):
    model_dir = os.path.join(self.tmp, "fall")
    trainer = self._trainer(model_dir, steps=120, log_every_steps=20, save_checkpoints_steps=120)
    logged = capture_logs(trainer)
    trainer.train()
    first, last = logged[0], logged[-1]
    self.assertLess(last["mlm_loss"], first["mlm_loss"] - 1.0, logged)
    self.assertLess(last["rtd_loss"], first["rtd_loss"] - 0.05, logged)
    self.assertEqual(last["step"], 120)
    # Step-dependent schedules read the optimizer's step.
    self.assertEqual(int(trainer.model.training_step()), 120)
    # TensorBoard summaries and the export were written.
    self.assertNotEmpty(tf.io.gfile.glob(os.path.join(model_dir, "train", "events.out.*")))
    encoder = export.load_encoder(os.path.join(model_dir, export.EXPORT_DIR))
    for a, b in zip(encoder.weights, trainer.model.discriminator.weights):
      self.assertAllEqual(a, b)
    self.assertTrue(os.path.isfile(os.path.join(model_dir, "export", "vocab.txt")))

  def test_retention_keeps_the_last_checkpoints_and_every_milestone(self):
    model_dir = os.path.join(self.tmp, "retention")
    trainer = self._trainer(model_dir, steps=6, save_checkpoints_steps=1, log_every_steps=1,
                            keep_checkpoint_max=2, keep_checkpoint_every_steps=3)
    trainer.train()
    steps = lambda d: sorted(int(n.split("-")[1].split(".")[0])
                             for n in os.listdir(d) if n.startswith("ckpt-") and n.endswith(".index"))
    self.assertEqual(steps(model_dir), [5, 6])  # the manager's last two
    self.assertEqual(steps(os.path.join(model_dir, trainer_lib.MILESTONES)), [3, 6])
    milestone = os.path.join(model_dir, trainer_lib.MILESTONES, "ckpt-3")
    reader = tf.train.load_checkpoint(milestone)  # complete: its data file survived the deletion
    self.assertIn("optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE", reader.get_variable_to_shape_map())
    self.assertEqual(int(reader.get_tensor("optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE")), 3)

  def test_a_milestone_between_regular_saves_is_kept(self):
    # Milestones every 3 steps, saves every 4: the milestone steps are saved too (they were
    # silently skipped when only regular saves could become milestones).
    model_dir = os.path.join(self.tmp, "milestone_between_saves")
    trainer = self._trainer(model_dir, steps=8, save_checkpoints_steps=4, log_every_steps=4,
                            keep_checkpoint_max=5, keep_checkpoint_every_steps=3)
    trainer.train()
    milestones = os.path.join(model_dir, trainer_lib.MILESTONES)
    kept = sorted(int(n.split("-")[1].split(".")[0])
                  for n in os.listdir(milestones) if n.endswith(".index"))
    self.assertEqual(kept, [3, 6])
    reader = tf.train.load_checkpoint(os.path.join(milestones, "ckpt-6"))
    self.assertEqual(int(reader.get_tensor("optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE")), 6)

  def test_a_registered_action_runs_at_its_steps_without_touching_the_loop(self):
    # Every 3 steps and at step 4, on a run that logs and saves every 5: the loop stops at each
    # due step (the optimizer's step is the action's step) and the run's own actions still run.
    model_dir = os.path.join(self.tmp, "registered_action")
    trainer = self._trainer(model_dir, steps=10, save_checkpoints_steps=5, log_every_steps=5)
    logged = capture_logs(trainer)
    seen = []
    trainer.add_action(periodic.PeriodicAction(
        "probe", lambda step: seen.append((step, int(trainer.optimizer.iterations))),
        periods=(3,), at_steps=(4,), at_end=False))
    trainer.train()
    self.assertEqual(seen, [(3, 3), (4, 4), (6, 6), (9, 9)])
    self.assertEqual([row["step"] for row in logged], [5, 10])
    self.assertEqual(tf.train.latest_checkpoint(model_dir).rsplit("-", 1)[1], "10")

  def test_resume_restores_step_optimizer_state_and_data_position(self):
    model_dir = os.path.join(self.tmp, "resume")
    first = self._trainer(model_dir, steps=20)
    first.train()
    expected_next = {k: v.numpy() for k, v in next(first.iterator).items()}
    def optimizer_state(trainer):
      state = [trainer.optimizer.iterations.numpy()]
      for variable in trainer.model.trainable_variables:
        state += [trainer.optimizer.get_slot(variable, s).numpy() for s in ("m", "v")]
      return state

    saved = optimizer_state(first)

    second = self._trainer(model_dir, steps=30)
    notices = []
    second.reporter.add_listener(lambda kind, row: notices.append(row) if kind == "start" else 0)
    self.assertEqual(second.restore(), 20)
    self.assertEqual([row["step"] for row in notices], [20])  # listeners learn where it resumed
    restored = optimizer_state(second)
    self.assertLen(restored, len(saved))
    for a, b in zip(restored, saved):
      self.assertAllEqual(a, b)
    for a, b in zip(second.model.weights, first.model.weights):
      self.assertAllEqual(a, b)
    got_next = {k: v.numpy() for k, v in next(second.iterator).items()}
    for key in expected_next:
      self.assertAllEqual(got_next[key], expected_next[key])
    second.train()
    self.assertEqual(second.step, 30)
    self.assertEqual(tf.train.latest_checkpoint(model_dir), os.path.join(model_dir, "ckpt-30"))

  def test_bad_setups_fail_before_training(self):
    model_dir = os.path.join(self.tmp, "bad")
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError,
                                "vocab_size 999 differs from the records' vocab size 5883"):
      self._trainer(model_dir, encoder=EncoderConfig(vocab_size=999))
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError,
                                r"max_seq_length 64 but the run trains at 128 \(TrainConfig."
                                r"max_seq_length, or a phase's\): pass --gin_param='TrainConfig."
                                r"max_seq_length = 64' or rebuild the records with "
                                r"create_pretraining_data --max_seq_length=128"):
      self._trainer(model_dir, max_seq_length=128)
    empty = tempfile.mkdtemp()
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError, f"{empty} is empty"):
      self._trainer(model_dir, records=empty)
    other_vocab = os.path.join(self.tmp, "other_vocab.txt")
    shutil.copyfile(testutil.SAMPLE_VOCAB, other_vocab)
    with open(other_vocab, "a") as f:
      f.write("zzzunseentoken\n")
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError, "is not the one the records"):
      runs.build_trainer(model_dir, self.records, tf.distribute.get_strategy(),
                         vocab_file=other_vocab, train_config=trainer_lib.TrainConfig(
                             max_seq_length=64, max_predictions_per_seq=10),
                         model_fn=electra.build_electra_pretrainer, log=lambda _: None)
    # The records' own vocabulary file, replaced since (build_vocab --overwrite): said so, with
    # the fix, not "X is not the one ... (X)".
    replaced = os.path.join(self.tmp, "replaced_vocab.txt")
    shutil.copyfile(testutil.SAMPLE_VOCAB, replaced)
    records = make_records(os.path.join(self.tmp, "records_replaced"), paragraphs=20,
                           vocab_file=replaced, num_shards=1)
    with open(replaced, "a") as f:
      f.write("zzzunseentoken\n")
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError,
                                f"vocab file {replaced} changed since the records in {records} "
                                r"were built with it \(sha256 \w{12}\.\.\. then, \w{12}\.\.\. "
                                r"now; .*\): rebuild the records with create_pretraining_data"):
      runs.build_trainer(model_dir, records, tf.distribute.get_strategy(),
                         train_config=trainer_lib.TrainConfig(
                             max_seq_length=64, max_predictions_per_seq=10),
                         model_fn=electra.build_electra_pretrainer, log=lambda _: None)
    self.assertFalse(os.path.exists(model_dir))

  def test_dynamic_masking_of_unmasked_records(self):
    records = make_records(os.path.join(self.tmp, "plain"), paragraphs=100, dupe_factor=0)
    trainer = self._trainer(os.path.join(self.tmp, "dynamic"), steps=2, records=records)
    self.assertFalse(trainer.inputs.masked_records)
    batch = next(iter(trainer.input_iterator(0)))
    weights = batch["masked_lm_weights"].numpy()
    self.assertGreater(weights.sum(), 0)
    ids = batch["input_word_ids"].numpy()
    self.assertGreater((ids == trainer.vocab.mask_id).sum(), 0.7 * weights.sum())

  def test_masking_rate_schedule_spans_the_run(self):
    """dynamic_masking.final_mask_prob: 40% at step 0, 10% from the last step on (40 steps), in
    whatever phase of the run the input starts (a resumed run's input)."""
    records = make_records(os.path.join(self.tmp, "plain_schedule"), paragraphs=100,
                           dupe_factor=0)
    gin.bind_parameter("dynamic_masking.mask_prob", 0.4)
    gin.bind_parameter("dynamic_masking.final_mask_prob", 0.1)
    try:
      trainer = self._trainer(os.path.join(self.tmp, "schedule"), steps=40, records=records,
                              max_predictions_per_seq=30)
    finally:
      gin.clear_config()
    special = trainer.vocab.is_special()
    for step, rate in ((0, 0.4), (20, 0.25), (40, 0.1)):
      batch = next(iter(trainer.input_iterator(step)))
      original = sampling.unmask(batch).numpy()
      candidates = (~special[original]).sum(1)
      self.assertAllEqual(batch["masked_lm_weights"].numpy().sum(1),
                          np.clip(np.round(candidates * rate), 1, 30), msg=f"step {step}")


class FlopsBudgetTest(RecordsTestCase):
  PARAGRAPHS = 100

  def test_budget_sets_the_number_of_steps(self):
    probe = TrainerTest._trainer(self, os.path.join(self.tmp, "probe"))
    per_step = probe.train_flops(1)
    trainer = TrainerTest._trainer(self, os.path.join(self.tmp, "budget"), steps=1000,
                                   train_flops_budget=7.5 * per_step)
    self.assertEqual(trainer.train_config.num_train_steps, 7)
    last = trainer.train()
    self.assertEqual(last["step"], 7)
    self.assertAllClose(last["train_flops"], 7 * per_step)
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError, "less than one step"):
      TrainerTest._trainer(self, os.path.join(self.tmp, "tiny"), train_flops_budget=1.0)

  def _electra(self, name, lines, rtd_start_step=4, **train_kwargs):
    """ELECTRA whose discriminator reads the masked input as a BERT until step 4 and whose own
    masked-LM head stops at step 6 (μ_t = 0); logs into `lines`."""
    train = dict(train_batch_size=16, num_train_steps=8, max_seq_length=64,
                 max_predictions_per_seq=10, save_checkpoints_steps=100, log_every_steps=2)
    train.update(train_kwargs)
    return runs.build_trainer(
        os.path.join(self.tmp, name), self.records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(**train),
        optimizer_config=optimization.OptimizerConfig(learning_rate=2e-3, warmup_steps=2),
        encoder_config=TINY, model_fn=functools.partial(
            electra.build_electra_pretrainer, generator_size=0.5, discriminator_mlm_weight=1.0,
            rtd_start_step=rtd_start_step, discriminator_mlm_steps=max(6, rtd_start_step + 1),
            masked_warmup=True), log=lines.append)

  def test_a_head_that_stops_is_neither_run_nor_counted_after(self):
    """The discriminator's masked LM (μ_t = 0 from step 6) costs its head's FLOPs for steps 0-5
    only (2 × the head's multiply-adds, by hand), a budget is spent on that schedule, and the
    rows after step 6 no longer show its loss."""
    lines = []
    probe = self._electra("dmlm_probe", lines)
    model = probe.model
    head = 2.0 * 10 * (2 * TINY.hidden_size * TINY.embedding_size
                       + 2 * TINY.embedding_size * probe.vocab.size)  # forward + backward
    self.assertAllClose(model.train_flops_per_example_at(5, 64, 10)
                        - model.train_flops_per_example_at(6, 64, 10), head)
    with_head, without = 16 * model.train_flops_per_example_at(0, 64, 10), 16 * (
        model.train_flops_per_example_at(6, 64, 10))
    self.assertAllClose(probe.train_flops(9), 6 * with_head + 3 * without)
    trainer = self._electra("dmlm_budget", lines, num_train_steps=1000,
                            train_flops_budget=6 * with_head + 2.5 * without)
    self.assertEqual(trainer.train_config.num_train_steps, 8)
    logged = capture_logs(trainer)
    trainer.train()
    shown = {row["step"]: "discriminator_mlm_loss" in row for row in logged}
    self.assertEqual(shown, {2: True, 4: True, 6: True, 8: False})
    self.assertTrue(all(np.isfinite(row["rtd_loss"]) for row in logged))

  def test_a_detector_that_starts_too_late_is_refused_or_warned(self):
    lines = []
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError,
                                r"rtd_start_step = 8 is not before TrainConfig.num_train_steps "
                                r"= 8: the discriminator's replaced-token detection would never "
                                r"train \(a train_flops_budget of \S+ gives it 50% of the steps"):
      self._electra("late", lines, rtd_start_step=8, num_train_steps=8)
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "late", "ckpt-0.index")))
    self._electra("warned", lines, rtd_start_step=5, num_train_steps=8)
    warning = [line for line in lines if line.startswith("WARNING: replaced-token detection")]
    self.assertLen(warning, 1)
    self.assertIn("trains for 3 of TrainConfig.num_train_steps = 8, 38%", warning[0])
    lines.clear()
    self._electra("fine", lines, rtd_start_step=4, num_train_steps=8)
    self.assertFalse([line for line in lines if line.startswith("WARNING")])


class LearningRateTest(tf.test.TestCase):

  def test_warmup_then_linear_decay(self):
    schedule = optimization.WarmupDecay(peak=1e-3, warmup_steps=10, total_steps=100)
    values = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 200)]
    self.assertAllClose(values, [0.0, 5e-4, 9e-4, 4.5e-4, 0.0, 0.0])

  def test_cosine_and_polynomial_decays_by_hand(self):
    # After a 10-step warmup to 1e-3, p = step / 100, end 1e-4.
    cosine = optimization.WarmupDecay(1e-3, 10, 100, end=1e-4, decay="cosine")
    polynomial = optimization.WarmupDecay(1e-3, 10, 100, end=1e-4, decay="polynomial", power=0.5)
    for step, p in ((10, 0.1), (50, 0.5), (75, 0.75), (100, 1.0), (150, 1.0)):
      self.assertAllClose(float(cosine(step)), 1e-4 + 9e-4 * (1 + math.cos(math.pi * p)) / 2)
      self.assertAllClose(float(polynomial(step)), 1e-4 + 9e-4 * (1 - p) ** 0.5)
    self.assertAllClose(float(cosine(5)), 5e-4)  # the warmup is the same for every decay
    self.assertAllClose(float(cosine(50)), 5.5e-4)  # half way: the mean of peak and end
    with self.assertRaisesRegex(ValueError, "OptimizerConfig.decay = 'step' must be one of"):
      optimization.OptimizerConfig(decay="step")
    with self.assertRaisesRegex(ValueError, "decay_power = 0.5 needs OptimizerConfig.decay = "
                                "'polynomial'"):
      optimization.OptimizerConfig(decay_power=0.5)
    optimizer = optimization.build_optimizer(
        optimization.OptimizerConfig(learning_rate=1e-3, warmup_steps=0, decay="cosine"), 100)
    self.assertAllClose(float(optimizer.learning_rate(50)), 5e-4)

  def test_warns_when_the_warmup_outlasts_the_run(self):
    config = optimization.OptimizerConfig(learning_rate=1e-3, warmup_steps=100)
    self.assertIsNone(optimization.schedule_warning(config, 101))
    warning = optimization.schedule_warning(config, 47)
    self.assertIn("warmup_steps = 100", warning)
    self.assertIn("47 steps", warning)
    self.assertIn("0.00047", warning)


class ConfigRangesTest(tf.test.TestCase):

  def test_out_of_range_numbers_are_refused_naming_the_binding(self):
    for build, message in (
        (lambda: trainer_lib.TrainConfig(num_train_steps=-2),
         "TrainConfig.num_train_steps = -2 must be >= 1"),
        (lambda: trainer_lib.TrainConfig(train_batch_size=0),
         "TrainConfig.train_batch_size = 0 must be >= 1"),
        (lambda: trainer_lib.TrainConfig(train_flops_budget=-1.0),
         "TrainConfig.train_flops_budget = -1.0 must be >= 0"),
        (lambda: optimization.OptimizerConfig(learning_rate=0.0),
         "OptimizerConfig.learning_rate = 0.0 must be > 0"),
        (lambda: optimization.OptimizerConfig(beta_2=1.5),
         r"OptimizerConfig.beta_2 = 1.5 must be in \[0, 1\]")):
      with self.assertRaisesRegex(ValueError, message):
        build()
    trainer_lib.TrainConfig(num_train_steps=1, train_flops_budget=0.0)  # the bounds are valid


class EarlierRunTest(tf.test.TestCase):
  """A run directory written by the code before the trainer was split (issue 53) resumes."""

  def test_a_run_written_before_the_split_resumes(self):
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    fixture = os.path.join(testutil.REPO, "tests", "testdata", "pretraining_run_db8a9be")
    model_dir = os.path.join(tmp, "run")
    shutil.copytree(fixture, model_dir)
    vocab = os.path.join(model_dir, "vocab.txt")
    records = make_records(os.path.join(tmp, "records"), paragraphs=40, vocab_file=vocab,
                           max_seq_length=32, dupe_factor=1, num_shards=1)
    bindings = ["EncoderConfig.hidden_size = 16", "EncoderConfig.num_layers = 1",
                "EncoderConfig.intermediate_size = 32", "EncoderConfig.embedding_size = 16",
                "EncoderConfig.max_position_embeddings = 32", "TrainConfig.max_seq_length = 32",
                "TrainConfig.train_batch_size = 4", "TrainConfig.save_checkpoints_steps = 2",
                "TrainConfig.num_train_steps = 4"]
    logged = []
    try:
      runs.run_pretraining(["gin/models/tiny.gin", "gin/tasks/electra.gin"], bindings, records,
                           model_dir, onset_monitor=False, log=logged.append)
    finally:
      gin.clear_config()
    self.assertIn(f"restored {os.path.join(model_dir, 'ckpt-2')} (step 2)", logged)
    self.assertEqual(tf.train.latest_checkpoint(model_dir), os.path.join(model_dir, "ckpt-4"))
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "ckpt-4"))
    self.assertEqual(int(reader.get_tensor("optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE")), 4)


if __name__ == "__main__":
  tf.test.main()
