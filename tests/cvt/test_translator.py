"""CVT's translator (§4.2.4) against independent computations: the attention equations in numpy
on the same weights, attention dropout's fraction, the future decoder's target y^{t+1}, beam
search against a brute-force search, BLEU against sacrebleu on the written predictions, and
`run_cvt --tasks=translate` + `cvt_translate` on a slice of Multi30k."""
import itertools
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import runner
from official_rtd.cvt import seq2seq
from official_rtd.cvt import translation_text
from official_rtd.cvt import translator
from tests import testutil
from tests import tool_server

SMALL = encoder_lib.CvtConfig(word_dim=8, char_dim=4, lstm1_size=10, lstm2_size=8,
                              projection_size=6, hidden_size=7)
MULTI30K = os.path.join(testutil.SHARED_DATA, "translation", "multi30k")


def softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def log_softmax(x):
  return np.log(softmax(x))


def built_modules(vocab_size=9, seed=0):
  tf.random.set_seed(seed)
  modules = seq2seq.TranslatorModules(SMALL, vocab_size)
  rng = np.random.default_rng(seed)
  states = {"h1": tf.constant(rng.normal(size=[2, 5, 12]), tf.float32),
            "h2": tf.constant(rng.normal(size=[2, 5, 12]), tf.float32)}
  lengths = tf.constant([5, 3])
  prev = tf.constant([[2, 4, 5, 6], [2, 7, 0, 0]]) % vocab_size
  modules(states, lengths, prev, tf.constant([4, 2]),
          names=("primary", "attention_dropout", "future"))
  return modules, states, lengths, prev


class AttentionTest(tf.test.TestCase):

  def test_decoders_match_the_equations_in_numpy(self):
    modules, states, lengths, prev = built_modules()
    out = modules(states, lengths, prev, tf.constant([4, 2]), names=("primary", "future"))
    h_bar = modules.decoder_states(prev, tf.constant([4, 2]), 0.0).numpy()
    memory = np.concatenate([states["h1"].numpy(), states["h2"].numpy()], -1)  # h^j
    for name in ("primary", "future"):
      layer = modules.decoders[name]
      w_alpha, w_a, w_s, b_s = (v.numpy() for v in (layer.w_alpha, layer.w_a, layer.w_s,
                                                    layer.b_s))
      for row, length in enumerate([5, 3]):
        h = memory[row, :length]
        for t in range(h_bar.shape[1]):
          alpha = softmax(h @ w_alpha @ h_bar[row, t])  # α_j ∝ exp(h^j W_α h̄^t), real j only
          context = alpha @ h  # c_t = Σ_j α_j h^j
          a = np.tanh(np.concatenate([context, h_bar[row, t]]) @ w_a)  # a_t = tanh(W_a[c_t, h̄_t])
          self.assertAllClose(out[name][row, t], a @ w_s + b_s, atol=1e-5)  # W_s a_t

  def test_the_decoder_state_reads_only_earlier_words(self):
    modules, _, _, prev = built_modules()
    changed = prev.numpy().copy()
    changed[0, 3] = 8
    a = modules.decoder_states(prev, tf.constant([4, 2]), 0.0).numpy()
    b = modules.decoder_states(tf.constant(changed), tf.constant([4, 2]), 0.0).numpy()
    self.assertAllClose(a[0, :3], b[0, :3])
    self.assertGreater(np.abs(a[0, 3] - b[0, 3]).max(), 1e-6)

  def test_attention_dropout_zeroes_the_fraction_asked_for(self):
    layer = seq2seq.Attention(4, 6)
    memory = tf.random.normal([8, 50, 5])
    h = tf.random.normal([8, 20, 3])
    mask = tf.ones([8, 50], tf.bool)
    _, alpha = layer((memory, h), mask, 0.3)
    zeroed = float(tf.reduce_mean(tf.cast(alpha == 0.0, tf.float32)))
    self.assertAllClose(zeroed, 0.3, atol=0.02)  # 8,000 weights
    _, alpha = layer((memory, h), mask, 0.0)
    self.assertAllClose(tf.reduce_sum(alpha, -1), tf.ones([8, 20]), atol=1e-5)


class FakeConfig:
  tasks = "translate"
  data_dir = MULTI30K
  max_sentence_length = 100
  on_bad_pair = "fail"
  train_fraction = 1.0
  max_train_sentences = 50
  target_min_count = 1
  beam_size = 3
  max_decode_length = 6
  attention_dropout = 0.0
  auxiliary_decoders = "attention_dropout,future"


