"""run_glue end to end: a tiny pre-trained encoder fine-tuned for a few steps on RTE and STS-B."""
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.glue import task as glue
from official_rtd.interop import export
from official_rtd.modeling.layers.dropout import Dropout
from tests import testutil
from tests.training.test_trainer import tiny_export

GLUE = os.path.join(testutil.REPO, "..", "shared", "data", "glue")


def head_of(src, dst, rows, drop_last_column=False):
  with open(src, encoding="utf-8") as f:
    lines = f.read().split("\n")[:rows + 1]
  if drop_last_column:
    lines = ["\t".join(l.split("\t")[:-1]) for l in lines]
  testutil.write_text(dst, "\n".join(lines) + "\n")


@testutil.requires(GLUE)
class RunGlueTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.export_dir = tiny_export(cls.tmp)
    cls.data = {}
    for task, folder in (("rte", "RTE"), ("sts-b", "STS-B")):
      data_dir = os.path.join(cls.tmp, folder)
      os.makedirs(data_dir)
      head_of(os.path.join(GLUE, folder, "train.tsv"), os.path.join(data_dir, "train.tsv"), 64)
      head_of(os.path.join(GLUE, folder, "dev.tsv"), os.path.join(data_dir, "dev.tsv"), 40)
      cls.data[task] = data_dir
    head_of(os.path.join(GLUE, "STS-B", "dev.tsv"), os.path.join(cls.data["sts-b"], "test.tsv"),
            12, drop_last_column=True)

  def _config(self, task, model_dir, **kwargs):
    values = dict(task=task, init_checkpoint=self.export_dir, model_dir=model_dir,
                  data_dir=self.data[task], max_seq_length=64, train_batch_size=16,
                  num_train_epochs=1, num_trials=2, log_every_steps=2)
    values.update(kwargs)
    return glue.GlueConfig(**values)

  def test_rte_results_file_and_resume(self):
    model_dir = os.path.join(self.tmp, "rte")
    summary = runner_lib.Runner(self._config("rte", model_dir), log=lambda _: None).run()
    with open(os.path.join(model_dir, "eval_results.json")) as f:
      written = json.load(f)
    self.assertEqual(written, json.loads(json.dumps(summary)))
    self.assertLen(written["trials"], 2)
    self.assertEqual([t["seed"] for t in written["trials"]], [0, 1])
    accuracy = written["median"]["dev"]["accuracy"]
    self.assertBetween(accuracy, 0.0, 1.0)
    self.assertEqual(written["spread"]["dev"]["accuracy"]["n"], 2)
    self.assertEqual(written["resolved"], {"learning_rate": 3e-4, "layerwise_lr_decay": 0.8,
                                           "lr_decay_convention": "electra",
                                           "train_batch_size": 16, "num_train_epochs": 1,
                                           "num_train_steps": 4})
    self.assertEqual(written["trials"][0]["train_steps"], 4)  # 64 examples / 16, 1 epoch
    # A re-run (e.g. after a kill) reuses finished trials instead of training again.
    logs = []
    again = runner_lib.Runner(self._config("rte", model_dir, num_trials=3), log=logs.append).run()
    self.assertEqual(sum("already done" in l for l in logs), 2)
    self.assertLen(again["trials"], 3)
    # Finished, it is re-run as is: its results come back, no trial is run or read again and
    # nothing in the directory is written.
    mtimes = {os.path.join(root, name): os.stat(os.path.join(root, name)).st_mtime_ns
              for root, _, names in os.walk(model_dir) for name in names}
    logs = []
    third = runner_lib.Runner(self._config("rte", model_dir, num_trials=3), log=logs.append).run()
    self.assertEqual(third, json.loads(json.dumps(again)))
    self.assertIn(f"{model_dir} holds this run, its 3 trial(s) finished: results read back", logs)
    self.assertFalse(any("trial_" in line for line in logs), logs)
    self.assertEqual({path: os.stat(path).st_mtime_ns for path in mtimes}, mtimes)

  def test_patience_stops_a_trial_whose_dev_figure_does_not_improve(self):
    """A learning rate of 1e-12 leaves the dev predictions as they are: the evaluation at step 2
    ties step 1's (a tie is no better), so with --patience=1 the trial stops there, of 4."""
    with self.assertRaisesRegex(ValueError, "--patience=1 counts dev evaluations: give "
                                            "--eval_every_steps too"):
      self._config("rte", "unused", patience=1)
    with self.assertRaisesRegex(ValueError, r"--patience=-1 must be >= 0"):
      self._config("rte", "unused", patience=-1, eval_every_steps=1)
    logs = []
    summary = runner_lib.Runner(self._config(
        "rte", os.path.join(self.tmp, "patience"), num_trials=1, eval_every_steps=1, patience=1,
        learning_rate=1e-12), log=logs.append).run()
    trial = summary["trials"][0]
    self.assertEqual([point["step"] for point in trial["dev_curve"]], [1, 2])
    self.assertEqual((trial["stopped_by"], trial["steps_run"], trial["train_steps"]),
                     ("patience", 2, 4))
    self.assertIn("trial_0: no better dev figure in 1 evaluations; stopping at step 2 (best: "
                  "step 1)", logs)
    # The dev figures are the stopped weights', as the last evaluation saw them.
    self.assertEqual(trial["dev"], {k: v for k, v in trial["dev_curve"][-1].items() if k != "step"})

  def test_a_model_dir_never_mixes_two_runs(self):
    model_dir = os.path.join(self.tmp, "mixed")
    own_data = os.path.join(self.tmp, "RTE_own")
    shutil.copytree(self.data["rte"], own_data)
    moved_export = os.path.join(self.tmp, "export_copy")
    shutil.copytree(self.export_dir, moved_export)
    config = lambda task="rte", **kwargs: self._config(
        task, model_dir, **dict(dict(data_dir=own_data, num_trials=1), **kwargs))
    runner_lib.Runner(config(), log=lambda _: None).run()
    snapshot = lambda: {os.path.join(root, name): open(os.path.join(root, name), "rb").read()
                        for root, _, names in os.walk(model_dir) for name in names}
    before = snapshot()
    logs = []
    runner_lib.Runner(config(num_trials=2, log_every_steps=1), log=logs.append).run()  # a resume
    self.assertEqual(sum("already done" in l for l in logs), 1)
    before = snapshot()
    for kwargs, message in [
        (dict(task="sts-b", data_dir=self.data["sts-b"]),
         r"holds another run \(--data_dir .*; --task 'rte' → 'sts-b'; .*\): its results were left"),
        (dict(learning_rate=1e-3), r"--learning_rate None → 0.001"),
        (dict(init_checkpoint=moved_export), r"--init_checkpoint"),
    ]:
      with self.assertRaisesRegex(ValueError, message):
        runner_lib.Runner(config(**kwargs), log=lambda _: None).run()
    with open(os.path.join(own_data, "train.tsv"), "a", encoding="utf-8") as f:
      f.write("64\tA new premise.\tA new hypothesis.\tentailment\n")
    with self.assertRaisesRegex(ValueError, r"the content of --data_dir changed"):
      runner_lib.Runner(config(), log=lambda _: None).run()
    self.assertEqual(snapshot(), before)  # the first run's files are untouched
    # A directory with other content and no fingerprint is refused too.
    foreign = os.path.join(self.tmp, "foreign")
    os.makedirs(foreign)
    testutil.write_text(os.path.join(foreign, "checkpoint"), "x")
    with self.assertRaisesRegex(ValueError, "is not empty and has no run_fingerprint.json"):
      runner_lib.Runner(self._config("rte", foreign, num_trials=1), log=lambda _: None).run()

  def test_stsb_regression_double_unordered_and_predictions(self):
    model_dir = os.path.join(self.tmp, "stsb")
    summary = runner_lib.Runner(self._config("sts-b", model_dir, double_unordered=True,
                                             do_predict=True, num_trials=1),
                                log=lambda _: None).run()
    self.assertEqual(set(summary["median"]["dev"]), {"pearson", "spearman"})
    self.assertEqual(summary["resolved"]["num_train_epochs"], 1)
    self.assertEqual(summary["trials"][0]["train_steps"], 8)  # both orders: 128 / 16
    with open(os.path.join(model_dir, "STS-B.tsv")) as f:
      rows = f.read().strip().split("\n")
    self.assertEqual(rows[0], "index\tprediction")
    self.assertLen(rows, 13)
    for row in rows[1:]:
      self.assertBetween(float(row.split("\t")[1]), 0.0, 5.0)

  def test_regression_heads_electra_linear_and_bam_sigmoid(self):
    """STS-B alone (ELECTRA): wᵀc, the squared error on the labels; with `--protocol=bam` (BAM's
    student, as in a multi-task run): sigmoid(wᵀc) trained on labels / 5 and scored × 5."""
    loaded = export.Export(self.export_dir)
    electra = glue.GlueTask(self._config("sts-b", "/unused"), loaded, lambda _: None)
    bam = glue.GlueTask(self._config("sts-b", "/unused", protocol="bam"), loaded, lambda _: None)
    head, no_dropout = tf_keras.layers.Dense(1), Dropout(0.0)
    sequence = tf.random.normal([3, 4, 8])
    z = head(sequence[:, 0])[:, 0].numpy()
    self.assertAllClose(electra.output(head, no_dropout, sequence, None, False), z)
    self.assertAllClose(bam.output(head, no_dropout, sequence, None, False), 1 / (1 + np.exp(-z)))
    # Both read the same rows in the same order: BAM's gold is ELECTRA's / 5.
    gold = [next(iter(t.mixture_dataset(0).batch(8)))[1]["gold"][:, 0].numpy()
            for t in (electra, bam)]
    self.assertAllClose(gold[1], gold[0] / 5.0)
    self.assertTrue(set(np.round(gold[0] * 5)) - {0.0} and gold[0].max() <= 5.0)
    targets = lambda values: {"gold": tf.constant(values)[:, None], "teacher": tf.zeros([2, 1]),
                              "has_teacher": tf.zeros([2])}
    losses, units = electra.example_losses(None, tf.constant([4.0, 1.0]), None,
                                           targets([3.0, 1.5]), 1.0)
    self.assertAllClose(losses, [1.0, 0.25])
    self.assertAllClose(units, [1.0, 1.0])
    losses, _ = bam.example_losses(None, tf.constant([0.8, 0.2]), None, targets([0.6, 0.3]), 1.0)
    self.assertAllClose(losses, [0.04, 0.01])
    examples = electra.dev_splits[0][1][:2]
    predict = lambda features, label: np.array([0.5, 0.25], np.float32)
    self.assertAllClose(electra.scores(predict, examples), [0.5, 0.25])
    self.assertAllClose(bam.scores(predict, examples), [2.5, 1.25])

  def test_bad_configuration(self):
    model_dir = os.path.join(self.tmp, "bad")
    with self.assertRaisesRegex(ValueError, "exactly one of --data_dir"):
      runner_lib.Runner(self._config("rte", model_dir, tfds_data_dir="/x"))
    with self.assertRaisesRegex(ValueError, "--double_unordered applies to MRPC and STS-B"):
      runner_lib.Runner(self._config("rte", model_dir, double_unordered=True))
    with self.assertRaisesRegex(export.ExportError, "is not an encoder export"):
      runner_lib.Runner(self._config("rte", model_dir, init_checkpoint=self.tmp))
    with self.assertRaisesRegex(ValueError, "exceeds the encoder's max_position_embeddings 64"):
      runner_lib.Runner(self._config("rte", model_dir, max_seq_length=128))
    broken = os.path.join(self.tmp, "broken_export")
    shutil.copytree(self.export_dir, broken)
    with open(os.path.join(broken, "vocab.txt"), "a") as f:
      f.write("zzznewtoken\n")
    with self.assertRaisesRegex(export.ExportError, "vocab.txt does not match the encoder"):
      runner_lib.Runner(self._config("rte", model_dir, init_checkpoint=broken))


if __name__ == "__main__":
  tf.test.main()
