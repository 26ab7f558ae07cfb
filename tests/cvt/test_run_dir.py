"""A trained run applied to new text (`cvt_predict`, issue 74): a trial's kept weights, loaded
back through the task registry, label a file exactly as the run labelled its own dev set."""
import os
import shutil
import tempfile

import tensorflow as tf

from official_rtd.tools import cvt_predict
from official_rtd.cvt import run_dir
from official_rtd.cvt import runner
from official_rtd.data import conllu
from tests import testutil

SHARED = testutil.SHARED_DATA
TAGGING = os.path.join(SHARED, "tagging")


def tiny(model_dir, **kwargs):
  return runner.CvtRunConfig(**{
      "tasks": "chunk", "data_dir": SHARED, "model_dir": model_dir, "mode": "supervised",
      "word_dim": 12, "char_dim": 4, "lstm1_size": 12, "lstm2_size": 8, "projection_size": 8,
      "hidden_size": 8, "train_steps": 3, "train_batch_size": 8, "max_train_sentences": 40,
      "vocab_unlabeled_sentences": 0, "eval_every_steps": 0, "save_checkpoints_steps": 0,
      "log_every_steps": 10, **kwargs})


def predict(model_dir, input_file, output_file, **kwargs):
  config = cvt_predict.CvtPredictConfig(model_dir=model_dir, input_file=input_file,
                                        output_file=output_file, **kwargs)
  cvt_predict.predict(config, log=lambda _: None)


def columns(path, column):
  """Each sentence's `column`-th fields of a whitespace column file."""
  with open(path, encoding="utf-8") as f:
    blocks = f.read().strip().split("\n\n")
  return [[line.split()[column] for line in block.split("\n")] for block in blocks]


