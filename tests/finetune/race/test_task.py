"""run_multiple_choice end to end on the real RACE files with a tiny encoder, and the one-pass
option scoring against scoring each option alone."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.race import task as multiple_choice
from official_rtd.interop import export
from tests import testutil
from tests.finetune.race.test_data import RACE
from tests.finetune.squad.test_task import write_export


class MultipleChoiceModelTest(tf.test.TestCase):

  def test_one_pass_equals_each_option_alone(self):
    export_dir = write_export(os.path.join(tempfile.mkdtemp(), "export"))
    model = multiple_choice.MultipleChoiceModel(export.load_encoder(export_dir))
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, size=[3, 4, 16]).astype(np.int32)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids)}
    logits = model(inputs)["logits"].numpy()
    self.assertEqual(logits.shape, (3, 4))
    for k in range(4):
      alone = model({name: v[:, k:k + 1] for name, v in inputs.items()})["logits"].numpy()
      self.assertAllClose(alone[:, 0], logits[:, k], atol=1e-5)
    loss = multiple_choice.options_loss({"logits": tf.constant([[0.0, np.log(3.0)]])}, [1]).numpy()
    self.assertAllClose(loss, -np.log(0.75))  # softmax over the options: 3 / (1 + 3)


@testutil.requires(RACE)
class RunMultipleChoiceTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.export_dir = write_export(os.path.join(cls.tmp, "export"))

  def _config(self, model_dir, **kwargs):
    values = dict(data_dir=RACE, init_checkpoint=self.export_dir, model_dir=model_dir,
                  train_batch_size=8, num_train_epochs=1, max_train_examples=32,
                  max_dev_examples=40, log_every_steps=100)
    values.update(kwargs)
    return multiple_choice.MultipleChoiceConfig(**values)

  def test_results_predictions_and_resume(self):
    model_dir = os.path.join(self.tmp, "race")
    logs = []
    runner = runner_lib.Runner(self._config(model_dir), logs.append)
    self.assertEqual(runner.task.max_seq_length, 64)  # 512 capped at the encoder's positions
    self.assertTrue(any("capped" in line for line in logs))
    self.assertEqual(runner.task.train_inputs["input_word_ids"].shape, (32, 4, 64))
    summary = runner.run()
    with open(os.path.join(model_dir, "eval_results.json")) as f:
      self.assertEqual(json.load(f), json.loads(json.dumps(summary)))
    self.assertEqual(summary["trials"][0]["train_steps"], 4)
    with open(os.path.join(model_dir, "predictions.jsonl")) as f:
      predictions = [json.loads(line) for line in f]
    self.assertLen(predictions, 40)
    self.assertEqual([p["id"] for p in predictions], [q.id for q in runner.task.dev_questions])
    correct = [p["prediction"] == p["answer"] for p in predictions]
    self.assertAllClose(summary["median"]["accuracy"], np.mean(correct))
    for level in ("middle", "high"):
      mine = [c for c, p in zip(correct, predictions) if p["level"] == level]
      self.assertAllClose(summary["median"][f"accuracy_{level}"], np.mean(mine))
    self.assertAllClose([sum(p["probabilities"]) for p in predictions], [1.0] * 40, atol=1e-4)
    logs = []
    again = runner_lib.Runner(self._config(model_dir, num_trials=2),
                              logs.append).run()
    self.assertEqual(sum("already done" in line for line in logs), 1)
    self.assertLen(again["trials"], 2)

  def test_shao_protocol_settings_and_layout(self):
    config = self._config(os.path.join(self.tmp, "shao"), protocol="shao", num_train_epochs=None,
                          max_seq_length=48, learning_rate=1e-4, train_splits="dev")
    runner = runner_lib.Runner(config, lambda _: None)
    self.assertEqual(runner.learning_rate, 1e-4)  # a flag given still wins
    self.assertEqual((runner.decay, runner.epochs), (1.0, 3))  # Shao's
    self.assertEqual(multiple_choice.MultipleChoice.optimizer_defaults(config),
                     {"learning_rate": 5e-5, "layerwise_lr_decay": 1.0})
    ids = runner.task.train_inputs["input_word_ids"]
    sep = runner.export.vocab.sep_id
    self.assertAllEqual((ids == sep).sum(-1), np.full(ids.shape[:2], 3))  # article|question|option

  def test_bad_configuration(self):
    with self.assertRaisesRegex(ValueError,
                                r"unknown fine-tuning task 'swag' \(--task\); one of: .*race"):
      runner_lib.Runner(self._config(self.tmp, task="swag"), lambda _: None)
    with self.assertRaisesRegex(ValueError, r"--protocol must be one of \['electra', 'shao'\]"):
      runner_lib.Runner(self._config(self.tmp, protocol="bert"), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--max_dev_examples=-1 must be >= 0"):
      runner_lib.Runner(self._config(self.tmp, max_dev_examples=-1),
                        lambda _: None)
    with self.assertRaisesRegex(ValueError, "found neither"):
      runner_lib.Runner(self._config(self.tmp, dev_split="test"),
                        lambda _: None)


if __name__ == "__main__":
  tf.test.main()