class BadInputTest(tf.test.TestCase):

  def test_unaligned_files_and_a_bad_fraction_are_refused_by_name(self):
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    testutil.write_text(os.path.join(tmp, "train.en"), "A dog runs.\nA cat sleeps.\n")
    testutil.write_text(os.path.join(tmp, "train.de"), "Ein Hund rennt.\n")
    with self.assertRaisesRegex(ValueError, r"train.en has 2 lines but .*train.de 1"):
      translation_text.read_parallel(tmp, "train")
    with self.assertRaisesRegex(ValueError, r"val.en not found \(--data_dir must hold"):
      translation_text.read_parallel(tmp, "val")
    from official_rtd.cvt import task as task_lib  # pylint: disable=g-import-not-at-top
    with self.assertRaisesRegex(ValueError, r"--train_fraction=0.0 must be in \(0, 1\]"):
      task_lib.subset([1, 2], np.random.default_rng(0), 0.0, 0)
    self.assertLen(task_lib.subset(list(range(10)), np.random.default_rng(0), 0.25, 0), 2)


@testutil.requires(MULTI30K)
class NothingDroppedTest(tf.test.TestCase):
  """Issue 70: no labeled pair is dropped without a word, dev predictions stay line-aligned."""

  def _data(self, train_de_line=None, val_de_line=None):
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    for split, count in (("train", 30), ("val", 6)):
      for lang in ("en", "de"):
        with open(os.path.join(MULTI30K, f"{split}.{lang}"), encoding="utf-8") as f:
          lines = f.read().split("\n")[:count]
        if lang == "de" and split == "train" and train_de_line is not None:
          lines[4] = train_de_line
        if lang == "de" and split == "val" and val_de_line is not None:
          lines[2] = val_de_line
        testutil.write_text(os.path.join(tmp, f"{split}.{lang}"), "\n".join(lines) + "\n")
    return tmp

  def _task(self, data_dir, on_bad_pair="fail", max_sentence_length=100):
    config = FakeConfig()
    config.data_dir, config.on_bad_pair = data_dir, on_bad_pair
    config.max_sentence_length, config.max_train_sentences = max_sentence_length, 0
    return translator.TranslationTask.read("translate", config, np.random.default_rng(0))

  def test_a_blank_line_fails_naming_file_and_line_or_is_skipped_and_counted(self):
    data_dir = self._data(val_de_line="  ")
    with self.assertRaisesRegex(ValueError, r"val\.de:3: blank line, so the pair at line 3 .*"
                                r"--on_bad_pair=skip"):
      self._task(data_dir)
    task = self._task(data_dir, "skip")
    self.assertLen(task.dev, 5)
    self.assertIn("1 dev pair with a blank side skipped", task.describe())
    # The predictions file has one line per line of val.en: line 3 (the skipped pair) is empty
    # and every other line holds its own sentence's translation.
    rows = [{"tokens": np.array([task.vocab.ids[w] for w in example[1][:3] if w in task.vocab.ids]
                                + [task.vocab.ids[translation_text.EOS]])} for example in task.dev]
    path = os.path.join(data_dir, "predictions.de")
    task.evaluate(rows, path, lambda _: None)
    with open(path, encoding="utf-8") as f:
      written = f.read().split("\n")[:-1]
    expected = task.translations(rows)
    self.assertEqual(written, expected[:2] + [""] + expected[2:])
    data_dir = self._data(train_de_line="")
    with self.assertRaisesRegex(ValueError, r"train\.de:5: blank line"):
      self._task(data_dir)
    task = self._task(data_dir, "skip")
    self.assertLen(task.train, 29)
    self.assertIn("1 train pair with a blank side skipped", task.describe())

  def test_a_long_labeled_pair_is_kept(self):
    task = self._task(self._data(train_de_line=" ".join(["Hund"] * 500)), max_sentence_length=20)
    self.assertLen(task.train, 30)
    self.assertIn(500, [len(example[1]) for example in task.train])

  def test_paragraphs_of_unlabeled_text_are_split_into_sentences(self):
    paragraph = ("A dog runs in the park. Two children play with a ball near the water. "
                 "Mr. Smith watches them.")
    self.assertEqual(translation_text.split_lines(paragraph, 12), [
        ["A", "dog", "runs", "in", "the", "park", "."],
        ["Two", "children", "play", "with", "a", "ball", "near", "the", "water", "."],
        ["Mr.", "Smith", "watches", "them", "."]])


