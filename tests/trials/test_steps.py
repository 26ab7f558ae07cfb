"""A fine-tuning trial killed after a checkpoint and resumed ends bit-identical to the same trial
run without interruption (data order, dropout masks, optimizer state and schedule all replayed)."""
import os
import signal
import tempfile
from unittest import mock

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.finetune import protocol
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.trials import run as trial_run
from official_rtd.trials import steps as trial_steps
from tests import testutil
from tests.finetune import toy_classifier

STEPS = 8


class Killed(Exception):
  pass


def build():
  tf_keras.utils.set_random_seed(0)
  encoder = TransformerEncoder(EncoderConfig(
      hidden_size=16, num_layers=2, num_attention_heads=2, intermediate_size=32,
      embedding_size=16, max_position_embeddings=16, vocab_size=50), name="encoder")
  model = toy_classifier.Classifier(encoder, 2)
  model({"input_word_ids": tf.ones([1, 8], tf.int32), "input_mask": tf.ones([1, 8], tf.int32),
         "input_type_ids": tf.zeros([1, 8], tf.int32)})
  optimizer = protocol.build_optimizer(model, encoder, 1e-2, 0.8, "electra", STEPS, 0.25, 0.01)
  return model, optimizer


def dataset():
  rng = np.random.default_rng(0)
  ids = rng.integers(5, 50, [40, 8]).astype(np.int32)
  features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids)}
  labels = (ids[:, 1] > 25).astype(np.int32)
  return (tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(40, seed=3).repeat()
          .batch(8, drop_remainder=True))


def loss_fn(model, batch, progress):
  del progress  # unused
  return toy_classifier.loss(model(batch[0], training=True), batch[1])


class ExactResumeTest(tf.test.TestCase):

  def test_resumed_trial_equals_the_uninterrupted_one(self):
    log = lambda _: None
    model, optimizer = build()
    trial_steps.train(model, optimizer, dataset(), STEPS, loss_fn, log, 100, "whole", seed=7)
    expected = [w.numpy() for w in model.weights]

    checkpoints = tempfile.mkdtemp()

    def kill(step):
      raise Killed(step)

    model, optimizer = build()
    with self.assertRaises(Killed):  # killed at step 5, after the checkpoint of step 4
      trial_steps.train(model, optimizer, dataset(), STEPS, loss_fn, log, 100, "first", False,
                   checkpoints, 2, callback=kill, callback_every_steps=5, seed=7)
    logs = []
    model, optimizer = build()
    trial_steps.train(model, optimizer, dataset(), STEPS, loss_fn, logs.append, 100, "resumed", False,
                 checkpoints, 2, seed=7)
    self.assertTrue(any("resuming at step 4" in line for line in logs), logs)
    for got, want, variable in zip(model.weights, expected, model.weights):
      self.assertAllEqual(got.numpy(), want, msg=variable.name)

    # Dropout is on and seeded by the step: another trial seed gives other weights.
    model, optimizer = build()
    trial_steps.train(model, optimizer, dataset(), STEPS, loss_fn, log, 100, "other seed", seed=8)
    self.assertNotAllClose(model.weights[0].numpy(), expected[0])

  def test_a_trial_interrupted_between_checkpoints_keeps_its_last_step(self):
    """Ctrl-C during step 5 (checkpoints every 2): step 5 finishes and is saved; the resumed trial
    starts at 5 and ends bit-identical to the uninterrupted one."""
    log = lambda _: None
    model, optimizer = build()
    trial_steps.train(model, optimizer, dataset(), STEPS, loss_fn, log, 100, "whole", seed=7)
    expected = [w.numpy() for w in model.weights]

    checkpoints, logs = tempfile.mkdtemp(), []
    model, optimizer = build()
    testutil.python_ctrl_c(self)
    with self.assertRaises(KeyboardInterrupt):
      trial_steps.train(model, optimizer, SigintAt(dataset(), 5), STEPS, loss_fn, logs.append,
                        100, "first", False, checkpoints, 2, seed=7)
    self.assertIn("first: interrupted; step 5 saved, the same command resumes there", logs)
    self.assertEqual(int(optimizer.iterations), 5)  # the step in flight finished
    model, optimizer = build()
    trial_steps.train(model, optimizer, dataset(), STEPS, loss_fn, logs.append, 100, "resumed",
                      False, checkpoints, 2, seed=7)
    self.assertTrue(any("resuming at step 5" in line for line in logs), logs)
    for got, want, variable in zip(model.weights, expected, model.weights):
      self.assertAllEqual(got.numpy(), want, msg=variable.name)


class SigintAt:
  """`dataset` whose batch for step `step` raises SIGINT (Ctrl-C) as it is taken, inside the
  step (`train` takes each step's batch with `skip(done).take(...)`)."""

  def __init__(self, dataset, step):
    self.dataset, self.step, self.done = dataset, step, 0

  def skip(self, done):
    self.dataset, self.done = self.dataset.skip(done), done
    return self

  def take(self, count):
    self.dataset = self.dataset.take(count)
    return self

  def __iter__(self):
    for step, batch in enumerate(self.dataset, start=self.done + 1):
      if step == self.step:
        signal.raise_signal(signal.SIGINT)
      yield batch


