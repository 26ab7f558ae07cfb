"""The task contract: a new head task written in this file alone (registered here, nothing else
touched) runs alone through `runner.Runner`'s whole lifecycle as a one-member run, takes part in a
multi-task (BAM) run with a GLUE task through the same methods, and the export is read once for
all trials."""
import dataclasses
import json
import os
import tempfile
from unittest import mock

import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import configs
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune import task as task_lib
from official_rtd.interop import export as export_lib
from tests import testutil
from tests.finetune.glue.test_task import GLUE
from tests.finetune.glue.test_task import head_of
from tests.training.test_trainer import tiny_export

SEVEN = 7  # the toy task: does the sequence hold token 7?


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyConfig(configs.FinetuneConfig):
  task: str = "toy_has_seven"
  rows: int = 64
  write_train_predictions: bool = False


@task_lib.register("toy_has_seven")
class HasSeven(task_lib.Head):
  """Binary classification of random id sequences by whether token 7 occurs, as a head on
  `[CLS]`; run alone it also writes each dev example's predicted class. No teacher."""

  default_epochs = 2
  published = ("dev_predictions.json",)
  num_outputs = 2

  @classmethod
  def member_config(cls, config, name):
    return ToyConfig(**configs.shared_settings(config), task=name, rows=48)

  def __init__(self, config: ToyConfig, export, log, name=None):
    super().__init__(config, export, log, name)
    self.rows = config.rows
    self.num_train = self.rows
    rng = np.random.default_rng(0)
    ids = rng.integers(8, 40, [self.rows + 32, config.max_seq_length]).astype(np.int32)
    ids[::2, 3] = SEVEN
    ids[:, 0] = export.vocab.cls_id
    self.inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                   "input_type_ids": np.zeros_like(ids)}
    self.labels = (ids == SEVEN).any(1).astype(np.int32)

  def _rows(self, part):
    rows = slice(0, self.rows) if part == "train" else slice(self.rows, None)
    return {k: v[rows] for k, v in self.inputs.items()}, self.labels[rows]

  def mixture_dataset(self, seed):
    features, labels = self._rows("train")
    return (tf.data.Dataset.from_tensor_slices((features, {"label": labels}))
            .shuffle(self.rows, seed=seed).repeat())

  def output(self, head, dropout, sequence_output, inputs, training):
    return head(dropout(sequence_output[:, 0], training=training))

  def example_losses(self, head, output, features, targets, lam):
    del head, features, lam  # no teacher
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(targets["label"], output)
    return losses, tf.ones_like(losses)

  def evaluate_head(self, predict, head, trial_dir):
    features, labels = self._rows("dev")
    predicted = predict(features, "toy").argmax(-1)
    if trial_dir is not None:
      with open(os.path.join(trial_dir, "dev_predictions.json"), "w", encoding="utf-8") as f:
        json.dump(predicted.tolist(), f)
    accuracy = float((predicted == labels).mean())
    return {"accuracy": accuracy}, accuracy

  def summary_fields(self, median):
    return {"task": "toy_has_seven"}


class TaskContractTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.export_dir = tiny_export(tempfile.mkdtemp())

  def test_a_task_in_one_module_runs_through_the_runner(self):
    model_dir = os.path.join(self.get_temp_dir(), "toy")
    config = ToyConfig(init_checkpoint=self.export_dir, model_dir=model_dir, max_seq_length=8,
                       train_batch_size=16, num_trials=3, log_every_steps=100)
    runner = runner_lib.Runner(config, log=lambda _: None)
    self.assertEqual([type(m) for m in runner.task.members], [HasSeven])  # a one-member run
    summary = runner.run()
    self.assertEqual(summary["task"], "toy_has_seven")
    self.assertEqual(summary["resolved"]["num_train_steps"], 64 // 16 * 2)  # 2 epochs of 4
    self.assertLen(summary["trials"], 3)
    accuracies = [t["dev"]["accuracy"] for t in summary["trials"]]
    self.assertEqual(summary["best_trial"], int(np.argmax(accuracies)))
    self.assertEqual(summary["median"]["accuracy"], float(np.median(accuracies)))
    with open(os.path.join(model_dir, "dev_predictions.json"), encoding="utf-8") as f:
      published = f.read()
    with open(os.path.join(model_dir, f"trial_{summary['best_trial']}", "dev_predictions.json"),
              encoding="utf-8") as f:
      self.assertEqual(published, f.read())

  def test_the_task_joins_a_multi_task_run_with_a_glue_task(self):
    reason = testutil.missing_data_reason(GLUE)
    if reason:
      self.skipTest(reason)
    data = os.path.join(self.get_temp_dir(), "glue")
    os.makedirs(os.path.join(data, "RTE"))
    for split, rows in (("train", 64), ("dev", 24)):
      head_of(os.path.join(GLUE, "RTE", f"{split}.tsv"), os.path.join(data, "RTE", f"{split}.tsv"),
              rows)
    config = configs.GlueConfig(init_checkpoint=self.export_dir, model_dir=os.path.join(
        self.get_temp_dir(), "bam"), tasks="toy_has_seven,rte", data_dir=data, max_seq_length=8,
                                train_batch_size=16, num_trials=1, num_train_epochs=1)
    runner = runner_lib.Runner(config, log=lambda _: None)
    self.assertIsInstance(runner.task.members[0], HasSeven)
    summary = runner.run()
    self.assertEqual(summary["tasks"], ["toy_has_seven", "rte"])
    p_toy = 48 ** 0.75 / (48 ** 0.75 + 64 ** 0.75)  # |D_τ|^0.75, normalised
    self.assertAllClose(summary["sampling_probabilities"],
                        {"toy_has_seven": p_toy, "rte": 1 - p_toy})
    self.assertEqual(summary["resolved"]["num_train_steps"], (48 + 64) // 16)  # one epoch
    # The member's own config (48 rows), and no file of its own in the trial's folder.
    self.assertEqual(runner.task.members[0].config.rows, 48)
    self.assertEmpty([f for f in os.listdir(os.path.join(config.model_dir, "trial_0"))
                      if f.startswith("dev_predictions")])
    dev = summary["trials"][0]["dev"]
    toy = dev["toy_has_seven"]["accuracy"]
    self.assertIn(toy, [k / 32 for k in range(33)])  # a fraction of the 32 dev rows
    self.assertAlmostEqual(dev["tasks"]["average"], 100 * (toy + dev["rte"]["accuracy"]) / 2)

  def test_a_head_without_a_member_config_is_named(self):
    with self.assertRaisesRegex(NotImplementedError, "Head defines no member_config: "
                                "--tasks=toy cannot join a multi-task run yet"):
      task_lib.Head.member_config(configs.GlueConfig(init_checkpoint="", model_dir=""), "toy")

  def test_the_export_is_read_once_for_all_trials(self):
    reads, loads = [], []
    real_read, real_load = tf.train.Checkpoint.read, vocab_lib.load_vocab

    def counting_read(checkpoint, path, *args, **kwargs):
      if str(path).startswith(self.export_dir):
        reads.append(path)
      return real_read(checkpoint, path, *args, **kwargs)

    def counting_load(path):
      loads.append(path)
      return real_load(path)

    config = ToyConfig(init_checkpoint=self.export_dir, model_dir=os.path.join(
        self.get_temp_dir(), "once"), max_seq_length=8, train_batch_size=16, num_trials=2,
                       num_train_epochs=0.5)
    with mock.patch.object(tf.train.Checkpoint, "read", counting_read), \
        mock.patch.object(vocab_lib, "load_vocab", counting_load):
      summary = runner_lib.Runner(config, log=lambda _: None).run()
    self.assertLen(summary["trials"], 2)
    self.assertLen(reads, 1)
    self.assertLen(loads, 1)

  def test_every_trial_starts_from_the_exported_weights(self):
    export = export_lib.Export(self.export_dir)
    first = export.encoder()
    first.weights[0].assign(first.weights[0] + 1.0)  # a trial's training changes its copy
    second = export.encoder()
    reference = export_lib.load_encoder(self.export_dir)
    for got, want in zip(second.weights, reference.weights):
      self.assertAllEqual(got, want, msg=got.name)
    random = export.encoder(restore=False)
    self.assertNotAllClose(random.weights[0], reference.weights[0])

  def test_a_task_that_cannot_join_a_multi_task_run_is_refused_by_name(self):
    from official_rtd.finetune import all_tasks  # pylint: disable=g-import-not-at-top,unused-import
    self.assertIs(task_lib.get_multitask("TOY_HAS_SEVEN"), HasSeven)
    with self.assertRaisesRegex(ValueError, r"--tasks names 'squad', which cannot join a "
                                r"multi-task run; known: .*rte.*toy_has_seven"):
      task_lib.get_multitask("squad")

  def test_help_reads_each_tasks_default_epochs_from_the_registry(self):
    from official_rtd.tools import finetune_flags  # pylint: disable=g-import-not-at-top
    from official_rtd.finetune import all_tasks  # pylint: disable=g-import-not-at-top,unused-import
    self.assertEqual(task_lib.epochs_defaults_text(ToyConfig), "2")  # HasSeven's, this file's
    # ELECTRA's GLUE protocol: 3 epochs, 10 for RTE and STS-B; BAM (§3.3): 6 for several tasks.
    self.assertEqual(task_lib.epochs_defaults_text(configs.GlueConfig),
                     "3 (6: several --tasks; 10: rte, sts-b)")
    self.assertEqual(finetune_flags.epochs_defaults(configs.TaggingConfig), "3; --protocol=shao 3.")
    # Our tools' help reads TensorFlow-free data (configs.EPOCHS_HELP): it says what the registry
    # computes, for every tool.
    for name, text in configs.EPOCHS_HELP.items():
      self.assertEqual(finetune_flags.epochs_defaults_from_registry(getattr(configs, name)), text)
    spec = finetune_flags.common_spec(ToyConfig, {})
    epochs = next(f for f in spec.flags() if f.name == "num_train_epochs")
    self.assertEqual(epochs.help, "Epochs over the training set; unset: the task's default, 2. "
                                  "(> 0)")

  def test_unknown_and_duplicate_names(self):
    with self.assertRaisesRegex(ValueError, r"unknown fine-tuning task 'nope' \(--task\); "
                                r"one of: .*toy_has_seven"):
      task_lib.get("nope")
    with self.assertRaisesRegex(ValueError, "'toy_has_seven' is registered twice"):
      task_lib.register("toy_has_seven")(type("Other", (task_lib.Head,), {}))


if __name__ == "__main__":
  tf.test.main()


class TaskNamesTest(tf.test.TestCase):

  def test_names_are_case_insensitive_as_glue_spells_them(self):
    from official_rtd.finetune.glue import \
        task as glue  # pylint: disable=g-import-not-at-top,unused-import
    for spelled, name in (("RTE", "rte"), ("SST-2", "sst-2"), ("STS-B", "sts-b"),
                          ("CoLA", "cola")):
      config = configs.GlueConfig(task=spelled, init_checkpoint="x", model_dir="y")
      self.assertEqual(config.task, name)
      self.assertIs(task_lib.get(spelled), task_lib.get(name))
    self.assertEqual(configs.GlueConfig(tasks="RTE,MRPC", init_checkpoint="x",
                                        model_dir="y").tasks, "rte,mrpc")
    with self.assertRaises(ValueError) as raised:
      task_lib.get("nope")
    message = str(raised.exception)
    self.assertIn("unknown fine-tuning task 'nope' (--task); one of: ", message)
    self.assertNotIn("registers", message)  # the names only
    self.assertIn("rte", message)