@testutil.requires(MULTI30K)
class StudentLossTest(tf.test.TestCase):

  def test_the_future_decoder_learns_the_word_after_next(self):
    task = translator.TranslationTask.read("translate", FakeConfig(), np.random.default_rng(0))
    modules = task.build_head(SMALL)
    rng = np.random.default_rng(1)
    states = {"h1": tf.constant(rng.normal(size=[2, 5, 12]), tf.float32),
              "h2": tf.constant(rng.normal(size=[2, 5, 12]), tf.float32)}
    inputs = {"words": tf.zeros([2, 5], tf.int32), "lengths": tf.constant([5, 3])}
    teacher = {"targets": tf.constant([[5, 6, 7, 3], [8, 3, 0, 0]]),
               "lengths": tf.constant([4, 2])}
    loss = float(task.student_loss(modules, states, inputs, teacher, 0.0, auxiliary=True))
    bos = task.vocab.ids[translation_text.BOS]
    logits = modules(states, inputs["lengths"], tf.constant([[bos, 5, 6, 7], [bos, 8, 0, 0]]),
                     teacher["lengths"], names=("attention_dropout", "future"))
    vocab = len(task.vocab.words)

    def smoothed_ce(log_p, gold):
      target = np.full(vocab, 0.1 / vocab)
      target[gold] += 0.9
      return -(target * log_p).sum()

    targets = teacher["targets"].numpy()
    same = [smoothed_ce(log_softmax(logits["attention_dropout"].numpy()[b, t]), targets[b, t])
            for b, n in enumerate([4, 2]) for t in range(n)]
    # Position t of the future decoder (its state has read y^<t+1) against y^{t+2} = targets[t+1].
    future = [smoothed_ce(log_softmax(logits["future"].numpy()[b, t]), targets[b, t + 1])
              for b, n in enumerate([4, 2]) for t in range(n - 1)]
    self.assertAllClose(loss, np.mean(same) + np.mean(future), rtol=1e-5)
    # --auxiliary_decoders keeps one decoder out of the student loss.
    for names, expected in ((("future",), np.mean(future)),
                            (("attention_dropout",), np.mean(same))):
      task.auxiliary_decoders = names
      self.assertAllClose(task.student_loss(modules, states, inputs, teacher, 0.0, True),
                          expected, rtol=1e-5)


class BeamSearchTest(tf.test.TestCase):

  def test_a_wide_beam_equals_brute_force_search(self):
    vocab, max_length, eos, bos = 5, 3, 3, 2
    modules, states, lengths, _ = built_modules(vocab_size=vocab, seed=3)
    memory = seq2seq.TranslatorModules.memory(states)
    mask = tf.sequence_mask(lengths, 5)
    results = {banned: seq2seq.beam_search(modules, memory, mask, vocab ** max_length,
                                              max_length, bos, eos, banned)
               for banned in ((), (0, 1))}  # (0, 1): <pad> and <unk> never written

    def score(row, sequence):
      """Σ log p(y^t | y^<t, x), one decoder step at a time."""
      r = tf.zeros([1, modules.projection])
      c = tf.zeros([1, modules.units])
      total, prev = 0.0, bos
      for word in sequence:
        log_p, r, c = modules.step(memory[row:row + 1], mask[row:row + 1],
                                   tf.constant([prev]), r, c)
        total += float(log_p[0, word])
        prev = word
      return total

    for banned, (tokens, found_lengths, scores) in results.items():
      words = [w for w in range(vocab) if w not in banned]
      for row in range(2):
        candidates = [s for n in range(1, max_length + 1)
                      for s in itertools.product(words, repeat=n)
                      if (s[-1] == eos and eos not in s[:-1])
                      or (n == max_length and eos not in s)]
        best = max(candidates, key=lambda s: score(row, s))
        self.assertEqual(list(tokens[row, :found_lengths[row]].numpy()), list(best), banned)
        self.assertAllClose(scores[row], score(row, best), atol=1e-4)
    tokens, found_lengths, scores = results[()]
    # A narrow beam finds a hypothesis no better than the exhaustive one.
    _, _, narrow = seq2seq.beam_search(modules, memory, mask, 2, max_length, bos, eos)
    self.assertTrue(np.all(narrow.numpy() <= scores.numpy() + 1e-5))


