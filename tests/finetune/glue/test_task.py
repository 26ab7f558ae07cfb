"""run_glue end to end: a tiny pre-trained encoder fine-tuned for a few steps on RTE and STS-B."""
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.finetune.glue import classifier
from official_rtd.finetune.glue import task as glue
from official_rtd.finetune import runner as runner_lib
from official_rtd.interop import export
from tests import testutil
from tests.training.test_trainer import tiny_export

GLUE = os.path.join(testutil.REPO, "..", "shared", "data", "glue")


def head_of(src, dst, rows, drop_last_column=False):
  with open(src, encoding="utf-8") as f:
    lines = f.read().split("\n")[:rows + 1]
  if drop_last_column:
    lines = ["\t".join(l.split("\t")[:-1]) for l in lines]
  testutil.write_text(dst, "\n".join(lines) + "\n")


class RegressionHeadTest(tf.test.TestCase):

  def test_bam_head_is_five_times_the_sigmoid_of_electras(self):
    """`--protocol=bam`'s STS-B head is BAM's student's: 5·sigmoid(wᵀc), trained on labels / 5."""
    encoder = export.load_encoder(tiny_export(tempfile.mkdtemp()))
    inputs = {"input_word_ids": tf.constant([[2, 9, 11, 3]]),
              "input_mask": tf.ones([1, 4], tf.int32), "input_type_ids": tf.zeros([1, 4], tf.int32)}
    linear = classifier.SequenceClassifier(encoder, 1)
    bam = classifier.SequenceClassifier(encoder, 1, regression_scale=5.0)
    linear(inputs)
    bam(inputs)
    bam.head.set_weights(linear.head.get_weights())
    z = float(linear(inputs)["predictions"][0])
    self.assertAllClose(bam(inputs)["predictions"][0], 5.0 / (1.0 + np.exp(-z)))
    outputs = {"predictions": tf.constant([4.0, 1.0])}
    self.assertAllClose(classifier.loss(outputs, [3.0, 1.5], 5.0),
                        ((1.0 / 5) ** 2 + (0.5 / 5) ** 2) / 2)
    self.assertAllClose(classifier.loss(outputs, [3.0, 1.5]), (1.0 + 0.25) / 2)


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
