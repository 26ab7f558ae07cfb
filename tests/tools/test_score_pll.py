"""score_pll and score_pairs: sentences, n-best re-ranking and minimal pairs from a run directory;
WER; errors."""
import contextlib
import io
import json
import os
import tempfile

import tensorflow as tf

from official_rtd.tools import score_pairs
from official_rtd.tools import score_pll
from official_rtd import runs
from official_rtd.training import scoring
from tests import testutil
from tests import tool_server
from tests.training.test_trainer import make_records


def run(args):
  return tool_server.run(args, cwd=testutil.REPO, timeout=600)


def printed(tool, **config):
  """What the tool's main prints, run in this process with these flags (its config's fields)."""
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    tool.main(tool.COMMAND_LINE.config(**config))
  return out.getvalue()


class ScorePllTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(cls.tmp, "records"), paragraphs=100)
    cls.model_dir = os.path.join(cls.tmp, "electric")
    result = run(["run_pretraining", "--gin_file=gin/models/tiny.gin",
                  "--gin_file=gin/tasks/electric.gin", f"--input_records={records}",
                  f"--model_dir={cls.model_dir}", "--gin_param=TrainConfig.num_train_steps = 4",
                  "--gin_param=TrainConfig.train_batch_size = 8",
                  "--gin_param=EncoderConfig.num_layers = 1"])
    assert result.returncode == 0, result.stderr[-3000:]

  def test_sentences_and_nbest(self):
    sentences = ["Alice was beginning to get very tired.", "tired very get to beginning was Alice."]
    path = testutil.write_text(os.path.join(self.tmp, "s.txt"), "\n".join(sentences) + "\n")
    out = os.path.join(self.tmp, "scores.tsv")
    result = run(["score_pll", f"--run_dir={self.model_dir}", f"--input_file={path}",
                  f"--output_file={out}", "--batch_size=1"])  # the earlier --eval_batch_size
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("--batch_size is deprecated: use --eval_batch_size", result.stderr)
    with open(out) as f:
      rows = [line.rstrip("\n").split("\t") for line in f]
    self.assertEqual([r[3] for r in rows], sentences)
    model, tokenizer = runs.load_model(self.model_dir)
    plls, lengths = scoring.score_sentences(model, tokenizer, sentences)
    self.assertAllClose([float(r[1]) for r in rows], plls, atol=1e-3)
    self.assertEqual([int(r[2]) for r in rows], lengths)

    nbest = testutil.write_text(os.path.join(self.tmp, "nbest.tsv"), "".join(
        f"{key}\t{hyp}\t{score}\n" for key, hyp, score in [
            ("u1", "the cat sat", -1.0), ("u1", "the cat sad", -0.5),
            ("u2", "a dog ran home", -2.0), ("u2", "a dog ran", -2.5)]))
    refs = testutil.write_text(os.path.join(self.tmp, "refs.tsv"),
                               "u1\tthe cat sat\nu2\ta dog ran home\n")
    out = os.path.join(self.tmp, "reranked.tsv")
    stdout = printed(score_pll, run_dir=self.model_dir, nbest_file=nbest, references=refs,
                     lm_weight=0.0, output_file=out)
    # λ = 0 keeps the first-pass choice: "the cat sad" (1 error in 7 reference words).
    self.assertIn("WER first pass: 14.29%", stdout)
    self.assertIn("WER re-ranked: 14.29%", stdout)
    with open(out) as f:
      self.assertEqual([l.split("\t")[1] for l in f.read().strip().split("\n")],
                       ["the cat sad", "a dog ran home"])

  def test_lm_weight_tuned_on_a_dev_nbest_list(self):
    nbest = testutil.write_text(os.path.join(self.tmp, "dev.tsv"), "".join(
        f"{key}\t{hyp}\t{score}\n" for key, hyp, score in [
            ("d1", "she was very tired", -1.0), ("d1", "she was very tried", -0.9),
            ("d2", "the rabbit ran away", -3.0), ("d2", "the rabbit ran a way", -2.9)]))
    refs = testutil.write_text(os.path.join(self.tmp, "dev_refs.tsv"),
                               "d1\tshe was very tired\nd2\tthe rabbit ran away\n")
    out = os.path.join(self.tmp, "tuned.tsv")
    stdout = printed(score_pll, run_dir=self.model_dir, nbest_file=nbest, tune_lm_weight_on=nbest,
                     tune_references=refs, lm_weight_grid=("0", "0.5", "1", "2"),
                     references=refs, output_file=out)
    # The same choice by hand: the PLLs, then the grid's WERs.
    model, tokenizer = runs.load_model(self.model_dir)
    hyps = [("d1", 0), ("d1", 1), ("d2", 0), ("d2", 1)]
    dev = scoring.read_nbest(nbest)
    plls, _ = scoring.score_sentences(model, tokenizer, [dev[k][i][0] for k, i in hyps])
    by_key = dict(zip(hyps, map(float, plls)))
    references = scoring.read_references(refs, dev)
    weight, wers = scoring.tune_lm_weight(dev, by_key, references, [0.0, 0.5, 1.0, 2.0])
    self.assertRegex(stdout, rf"lm_weight {weight:g} chosen on .*dev.tsv: dev WER "
                     rf"{wers[weight]:.2f}%")
    self.assertIn(f"WER re-ranked: {wers[weight]:.2f}%", stdout)
    with self.assertRaisesRegex(ValueError, "--tune_lm_weight_on and --tune_references go "
                                "together"):
      printed(score_pll, run_dir=self.model_dir, nbest_file=nbest, tune_lm_weight_on=nbest,
              output_file=out)
    with self.assertRaisesRegex(ValueError, "--lm_weight_grid must be numbers"):
      printed(score_pll, run_dir=self.model_dir, nbest_file=nbest, tune_lm_weight_on=nbest,
              tune_references=refs, lm_weight_grid=("0.1", "heavy"), output_file=out)
    # The output exists now: refused before any scoring, replaced with --overwrite.
    with open(out) as f:
      before = f.read()
    again = dict(run_dir=self.model_dir, nbest_file=nbest, output_file=out, lm_weight=0.0)
    with self.assertRaisesRegex(ValueError, f"--output_file={out} already exists: nothing was "
                                "written"):
      printed(score_pll, **again)
    with open(out) as f:
      self.assertEqual(f.read(), before)
    printed(score_pll, overwrite=True, **again)

  def test_tune_lm_weight_by_hand(self):
    nbest = {"a": [("x y", 0.0), ("x z", -1.0)], "b": [("p q", 0.0), ("p r", -0.5)]}
    references = {"a": "x z", "b": "p q"}
    plls = {("a", 0): -3.0, ("a", 1): 0.0, ("b", 0): -1.0, ("b", 1): 0.0}
    # λ = 0.2: a keeps "x y" (0 > −1 + 0.6), b "p q";  λ = 0.5: a "x z" (−1.5 < −1), b "p q"
    # (−0.5 = −0.5: the first wins);  λ = 1: a "x z", b "p r".
    weight, wers = scoring.tune_lm_weight(nbest, plls, references, [0.2, 0.5, 1.0])
    self.assertEqual(wers, {0.2: 25.0, 0.5: 0.0, 1.0: 25.0})
    self.assertEqual(weight, 0.5)
    self.assertLen(scoring.LM_WEIGHT_GRID, 20)
    self.assertEqual((scoring.LM_WEIGHT_GRID[0], scoring.LM_WEIGHT_GRID[-1]), (0.05, 1.0))
    bad = testutil.write_text(os.path.join(self.tmp, "refs_bad.tsv"), "a\tx z\n")
    with self.assertRaisesRegex(scoring.ScoringError, r"refs_bad.tsv has no reference for .*'b'"):
      scoring.read_references(bad, nbest)

  def test_errors(self):
    # The earlier name --model_dir still works, saying so once.
    result = run(["score_pll", f"--model_dir={self.tmp}", "--input_file=x",
                  f"--output_file={self.tmp}/o"])
    self.assertEqual(result.returncode, 1)
    self.assertIn("score_pll: --model_dir is deprecated: use --run_dir", result.stderr)
    self.assertIn("is not a run_pretraining directory", result.stderr)
    result = run(["score_pll", f"--model_dir={self.tmp}", f"--run_dir={self.tmp}",
                  "--input_file=x", f"--output_file={self.tmp}/o"])
    self.assertEqual(result.returncode, 1)
    self.assertIn("score_pll: error: --model_dir is the deprecated name of --run_dir: give only "
                  "--run_dir", result.stderr)
    result = run(["score_pll", "--input_file=x", f"--output_file={self.tmp}/o"])
    self.assertIn("score_pll: error: --run_dir is required", result.stderr)
    bad = testutil.write_text(os.path.join(self.tmp, "bad.tsv"), "u1\tonly two\n")
    with self.assertRaisesRegex(scoring.ScoringError, r"bad.tsv:1: expected id<TAB>hypothesis"):
      scoring.read_nbest(bad)

  def test_score_pairs(self):
    pairs = [("Alice was very tired.", "Alice were very tired.", "agreement_1", "agreement"),
             ("The cat sat down.", "The cat sat sat.", "agreement_1", "agreement"),
             ("She saw herself.", "She saw himself.", "anaphor_1", "anaphor")]
    pair_dir = os.path.join(self.tmp, "pairs")
    os.makedirs(pair_dir, exist_ok=True)
    testutil.write_text(os.path.join(pair_dir, "blimp.jsonl"), "".join(
        json.dumps({"sentence_good": g, "sentence_bad": b, "UID": u, "linguistics_term": t,
                    "pairID": str(i)}) + "\n" for i, (g, b, u, t) in enumerate(pairs)))
    model, tokenizer = runs.load_model(self.model_dir)
    for score in ("pll", "discriminator"):  # the console script, then main in this process
      out = os.path.join(self.tmp, f"pairs_{score}")
      if score == "pll":
        result = run(["score_pairs", f"--run_dir={self.model_dir}", f"--pairs={pair_dir}",
                      f"--score={score}", f"--output_dir={out}"])
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        stdout = result.stdout
      else:
        stdout = printed(score_pairs, run_dir=self.model_dir, pairs=(pair_dir,), score=score,
                         output_dir=out)
      with open(os.path.join(out, "pairs_results.json")) as f:
        report = json.load(f)
      with open(os.path.join(out, "pairs_scores.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
      expected = scoring.SentenceScorer(model, tokenizer, score)(
          [s for g, b, _, _ in pairs for s in (g, b)]).reshape(-1, 2)
      self.assertAllClose([[float(r[2]), float(r[3])] for r in rows], expected, atol=1e-3)
      outcomes = [1.0 if g > b else 0.0 if g < b else 0.5 for g, b in expected]
      self.assertAllClose(report["paradigms"]["anaphor_1"]["accuracy"], 100 * outcomes[2])
      self.assertAllClose(report["overall"],
                          (100 * (outcomes[0] + outcomes[1]) / 2 + 100 * outcomes[2]) / 2)
      self.assertEqual(report["score"], score)
      self.assertIn("overall", stdout)
    # Bad input: refused, nothing written.
    broken = testutil.write_text(os.path.join(self.tmp, "broken.jsonl"), '{"UID": "x"}\n')
    out = os.path.join(self.tmp, "pairs_broken")
    with self.assertRaisesRegex(ValueError, "broken.jsonl:1: missing or empty sentence_good"):
      printed(score_pairs, run_dir=self.model_dir, pairs=(broken,), output_dir=out)
    self.assertFalse(os.path.exists(out))
    # The tool's next two refusals, raised by the library it calls (in this process).
    with self.assertRaisesRegex(ValueError, "is an export"):
      runs.load_model(f"{self.model_dir}/export")
    with self.assertRaisesRegex(scoring.ScoringError, "has no masked LM"):
      scoring.SentenceScorer(model, tokenizer, "pll_word_l2r")
    # An occupied --output_dir is refused before scoring (its files unchanged); --overwrite
    # moves it aside once the scores are ready.
    done = os.path.join(self.tmp, "pairs_pll")
    with open(os.path.join(done, "pairs_results.json")) as f:
      before = f.read()
    again = dict(run_dir=self.model_dir, pairs=(pair_dir,), output_dir=done)
    with self.assertRaisesRegex(ValueError, f"--output_dir={done} already holds files"):
      printed(score_pairs, **again)
    with open(os.path.join(done, "pairs_results.json")) as f:
      self.assertEqual(f.read(), before)
    printed(score_pairs, overwrite=True, **again)
    self.assertLen([n for n in os.listdir(self.tmp) if n.startswith("pairs_pll.replaced-")], 1)

  def test_word_errors(self):
    self.assertEqual(scoring.word_errors("a b c", "a x c d"), (2, 4))
    self.assertEqual(scoring.word_errors("", "a b"), (2, 2))


if __name__ == "__main__":
  tf.test.main()