@testutil.requires(MULTI30K)
class TranslateRunTest(tf.test.TestCase):

  def test_supervised_and_cvt_runs_bleu_and_the_translate_tool(self):
    tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, tmp)
    data_dir = os.path.join(tmp, "mt")
    os.makedirs(data_dir)
    for split, count in (("train", 300), ("val", 40)):  # a slice of the shared Multi30k
      for lang in ("en", "de"):
        with open(os.path.join(MULTI30K, f"{split}.{lang}"), encoding="utf-8") as f:
          lines = f.read().split("\n")[:count]
        testutil.write_text(os.path.join(data_dir, f"{split}.{lang}"), "\n".join(lines) + "\n")
    unlabeled = os.path.join(MULTI30K, "train.1.en")
    for mode in ("supervised", "cvt"):
      model_dir = os.path.join(tmp, mode)
      lines = []
      summary = runner.CvtRunner(runner.CvtRunConfig(
          tasks="translate", data_dir=data_dir, model_dir=model_dir, mode=mode,
          unlabeled_data=unlabeled if mode == "cvt" else "", word_dim=16, char_dim=4,
          lstm1_size=16, lstm2_size=8, projection_size=8, hidden_size=16, train_steps=4,
          train_batch_size=16, eval_every_steps=2, save_checkpoints_steps=0, log_every_steps=2,
          beam_size=2, max_decode_length=8, target_min_count=2, vocab_unlabeled_sentences=500),
          lines.append).run()
      self.assertEqual(summary["primary_metrics"], {"translate": "bleu"})
      self.assertIn("translate 300 train / 40 dev sentences", lines[0])
      self.assertEqual(any("unlabeled loss" in line for line in lines), mode == "cvt")
      self.assertTrue(any("tok:13a" in line for line in lines), lines)  # sacrebleu's signature
    # The reported BLEU is sacrebleu's on the written (best evaluation's) predictions.
    import sacrebleu  # pylint: disable=g-import-not-at-top
    with open(os.path.join(model_dir, "trial_0", "predictions_translate.de"),
              encoding="utf-8") as f:
      hypotheses = f.read().split("\n")[:40]
    with open(os.path.join(data_dir, "val.de"), encoding="utf-8") as f:
      references = f.read().split("\n")[:40]
    self.assertAllClose(summary["median"]["translate"]["bleu"],
                        sacrebleu.corpus_bleu(hypotheses, [references]).score)
    # The trained run translates any file, as documented: the kept weights give the run's own
    # dev predictions (loaded back from vocab.json and trial_0/model); a blank line stays blank.
    with open(os.path.join(data_dir, "val.en"), encoding="utf-8") as f:
      sources = f.read().split("\n")[:2]
    source = testutil.write_text(os.path.join(tmp, "in.en"),
                                 f"{sources[0]}\n\n{sources[1]}\n")
    out = os.path.join(tmp, "out.de")
    # Without decoding flags it decodes as the run did (beam 2, length 8, recorded), and says so.
    result = tool_server.run(
        [sys.executable, "-m", "official_rtd.tools.cvt_translate", f"--model_dir={model_dir}",
         f"--input_file={source}", f"--output_file={out}"])
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    self.assertIn("decoding with beam_size=2 (the run's), max_decode_length=8 (the run's)",
                  result.stderr)
    with open(out, encoding="utf-8") as f:
      translated = f.read().split("\n")
    self.assertEqual(translated, [hypotheses[0], "", hypotheses[1], ""])  # + the final newline
    from official_rtd.tools import cvt_predict  # pylint: disable=g-import-not-at-top
    cvt_predict.predict(cvt_predict.CvtPredictConfig(  # cvt_predict is cvt_translate's tool
        model_dir=model_dir, input_file=source, output_file=out + "p"), log=lambda _: None)
    with open(out + "p", encoding="utf-8") as f:
      self.assertEqual(f.read().split("\n"), translated)
    with self.assertRaisesRegex(ValueError, "--input_format=conll: translate reads text"):
      cvt_predict.predict(cvt_predict.CvtPredictConfig(
          model_dir=model_dir, input_file=source, output_file=out + "c", input_format="conll"),
                          log=lambda _: None)
    # --trial counts from 0, as the folders and the log do.
    result = subprocess.run(
        [sys.executable, "-m", "official_rtd.tools.cvt_translate", f"--model_dir={model_dir}",
         f"--input_file={source}", f"--output_file={out}3", "--trial=1"], capture_output=True,
        text=True, check=False)
    self.assertNotEqual(result.returncode, 0)
    self.assertIn("--trial=1: --model_dir=" + model_dir + " holds trial_0 (--trial counts from 0",
                  result.stderr)
    result = subprocess.run(
        [sys.executable, "-m", "official_rtd.tools.cvt_translate", f"--model_dir={tmp}",
         f"--input_file={source}", f"--output_file={out}2"], capture_output=True, text=True,
        check=False)
    self.assertNotEqual(result.returncode, 0)
    self.assertIn("no vocab.json or trial_0/model", result.stderr)


if __name__ == "__main__":
  tf.test.main()
