"""run_tagging end to end on the real shipped sets with a tiny encoder: results, predictions in
conlleval's format, resume, CRF, and learning beyond the majority tag."""
import collections
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import tagging_data
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.tagging import task as tagging
from tests import testutil
from tests.finetune.squad.test_task import write_export

TAGGING = os.path.join(testutil.SHARED_DATA, "tagging")


def first_sentences(src, dst, count):
  """The first `count` sentences of a column file (a temporary copy for a quick test)."""
  with open(src, encoding="utf-8") as f:
    blocks = [b for b in f.read().split("\n\n") if b.strip() and "-DOCSTART-" not in b]
  return testutil.write_text(dst, "\n\n".join(blocks[:count]) + "\n")


def chunks(tags):
  """`{(type, start, end)}` of a sentence's IOB1 or IOB2 tags, by conlleval's rules."""
  out, kind, start = set(), None, 0
  for i, tag in enumerate(list(tags) + ["O"]):
    prefix, _, label = tag.partition("-")
    if kind is not None and (prefix in ("O", "B") or label != kind):
      out.add((kind, start, i))
      kind = None
    if prefix in ("B", "I") and kind is None:
      kind, start = label, i
  return out


def read_predictions(path):
  sentences, current = [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      if line.strip():
        current.append(line.split())
      elif current:
        sentences.append(current)
        current = []
  return sentences


@testutil.requires(TAGGING)
class RunTaggingTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.export_dir = write_export(os.path.join(cls.tmp, "export"))
    cls.ner_dev = first_sentences(os.path.join(TAGGING, "ner_conll2003", "eng.testa"),
                                  os.path.join(cls.tmp, "ner_dev.txt"), 60)

  def _config(self, task, model_dir, **kwargs):
    values = dict(task=task, data_dir=os.path.join(TAGGING, tagging_data.TASKS[task].folder),
                  init_checkpoint=self.export_dir, model_dir=model_dir, max_seq_length=64,
                  train_batch_size=16, num_train_epochs=1, max_train_examples=64,
                  log_every_steps=100)
    values.update(kwargs)
    return tagging.TaggingConfig(**values)

  def test_pos_learns_writes_predictions_and_resumes(self):
    model_dir = os.path.join(self.tmp, "pos")
    config = self._config("pos", model_dir, max_train_examples=640, num_train_epochs=2,
                          learning_rate=1e-3)
    runner = runner_lib.Runner(config, log=lambda _: None)
    summary = runner.run()
    with open(os.path.join(model_dir, "eval_results.json")) as f:
      self.assertEqual(json.load(f), json.loads(json.dumps(summary)))
    self.assertEqual(summary["primary_metric"], "accuracy")
    # Long sentences take two 64-piece windows: steps count windows (/ 16, 2 epochs).
    self.assertGreater(len(runner.task.members[0].train_windows), 640)
    self.assertEqual(summary["trials"][0]["train_steps"], len(runner.task.members[0].train_windows) // 16 * 2)
    _, dev = tagging_data.load_task(tagging_data.TASKS["pos"],
                                    os.path.join(TAGGING, "pos_ptb"))
    gold = [t for s in dev for t in s.tags]
    majority = collections.Counter(gold).most_common(1)[0][1] / len(gold)
    accuracy = summary["median"]["accuracy"]
    self.assertGreater(accuracy, majority + 0.2)  # learnt more than the most frequent tag
    # predictions.txt: `word gold predicted`, one sentence per block, the accuracy it reports.
    written = read_predictions(os.path.join(model_dir, "predictions.txt"))
    self.assertEqual([[w for w, _, _ in s] for s in written], [list(s.words) for s in dev])
    self.assertEqual([[g for _, g, _ in s] for s in written], [list(s.tags) for s in dev])
    predicted = [p for s in written for _, _, p in s]
    self.assertAllClose(np.mean([g == p for g, p in zip(gold, predicted)]), accuracy)
    # A re-run with more trials reuses the finished one; other settings are another run.
    with self.assertRaisesRegex(ValueError, r"holds another run \(--max_train_examples 640 → 32"):
      runner_lib.Runner(self._config("pos", model_dir, num_trials=2, max_train_examples=32,
                                     num_train_epochs=2, learning_rate=1e-3,
                                     allow_unseen_dev_tags=True), print).run()
    logs = []
    again = runner_lib.Runner(
        self._config("pos", model_dir, num_trials=2, max_train_examples=640, num_train_epochs=2,
                     learning_rate=1e-3), logs.append).run()
    self.assertEqual(sum("already done" in line for line in logs), 1)
    self.assertLen(again["trials"], 2)
    self.assertEqual(again["spread"]["accuracy"]["n"], 2)

  def test_ner_crf_bioes_and_conlleval_file(self):
    model_dir = os.path.join(self.tmp, "ner")
    runner = runner_lib.Runner(self._config("ner", model_dir, crf=True,
                                            dev_file=self.ner_dev), log=lambda _: None)
    labels = runner.task.members[0].labels
    self.assertTrue(any(t.startswith("S-") for t in labels))  # trained on BIOES
    summary = runner.run()
    self.assertEqual(summary["primary_metric"], "f1")
    written = read_predictions(os.path.join(model_dir, "predictions.txt"))
    self.assertLen(written, 60)
    predicted_tags = {p for s in written for _, _, p in s}
    self.assertFalse(any(t[:2] in ("S-", "E-") for t in predicted_tags))  # written as IOB2
    # Span F1 counted here with conlleval's chunk rules (independent of metrics.py): a chunk
    # starts at B-, or at I- after O or another type; the gold file is IOB1.
    gold = {(n, c) for n, s in enumerate(written) for c in chunks([g for _, g, _ in s])}
    found = {(n, c) for n, s in enumerate(written) for c in chunks([p for _, _, p in s])}
    correct = len(gold & found)
    precision, recall = correct / max(len(found), 1), correct / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
    self.assertAllClose(summary["median"]["f1"], f1)
    self.assertEqual({k for k in summary["median"] if k.startswith("f1_")},
                     {f"f1_{kind}" for _, (kind, _, _) in gold | found})

  def test_bad_configuration(self):
    with self.assertRaisesRegex(ValueError, "--tag_scheme must be one of"):
      runner_lib.Runner(self._config("ner", self.tmp, tag_scheme="bilou"), lambda _: None)
    with self.assertRaisesRegex(ValueError, "exceeds the encoder's max_position_embeddings"):
      runner_lib.Runner(self._config("pos", self.tmp, max_seq_length=512), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--protocol=shao is Shao's PTB part-of-speech "
                                "protocol; --task=ner has none"):
      runner_lib.Runner(self._config("ner", self.tmp, protocol="shao"), lambda _: None)
    shao = runner_lib.Runner(self._config("pos", self.tmp, protocol="shao", num_train_epochs=None,
                                          allow_unseen_dev_tags=True), lambda _: None)
    self.assertEqual((shao.learning_rate, shao.decay, shao.epochs), (5e-5, 1.0, 3))
    with self.assertRaisesRegex(ValueError, "--write_train_predictions writes a softmax "
                                "teacher's word logits; a CRF's"):
      runner_lib.Runner(self._config("pos", self.tmp, crf=True, write_train_predictions=True),
                        lambda _: None)
    with self.assertRaisesRegex(ValueError, "--window_stride=-1 must be >= 0"):
      runner_lib.Runner(self._config("pos", self.tmp, window_stride=-1), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--carve_dev_sentences=9000"):
      runner_lib.Runner(self._config("chunk", self.tmp, carve_dev_sentences=9000),
                        lambda _: None)
    # NER on the POS files: the first POS tag is refused with its file and line.
    pos_dir = os.path.join(TAGGING, "pos_ptb")
    with self.assertRaisesRegex(ValueError, r"train\.tsv:1: tag '\w+' is not a span tag"):
      runner_lib.Runner(self._config("ner", self.tmp, data_dir=pos_dir,
                                     train_file="train.tsv", dev_file="dev.tsv"),
                        lambda _: None)

  def test_dev_tags_unseen_in_training_are_refused_or_allowed(self):
    dev = testutil.write_text(os.path.join(self.tmp, "dev_unseen.tsv"),
                              "The\tDT\ncat\tNN\n...\tNEWTAG\n")
    with self.assertRaisesRegex(ValueError, r"dev tags never seen in the training sentences \(the "
                                r"--max_train_examples=64 used\): NEWTAG \(1\)"):
      runner_lib.Runner(self._config("pos", self.tmp, dev_file=dev), lambda _: None)
    logged = []
    runner_lib.Runner(self._config("pos", self.tmp, dev_file=dev,
                                   allow_unseen_dev_tags=True), logged.append)
    self.assertTrue(any("counted as errors: NEWTAG (1)" in line for line in logged), logged)


if __name__ == "__main__":
  tf.test.main()
