"""run_squad end to end: a tiny encoder fine-tuned a few steps on the real v2.0 sample."""
import dataclasses
import json
import os
import tempfile
import types

import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.squad import data as squad_data
from official_rtd.finetune.squad import task as squad
from official_rtd.interop import export
from tests import testutil
from tests import tool_server
from tests.finetune.squad.test_data import SQUAD
from tests.finetune.squad.test_data import V2
from tests.training.test_trainer import TINY


def write_export(model_dir):
  """A randomly initialised tiny encoder exported the way run_pretraining exports one."""
  vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
  encoder = export.build_encoder({"encoder": dataclasses.asdict(
      dataclasses.replace(TINY, vocab_size=vocab.size))})
  model = types.SimpleNamespace(exported_encoder=encoder, name="electra")
  return export.export_encoder(model, vocab, model_dir, max_seq_length=64)


def trimmed(path, out, paragraphs):
  """The first `paragraphs` paragraphs of each article."""
  with open(path, encoding="utf-8") as f:
    data = json.load(f)
  for article in data["data"]:
    article["paragraphs"] = article["paragraphs"][:paragraphs]
  return testutil.write_text(out, json.dumps(data))


@testutil.requires(SQUAD)
class RunSquadTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.export_dir = write_export(os.path.join(cls.tmp, "pretrain"))
    cls.data = trimmed(V2, os.path.join(cls.tmp, "v2.json"), paragraphs=3)

  def _config(self, model_dir, **kwargs):
    values = dict(train_file=self.data, predict_file=self.data, init_checkpoint=self.export_dir,
                  model_dir=model_dir, version_2_with_negative=True, max_seq_length=64,
                  doc_stride=24, max_query_length=16, train_batch_size=16, eval_batch_size=16,
                  num_train_epochs=1, beam_size=5, num_trials=2, log_every_steps=2)
    values.update(kwargs)
    return squad.SquadConfig(**values)

  def test_v2_writes_the_three_files_and_resumes(self):
    model_dir = os.path.join(self.tmp, "v2")
    logs = []
    summary = runner_lib.Runner(self._config(model_dir), log=logs.append).run()
    examples = squad_data.read_squad(self.data, version_2_with_negative=True)
    qids = {e.qid for e in examples}
    with open(os.path.join(model_dir, "predictions.json")) as f:
      predictions = json.load(f)
    with open(os.path.join(model_dir, "null_odds.json")) as f:
      null_odds = json.load(f)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
      results = json.load(f)
    self.assertEqual(set(predictions), qids)
    self.assertEqual(set(null_odds), qids)
    self.assertTrue(all(isinstance(v, str) for v in predictions.values()))
    self.assertTrue(all(isinstance(v, float) for v in null_odds.values()))
    # "" exactly where the no-answer logit is above --na_threshold; other answers are context text.
    by_qid = {e.qid: e for e in examples}
    for qid, text in predictions.items():
      self.assertEqual(text == "", null_odds[qid] > -2.75, qid)
      self.assertIn(text, by_qid[qid].context)
    for key in ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1",
                "best_exact", "best_f1", "best_f1_thresh"):
      self.assertIn(key, results)
      self.assertIn(key, results["trials"][0]["dev"])
    self.assertEqual(results["total"], len(qids))
    self.assertEqual(results["spread"]["f1"]["n"], 2)
    self.assertEqual(results, json.loads(json.dumps(summary)))
    self.assertTrue(any("step 2/" in l and "ETA" in l for l in logs))
    # The best trial's files are the top-level ones.
    with open(os.path.join(model_dir, f"trial_{results['best_trial']}", "predictions.json")) as f:
      self.assertEqual(json.load(f), predictions)
    # A re-run reuses finished trials.
    logs = []
    again = runner_lib.Runner(self._config(model_dir, num_trials=3), log=logs.append).run()
    self.assertEqual(sum("already done" in l for l in logs), 2)
    self.assertLen(again["trials"], 3)

  def test_v11_independent_head_in_bfloat16(self):
    v1 = trimmed(os.path.join(SQUAD, "train-v1.1-sample.json"),
                 os.path.join(self.tmp, "v1.json"), paragraphs=2)
    model_dir = os.path.join(self.tmp, "v1")
    summary = runner_lib.Runner(self._config(
        model_dir, train_file=v1, predict_file=v1, version_2_with_negative=False,
        joint_prediction=False, num_trials=1, mixed_precision="bfloat16"),
        log=lambda _: None).run()
    self.assertEqual(sorted(summary["median"]), ["exact_match", "f1"])
    self.assertFalse(os.path.exists(os.path.join(model_dir, "null_odds.json")))
    with open(os.path.join(model_dir, "predictions.json")) as f:
      self.assertTrue(all(v for v in json.load(f).values()))

  def test_cli_errors(self):
    bad = testutil.write_text(os.path.join(self.tmp, "bad.json"), '{"data": [}')
    for args, message in [
        ([f"--train_file={bad}", "--max_seq_length=64", "--max_query_length=16",
          "--doc_stride=24"],
         f"{bad}:1:11: not valid JSON"),
        ([f"--train_file={self.data}", "--max_seq_length=512"],
         "--max_seq_length=512 exceeds the encoder's max_position_embeddings 64"),
    ]:
      result = tool_server.run(
          ["run_squad", f"--predict_file={self.data}", f"--init_checkpoint={self.export_dir}",
           f"--model_dir={self.tmp}/cli", "--version_2_with_negative", *args], timeout=300)
      self.assertEqual(result.returncode, 1, result.stderr[-2000:])
      errors = [l for l in result.stderr.splitlines() if l.startswith("run_squad: error:")]
      self.assertLen(errors, 1, result.stderr[-2000:])
      self.assertIn(message, errors[0])


if __name__ == "__main__":
  tf.test.main()
