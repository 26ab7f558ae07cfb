"""run_cvt end to end on the real tagging sets and the shipped corpus sample with a tiny model:
results, predictions, resume of a killed run, multi-task, baselines, encoder initialisation."""
import json
import os
import shutil
import tempfile
from unittest import mock

import numpy as np
import tensorflow as tf

from official_rtd.cvt import run_dir
from official_rtd.cvt import runner
from official_rtd.data import conllu
from official_rtd.data import tagging_data
from official_rtd.interop import export
from tests import testutil
from tests.cvt.test_data import SAMPLE
from tests.data.test_tagging_data import TAGGING
from tests.finetune.squad.test_task import write_export


@testutil.requires(TAGGING)
class RunCvtTest(tf.test.TestCase):

  def config(self, model_dir, **kwargs):
    values = dict(tasks="chunk", data_dir=TAGGING, model_dir=model_dir, unlabeled_data=SAMPLE,
                  word_dim=24, char_dim=8, lstm1_size=24, lstm2_size=16, projection_size=16,
                  hidden_size=16, train_steps=6, train_batch_size=16, max_train_sentences=64,
                  eval_every_steps=0, save_checkpoints_steps=2, log_every_steps=1,
                  vocab_unlabeled_sentences=2000)  # the sample's sentences, not 100 passes of it
    values.update(kwargs)
    return runner.CvtRunConfig(**values)

  def test_multitask_cvt_killed_and_resumed(self):
    model_dir = os.path.join(tempfile.mkdtemp(), "cvt")
    config = self.config(model_dir, tasks="chunk,pos", eval_every_steps=4)

    def killing_log(line):
      if "step 3/6" in line:
        raise KeyboardInterrupt

    with self.assertRaises(KeyboardInterrupt):
      runner.CvtRunner(config, killing_log).run()
    logs = []
    summary = runner.CvtRunner(config, logs.append).run()
    # Interrupted at step 3's log line: step 3 was saved on the way out (checkpoints every 2).
    self.assertTrue(any("resuming at step 3" in line for line in logs), logs)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
      self.assertEqual(json.load(f), json.loads(json.dumps(summary)))
    self.assertEqual(summary["primary_metrics"], {"chunk": "f1", "pos": "accuracy"})
    dev = summary["trials"][0]["dev"]
    self.assertBetween(dev["chunk"]["f1"], 0.0, 1.0)
    self.assertBetween(dev["pos"]["accuracy"], 0.0, 1.0)
    self.assertEqual([p["step"] for p in summary["trials"][0]["dev_curve"]], [4, 6])
    self.assertTrue(any("unlabeled loss=" in line for line in logs))
    # conlleval-style predictions for every dev sentence, IOB2 for chunking.
    with open(os.path.join(model_dir, "trial_0", "predictions_chunk.txt")) as f:
      blocks = [b for b in f.read().split("\n\n") if b.strip()]
    self.assertLen(blocks, 1000)  # chunk's carved dev set
    self.assertFalse(any(line.split()[2][:2] in ("S-", "E-")
                         for b in blocks for line in b.splitlines()))
    self.assertTrue(os.path.exists(os.path.join(model_dir, "trial_0", "model.index")))
    with open(os.path.join(model_dir, "vocab.json")) as f:  # what reading the model back needs
      saved = json.load(f)
    self.assertEqual(sorted(saved["tasks"]), ["chunk", "pos"])
    self.assertIn("B-NP", saved["tasks"]["chunk"]["tags"])
    self.assertEqual(saved["model"]["word_dim"], 24)
    self.assertEqual(saved["words"]["<removed>"], 2)
    # Another run into this directory is refused before anything is written.
    before = {n: os.path.getmtime(os.path.join(model_dir, n)) for n in os.listdir(model_dir)}
    with self.assertRaisesRegex(ValueError, r"holds another run \(--mode 'cvt' → 'supervised'"):
      runner.CvtRunner(self.config(model_dir, tasks="chunk,pos", eval_every_steps=4,
                                   mode="supervised"), lambda _: None).run()
    self.assertEqual(before, {n: os.path.getmtime(os.path.join(model_dir, n))
                              for n in os.listdir(model_dir)})

  def test_baselines_and_encoder_initialisation(self):
    tmp = tempfile.mkdtemp()
    supervised = runner.CvtRunner(self.config(os.path.join(tmp, "s"), mode="supervised",
                                              unlabeled_data="", train_steps=2),
                                  lambda _: None).run()
    self.assertEqual(supervised["mode"], "supervised")
    logs = []
    runner.CvtRunner(self.config(os.path.join(tmp, "w"), mode="word_dropout", train_steps=2,
                                 unlabeled_start_step=1), logs.append).run()
    # The first step is labeled only (--unlabeled_start_step=1), the second has both.
    first, second = ([line for line in logs if f"step {k}/2 " in line][0] for k in (1, 2))
    self.assertNotIn("unlabeled loss=", first)
    self.assertIn("unlabeled loss=", second)
    with self.assertRaisesRegex(ValueError, r"--unlabeled_start_step=2 must be in \[0, "
                                r"--train_steps=2\)"):
      runner.CvtRunner(self.config(tmp, train_steps=2, unlabeled_start_step=2), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--unlabeled_start_step applies to --mode=cvt or "
                                "word_dropout, not --mode=supervised"):
      runner.CvtRunner(self.config(tmp, mode="supervised", unlabeled_start_step=1),
                       lambda _: None)
    export_dir = write_export(os.path.join(tmp, "export"))  # token embeddings of size 64
    initialised = runner.CvtRunner(self.config(os.path.join(tmp, "e"), word_dim=64,
                                               init_from_encoder=export_dir, train_steps=1),
                                   lambda _: None)
    table = export.load_encoder(export_dir).embeddings.embedding_table.numpy()
    index = initialised.inputs.vocab.words["the"]
    from official_rtd.data import tokenizer as tokenizer_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
    pieces = tokenizer_lib.WordPieceTokenizer(vocab_lib.load_vocab(
        os.path.join(export_dir, "vocab.txt"))).tokenize_to_lists(["the"])[0]
    self.assertAllClose(initialised.inputs.embeddings[index], table[pieces].mean(0))
    with self.assertRaisesRegex(ValueError, "token embeddings are 64-d but --word_dim=24"):
      runner.CvtRunner(self.config(tmp, init_from_encoder=export_dir), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--mode=cvt needs --unlabeled_data"):
      runner.CvtRunner(self.config(tmp, unlabeled_data=""), lambda _: None)
    glove = testutil.write_text(os.path.join(tmp, "glove.txt"), "the 0.1 0.2\n")
    with self.assertRaisesRegex(ValueError, "glove.txt holds 2-d vectors but --word_dim=24"):
      runner.CvtRunner(self.config(tmp, word_embeddings=glove), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--train_steps=0 must be >= 1"):
      runner.CvtRunner(self.config(tmp, train_steps=0), lambda _: None)
    with self.assertRaisesRegex(ValueError, "must name each task once"):
      runner.CvtRunner(self.config(tmp, tasks="chunk,chunk"), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--mode must be one of"):
      runner.CvtRunner(self.config(tmp, mode="vat"), lambda _: None)
    self.assertTrue(np.isfinite(supervised["median"]["chunk"]["f1"]))


  def test_missing_or_empty_data_is_named(self):
    tmp = tempfile.mkdtemp()
    with self.assertRaisesRegex(FileNotFoundError, r"chunk: .*train.txt not found \(the data "
                                r"folder must hold the task's train.txt, e\.g\. "
                                r"\.\./shared/data/tagging/chunk_conll2000\)"):
      runner.CvtRunner(self.config(os.path.join(tmp, "m"), data_dir=tmp), lambda _: None)
    for name in ("x-ud-train.conllu", "x-ud-dev.conllu"):
      testutil.write_text(os.path.join(tmp, name), "")
    with self.assertRaisesRegex(conllu.ConlluError, r"x-ud-train.conllu holds no sentence"):
      runner.CvtRunner(self.config(os.path.join(tmp, "m"), tasks="dep", data_dir=tmp),
                       lambda _: None)
    testutil.write_text(os.path.join(tmp, "train.txt"), "\n\n")
    with self.assertRaisesRegex(ValueError, r"train.txt: no sentences"):
      runner.CvtRunner(self.config(os.path.join(tmp, "m"), data_dir=tmp), lambda _: None)

  def test_patience_stops_at_the_dev_selected_step(self):
    """With learning rate 0 the dev figure never improves after the first evaluation: the
    trial stops `patience` evaluations later and reports the first one (its weights kept)."""
    model_dir = os.path.join(tempfile.mkdtemp(), "patience")
    logs = []
    summary = runner.CvtRunner(self.config(model_dir, mode="supervised", unlabeled_data="",
                                           learning_rate=0.0, train_steps=20, eval_every_steps=2,
                                           patience=2, save_checkpoints_steps=0), logs.append).run()
    trial = summary["trials"][0]
    self.assertEqual([p["step"] for p in trial["dev_curve"]], [2, 4, 6])
    self.assertEqual((trial["best_step"], trial["steps_run"]), (2, 6))
    self.assertEqual(trial["dev"], {k: v for k, v in trial["dev_curve"][0].items() if k != "step"})
    self.assertTrue(any("stopping at step 6 (best: step 2)" in line for line in logs), logs)
    self.assertEqual(trial["stopped_by"], "patience")
    self.assertFalse(os.path.exists(os.path.join(model_dir, "trial_0", "checkpoint")))
    # Converged: a larger budget keeps the trial as it is.
    logs.clear()
    again = runner.CvtRunner(self.config(model_dir, mode="supervised", unlabeled_data="",
                                         learning_rate=0.0, train_steps=40, eval_every_steps=2,
                                         patience=2, save_checkpoints_steps=0), logs.append).run()
    self.assertEqual(again["trials"], summary["trials"])
    self.assertTrue(any("1 trial(s) finished: results read back" in line for line in logs), logs)

  def test_a_trial_begun_with_length_sorted_batches_is_not_continued(self):
    """A run of an earlier version (vocab.json without `labeled_batches`) killed mid-trial is
    refused, naming the trial, nothing written; a finished one is still read back."""
    model_dir = os.path.join(tempfile.mkdtemp(), "old")
    config = self.config(model_dir, mode="supervised", unlabeled_data="", train_steps=4)

    def killing_log(line):
      if "step 3/4" in line:
        raise KeyboardInterrupt

    with self.assertRaises(KeyboardInterrupt):
      runner.CvtRunner(config, killing_log).run()
    vocab_path = os.path.join(model_dir, "vocab.json")
    with open(vocab_path) as f:
      vocab = json.load(f)
    self.assertEqual(vocab.pop("labeled_batches"), "random")
    with open(vocab_path, "w") as f:
      json.dump(vocab, f)  # as an earlier version wrote it
    def contents():
      return {os.path.join(root, name): os.path.getmtime(os.path.join(root, name))
              for root, _, names in os.walk(model_dir) for name in names}
    before = contents()
    with self.assertRaisesRegex(ValueError, "trial_0 began with length-sorted labeled batches"):
      runner.CvtRunner(config, lambda _: None).run()
    self.assertEqual(before, contents())

  def test_a_finished_run_is_read_back_without_its_data(self):
    """Re-running a finished run returns its recorded results without reading the data again
    (the inputs are never built); another run's settings in that directory are still refused."""
    model_dir = os.path.join(tempfile.mkdtemp(), "done")
    config = self.config(model_dir, mode="supervised", unlabeled_data="", train_steps=2)
    summary = runner.CvtRunner(config, lambda _: None).run()
    with mock.patch.object(runner.inputs_lib, "CvtInputs",
                           side_effect=AssertionError("inputs built")):
      again = runner.CvtRunner(config, lambda _: None).run()
      self.assertEqual(json.loads(json.dumps(summary)), again)
      # A larger budget continues a budget-bound trial: its inputs are needed.
      with self.assertRaisesRegex(AssertionError, "inputs built"):
        runner.CvtRunner(self.config(model_dir, mode="supervised", unlabeled_data="",
                                     train_steps=4), lambda _: None)
    with self.assertRaisesRegex(ValueError, r"holds another run \(--lstm1_size 24 → 32"):
      runner.CvtRunner(self.config(model_dir, mode="supervised", unlabeled_data="",
                                   train_steps=2, lstm1_size=32), lambda _: None).run()

  def test_a_raised_budget_continues_a_trial_that_ended_at_its_budget(self):
    """A trial that ran out of steps keeps its last checkpoint; the same run with a larger
    --train_steps continues it from there (not from step 0) and extends its dev curve. A lower
    budget, or a trial without a checkpoint (an earlier version's), is refused, nothing written."""
    model_dir = os.path.join(tempfile.mkdtemp(), "budget")

    def config(train_steps):
      return self.config(model_dir, mode="supervised", unlabeled_data="",
                         train_steps=train_steps, eval_every_steps=2)

    first = runner.CvtRunner(config(4), lambda _: None).run()["trials"][0]
    self.assertEqual((first["stopped_by"], first["steps_run"]), ("budget", 4))
    checkpoint_dir = os.path.join(model_dir, "trial_0", "checkpoint")
    self.assertEndsWith(tf.train.latest_checkpoint(checkpoint_dir), "ckpt-4")
    logs = []
    longer = runner.CvtRunner(config(8), logs.append).run()
    trial = longer["trials"][0]
    self.assertEqual([p["step"] for p in trial["dev_curve"]], [2, 4, 6, 8])
    self.assertEqual(trial["dev_curve"][:2], first["dev_curve"])
    self.assertEqual((trial["train_steps"], trial["steps_run"]), (8, 8))
    self.assertEqual(longer["flags"]["train_steps"], 8)
    self.assertTrue(any("raised from 4 to 8" in line for line in logs), logs)
    self.assertTrue(any("resuming at step 4" in line for line in logs), logs)
    stepped = [int(line.split("step ")[1].split("/")[0]) for line in logs if "/8 labeled" in line]
    self.assertEqual(stepped, [5, 6, 7, 8])  # continued, not started again
    self.assertEndsWith(tf.train.latest_checkpoint(checkpoint_dir), "ckpt-8")
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(checkpoint_dir))
    self.assertEqual(reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"), 8)
    self.assertEqual(reader.get_tensor("ema_updates/.ATTRIBUTES/VARIABLE_VALUE"), 8)

    def contents():
      return {os.path.join(root, name): os.path.getmtime(os.path.join(root, name))
              for root, _, names in os.walk(model_dir) for name in names}
    before = contents()
    with self.assertRaisesRegex(ValueError, r"--train_steps 8 → 6 \(a run's budget can be "
                                            r"raised, not lowered\)"):
      runner.CvtRunner(config(6), lambda _: None).run()
    self.assertEqual(before, contents())
    shutil.rmtree(checkpoint_dir)
    before = contents()
    with self.assertRaisesRegex(ValueError, r"trial_0 in .*budget ended at its budget of 8 steps "
                                            r"without keeping a checkpoint"):
      runner.CvtRunner(config(10), lambda _: None).run()
    self.assertEqual(before, contents())

  def test_labeled_batches_mix_lengths_and_unlabeled_ones_group_them(self):
    """Labeled batches are random (length-sorted ones stalled CVT's parser), each sentence once
    an epoch; unlabeled ones group similar lengths (less padding)."""
    inputs = runner.inputs_lib.CvtInputs(self.config(tempfile.mkdtemp(), max_train_sentences=512,
                                                     train_batch_size=32), lambda _: None)
    lengths = np.array([len(w) for w, _ in inputs.encoded["chunk"]])
    labeled = inputs.labeled_batches(0)
    batches = [next(labeled)[1]["lengths"] for _ in range(16)]  # one epoch: 512 / 32
    self.assertCountEqual(np.concatenate(batches), lengths)
    within = np.mean([b.std() for b in batches])
    self.assertGreater(within, 0.7 * lengths.std())  # length-sorted batches: ~0.1
    unlabeled = inputs.unlabeled_batches(0)
    grouped = [next(unlabeled)["lengths"] for _ in range(16)]
    self.assertLess(np.mean([b.std() for b in grouped]),
                    0.2 * np.concatenate(grouped).std())

  def test_the_vocabulary_reads_a_small_corpus_once(self):
    """--vocab_min_count counts real occurrences: a corpus shorter than
    --vocab_unlabeled_sentences is not read again (a word seen once used to reach any count)."""
    corpus = testutil.write_text(os.path.join(tempfile.mkdtemp(), "u.txt"),
                                 "The zebra ran home.\n" + "The okapi sat down.\n" * 3)
    logs = []
    built = runner.CvtRunner(self.config(tempfile.mkdtemp(), unlabeled_data=corpus,
                                         vocab_min_count=2, max_train_sentences=8,
                                         train_batch_size=4), logs.append)  # 4 fill a batch
    self.assertIn("okapi", built.inputs.vocab.words)
    self.assertNotIn("zebra", built.inputs.vocab.words)
    self.assertTrue(any("4 unlabeled sentences read for the vocabulary" in l for l in logs), logs)

  def test_a_trained_tagger_beats_the_most_frequent_tag(self):
    """POS after 80 supervised steps: dev accuracy above the majority-tag baseline counted here
    from the dev file, and equal to the accuracy counted from the written predictions."""
    model_dir = os.path.join(tempfile.mkdtemp(), "pos")
    summary = runner.CvtRunner(self.config(model_dir, tasks="pos", mode="supervised",
                                           unlabeled_data="", train_steps=80, train_batch_size=32,
                                           max_train_sentences=800, log_every_steps=1000,
                                           save_checkpoints_steps=0), lambda _: None).run()
    with open(os.path.join(model_dir, "trial_0", "predictions_pos.txt")) as f:
      rows = [line.split() for line in f.read().splitlines() if line.strip()]
    gold = [row[1] for row in rows]
    majority = max(gold.count(tag) for tag in set(gold)) / len(gold)
    accuracy = summary["trials"][0]["dev"]["pos"]["accuracy"]
    self.assertAllClose(accuracy, np.mean([row[1] == row[2] for row in rows]))
    self.assertGreater(accuracy, majority + 0.1, msg=f"majority-tag baseline {majority:.3f}")


@testutil.requires(os.path.join(testutil.SHARED_DATA, "parsing", "ud_ewt"))
class MultiTaskCvtTest(tf.test.TestCase):

  def test_one_encoder_trains_chunking_ner_pos_and_parsing(self):
    """§4.1.2's CVT + multi-task: a --data_dir holding every task (slices of the shared sets),
    each task's dev figure reported, every task's modules and the shared encoder trained."""
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    os.makedirs(os.path.join(tmp, "tagging"))
    os.symlink(os.path.join(TAGGING, "chunk_conll2000"),  # its dev set is carved from train
               os.path.join(tmp, "tagging", "chunk_conll2000"))
    for name, files in (("ner", ("eng.train", "eng.testa")), ("pos", ("train.tsv", "dev.tsv"))):
      task = tagging_data.get_task(name)
      os.makedirs(os.path.join(tmp, "tagging", task.folder))
      for file in files:
        sentences = tagging_data.read_conll(os.path.join(TAGGING, task.folder, file))[:60]
        testutil.write_text(os.path.join(tmp, "tagging", task.folder, file), "".join(
            "".join(f"{w} {t}\n" for w, t in zip(s.words, s.tags)) + "\n" for s in sentences))
    ud = os.path.join(tmp, "parsing", "ud_ewt")
    os.makedirs(ud)
    for split in ("train", "dev"):
      sentences = conllu.read_conllu(os.path.join(testutil.SHARED_DATA, "parsing", "ud_ewt",
                                                  f"en_ewt-ud-{split}.conllu"))[:40]
      conllu.write_conllu(os.path.join(ud, f"slice-ud-{split}.conllu"), sentences, sentences)
    config = runner.CvtRunConfig(
        tasks="chunk,ner,pos,dep", data_dir=tmp, model_dir=os.path.join(tmp, "run"),
        unlabeled_data=SAMPLE, word_dim=24, char_dim=8, lstm1_size=24, lstm2_size=16,
        projection_size=16, hidden_size=16, train_steps=12, train_batch_size=8,
        max_train_sentences=40, eval_every_steps=0, save_checkpoints_steps=0, log_every_steps=4,
        vocab_unlabeled_sentences=200)
    cvt = runner.CvtRunner(config, lambda _: None)
    initial, _ = cvt._build(0)  # pylint: disable=protected-access  # trial 0's initial weights
    before = {v.name: v.numpy() for v in initial.trainable_variables}
    summary = cvt.run()
    # The kept (averaged) weights, those prediction reads, against the initial ones: every task's
    # modules and the shared encoder trained (tasks are picked uniformly at random, one per step).
    trained = run_dir.load(config.model_dir).model
    changed = [v.name for v in trained.trainable_variables
               if np.abs(v.numpy() - before[v.name]).max() > 0]
    for task in ("chunk", "ner", "pos", "dep"):
      self.assertTrue(any(task in name for name in changed), (task, changed))
    self.assertTrue(any("bilstm1" in name for name in changed))
    self.assertEqual(summary["primary_metrics"],
                     {"chunk": "f1", "ner": "f1", "pos": "accuracy", "dep": "las"})
    for task, metric in summary["primary_metrics"].items():
      self.assertBetween(summary["median"][task][metric], 0.0, 1.0)
    for name in ("predictions_chunk.txt", "predictions_ner.txt", "predictions_pos.txt",
                 "predictions_dep.conllu"):
      self.assertTrue(os.path.isfile(os.path.join(config.model_dir, "trial_0", name)), name)
    self.assertFalse([n for n in os.listdir(os.path.join(config.model_dir, "trial_0"))
                      if n.endswith(".last")])


if __name__ == "__main__":
  tf.test.main()