@testutil.requires(TAGGING)
@testutil.requires(os.path.join(SHARED, "parsing", "ud_ewt"))
class CvtPredictTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.tmp)

  def test_taggers_label_a_file_as_the_run_labelled_its_dev_set(self):
    model_dir = os.path.join(self.tmp, "tagging")
    runner.CvtRunner(tiny(model_dir, tasks="chunk,ner,pos"), lambda _: None).run()
    for task in ("chunk", "ner", "pos"):
      dev = os.path.join(model_dir, "trial_0", f"predictions_{task}.txt")  # word gold predicted
      words, expected = columns(dev, 0)[:300], columns(dev, 2)[:300]
      conll = testutil.write_text(os.path.join(self.tmp, f"{task}.conll"), "\n\n".join(
          "\n".join(sentence) for sentence in words) + "\n")
      text = testutil.write_text(os.path.join(self.tmp, f"{task}.txt"),
                                 "\n".join(" ".join(sentence) for sentence in words) + "\n")
      for path, input_format in ((conll, "conll"), (text, "text")):
        out = os.path.join(self.tmp, f"{task}.{input_format}.out")
        predict(model_dir, path, out, task=task, input_format=input_format)
        self.assertEqual(columns(out, 0), words)
        self.assertEqual(columns(out, 1), expected)  # the run's own dev predictions
    with self.assertRaisesRegex(ValueError, "trained chunk, ner, pos: name one with --task"):
      predict(model_dir, text, os.path.join(self.tmp, "x.out"))
    with self.assertRaisesRegex(ValueError, r"--trial=2: --model_dir=.* holds trial_0 "):
      predict(model_dir, text, os.path.join(self.tmp, "x.out"), task="pos", trial=2)
    with self.assertRaisesRegex(ValueError, r"--model_dir=.* is not a run of dep \(its tasks: "
                                r"chunk, ner, pos\)"):
      predict(model_dir, text, os.path.join(self.tmp, "x.out"), task="dep")
    empty = testutil.write_text(os.path.join(self.tmp, "empty.txt"), "\n\n")
    with self.assertRaisesRegex(ValueError, r"empty.txt: no sentences \(read as "
                                r"--input_format=conll\)"):
      predict(model_dir, empty, os.path.join(self.tmp, "x.out"), task="pos", input_format="conll")
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.out")))
    self.check_formats_and_blank_lines(model_dir, conll, text)

  def check_formats_and_blank_lines(self, model_dir, conll, text):
    """Issue 87: a format the content contradicts is refused in one line; unset, the content's
    format is read and said; a blank text line stays an empty sentence; a trial's folder given as
    --model_dir names the run's folder."""
    conllu_file = os.path.join(SHARED, "parsing", "ud_ewt", "en_ewt-ud-dev.conllu")
    out = os.path.join(self.tmp, "formats.out")
    for path, given, found in ((conllu_file, "text", "conllu"), (conllu_file, "conll", "conllu"),
                               (conll, "text", "conll"), (text, "conll", "text")):
      with self.assertRaisesRegex(ValueError, f"^{path} looks like {found} \\(.*\\), not "
                                  f"--input_format={given}: give --input_format={found}, or "
                                  "leave --input_format unset$"):
        predict(model_dir, path, out, task="pos", input_format=given)
      self.assertFalse(os.path.exists(out))
    for path, found in ((conll, "conll"), (text, "text")):
      lines = []
      config = cvt_predict.CvtPredictConfig(model_dir=model_dir, input_file=path,
                                            output_file=out, task="pos", overwrite=True)
      cvt_predict.predict(config, log=lines.append)
      self.assertIn(f"{path}: read as --input_format={found} (", lines[0])
      self.assertEqual(columns(out, 0), columns(conll, 0))
    with open(text, encoding="utf-8") as f:
      sentences = f.read().splitlines()
    gapped = testutil.write_text(os.path.join(self.tmp, "gapped.txt"), "\n".join(
        sentences[:2] + ["", "  "] + sentences[2:5]) + "\n")
    predict(model_dir, gapped, out, task="pos", overwrite=True)
    with open(out, encoding="utf-8") as f:
      blocks, words = [], []
      for line in f.read().splitlines():
        if line:
          words.append(line.split()[0])
        else:
          blocks.append(" ".join(words))
          words = []
    self.assertEqual(blocks, sentences[:2] + ["", ""] + sentences[2:5])  # line k is sentence k
    with self.assertRaisesRegex(ValueError, r"--model_dir=\S+trial_0 is a trial's folder: give "
                                r"the run's folder, --model_dir=\S+tagging \(--trial=0 picks"):
      predict(model_dir + "/trial_0", text, out, task="pos", overwrite=True)

  def test_a_parser_writes_the_trees_the_run_wrote_for_its_dev_set(self):
    treebank = os.path.join(self.tmp, "ud_slice")  # 60 training and 80 dev sentences
    os.makedirs(treebank)
    for split, count in (("train", 60), ("dev", 80)):
      with open(os.path.join(SHARED, "parsing", "ud_ewt", f"en_ewt-ud-{split}.conllu"),
                encoding="utf-8") as f:
        blocks = f.read().strip().split("\n\n")[:count]
      testutil.write_text(os.path.join(treebank, f"en_ewt-ud-{split}.conllu"),
                          "\n\n".join(blocks) + "\n\n")
    model_dir = os.path.join(self.tmp, "dep")
    runner.CvtRunner(tiny(model_dir, tasks="dep", data_dir=treebank), lambda _: None).run()
    dev = os.path.join(model_dir, "trial_0", "predictions_dep.conllu")
    gold = conllu.read_conllu(os.path.join(treebank, "en_ewt-ud-dev.conllu"))
    out = os.path.join(self.tmp, "dev.pred.conllu")
    predict(model_dir, os.path.join(treebank, "en_ewt-ud-dev.conllu"), out,
            input_format="conllu")
    expected, written = conllu.read_conllu(dev), conllu.read_conllu(out)
    self.assertLen(written, len(gold))
    self.assertEqual([s.heads for s in written], [s.heads for s in expected])
    self.assertEqual([s.relations for s in written], [s.relations for s in expected])
    self.assertEqual([s.upos for s in written], [s.upos for s in gold])  # the input's tags kept
    trained = run_dir.load(model_dir)
    self.assertEqual(sorted(trained.tasks), ["dep"])
    self.assertEqual(trained.settings["max_train_sentences"], 40)


if __name__ == "__main__":
  tf.test.main()