class ProgressTest(tf.test.TestCase):

  def test_the_loss_sees_the_optimizer_step_over_the_last_step(self):
    """`progress` (BAM's λ under linear teacher annealing) at each step, read against the
    optimizer's own step counter: 0 at the first update, 1 at the last."""
    model, optimizer = build()
    seen = tf.Variable(tf.fill([STEPS], -1.0))

    def recording_loss(m, batch, progress):
      seen.scatter_nd_update([[optimizer.iterations]], [progress])
      return loss_fn(m, batch, progress)

    trial_steps.train(model, optimizer, dataset(), STEPS, recording_loss, lambda _: None, 100, "t")
    self.assertAllClose(seen, np.arange(STEPS) / (STEPS - 1))


class DivergenceTest(tf.test.TestCase):

  def test_a_non_finite_loss_stops_the_trial_naming_the_step(self):
    model, optimizer = build()
    nan_after = lambda m, batch, p: loss_fn(m, batch, p) * tf.constant(float("nan"))
    with self.assertRaisesRegex(ValueError, r"the training loss is nan at step 1 \(learning rate "
                                r"0\)"):
      trial_steps.train(model, optimizer, dataset(), STEPS, nan_after, lambda _: None, 100, "trial_0 of 1")



class SummaryTest(tf.test.TestCase):

  def test_median_and_spread_flat_and_nested_by_hand(self):
    devs = [{"acc": 0.5, "mnli": {"m": 1.0, "mm": 4.0}},
            {"acc": 0.9, "mnli": {"m": 3.0, "mm": 2.0}},
            {"acc": 0.7, "mnli": {"m": 2.0, "mm": 6.0}}]
    median, spread = trial_run.median_and_spread(devs)
    self.assertAllClose(median, {"acc": 0.7, "mnli": {"m": 2.0, "mm": 4.0}})
    self.assertAllClose(spread["acc"], {"mean": 0.7, "min": 0.5, "max": 0.9,
                                        "std": np.sqrt(0.08 / 3), "n": 3})
    self.assertAllClose(spread["mnli"]["mm"], {"mean": 4.0, "min": 2.0, "max": 6.0,
                                               "std": np.sqrt(8 / 3), "n": 3})


class CadenceTest(tf.test.TestCase):
  """`run_steps`' periodic actions: log every k and at the end, callback and save before the last
  step only, a callback's True stopping the loop with no save at that step."""

  def run_loop(self, num_steps, callback_result=lambda step: False):
    calls, saved, logs = [], [], []
    checkpoint = tf.train.Checkpoint(v=tf.Variable(0.0))

    def callback(step):
      calls.append(step)
      return callback_result(step)

    begin = lambda done: (lambda k: ({"loss": float(k)}, 2))
    with mock.patch.object(trial_steps.checkpoint_files, "save",
                           lambda manager, step: saved.append(step)):
      history = trial_steps.run_steps(begin, trial_steps.StepLoop(
          num_steps, logs.append, 3, "t", checkpoint, tempfile.mkdtemp(), 2, callback, 4))
    return calls, saved, [line.split()[2] for line in logs], history["loss"]

  def test_every_k_before_the_last_step(self):
    calls, saved, logged, losses = self.run_loop(8)
    self.assertEqual(calls, [4])          # not at 8, the last step
    self.assertEqual(saved, [2, 4, 6])    # not at 8
    self.assertEqual(logged, ["3/8", "6/8", "8/8"])
    self.assertEqual(losses, [float(k) for k in range(1, 9)])

  def test_a_true_callback_stops_without_saving_that_step(self):
    calls, saved, _, losses = self.run_loop(12, callback_result=lambda step: step == 8)
    self.assertEqual(calls, [4, 8])
    self.assertEqual(saved, [2, 4, 6])
    self.assertLen(losses, 8)


class InterruptTest(tf.test.TestCase):
  """Ctrl-C in a step saves the last step done (counted by a variable: one per step), unless the
  dev evaluation due at that step has not run (the resumed run could not repeat it)."""

  def interrupt(self, at_step, in_callback=False):
    testutil.python_ctrl_c(self)
    checkpoint_dir, calls = tempfile.mkdtemp(), []
    counter = tf.Variable(0.0)

    def begin(done):
      def step(k):
        counter.assign_add(1.0)
        if k == at_step and not in_callback:
          signal.raise_signal(signal.SIGINT)
        return {"loss": 0.0}, 1
      return step

    def callback(step):
      calls.append(step)
      if step == at_step and in_callback:
        signal.raise_signal(signal.SIGINT)

    with self.assertRaises(KeyboardInterrupt):
      trial_steps.run_steps(begin, trial_steps.StepLoop(
          12, lambda _: None, 100, "t", tf.train.Checkpoint(v=counter), checkpoint_dir, 2,
          callback, 4))
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    restored = tf.Variable(0.0)
    tf.train.Checkpoint(v=restored).restore(latest).assert_existing_objects_matched()
    return os.path.basename(latest), float(restored), calls

  def test_the_step_in_flight_finishes_and_is_saved(self):
    self.assertEqual(self.interrupt(5), ("ckpt-5", 5.0, [4]))

  def test_a_step_whose_evaluation_did_not_run_is_not_saved(self):
    self.assertEqual(self.interrupt(8), ("ckpt-6", 6.0, [4]))  # no evaluation at 8

  def test_an_interrupted_evaluation_leaves_the_last_checkpoint(self):
    self.assertEqual(self.interrupt(8, in_callback=True), ("ckpt-6", 6.0, [4, 8]))


if __name__ == "__main__":
  tf.test.main()
