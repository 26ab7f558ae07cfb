r"""Sentences per second of one-pass PLL (Electric, ELECTRA-TT) vs the exact n-pass masked-LM PLL
(ELECTRA's generator), on the same tiny encoder sizes and the same real sentences, plus (with
`--model_dir`) how often a trained run's PLL prefers real sentences to word-shuffled ones; with
`--pairs`, minimal pairs per second as `score_pairs` scores them (each distinct sentence once), for
every score kind, on the first `--max_pairs` pairs of the files.

  python benchmarks/pll_speed.py [--model_dir=/tmp/electric2k]
  python benchmarks/pll_speed.py --pairs=../shared/data/blimp --max_pairs=2000

Results are recorded in benchmarks/RESULTS.md.
"""
import os

from absl import app
from absl import flags
import numpy as np

import common
from official_rtd import runs
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import electra
from official_rtd.methods import electra_tt
from official_rtd.methods import electric
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import minimal_pairs
from official_rtd.training import scoring

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_integer("sentences", 128, "Sentences to score.")
flags.DEFINE_integer("max_pieces", 30, "Pieces per sentence.")
flags.DEFINE_string("model_dir", None, "Optional trained run for the shuffled-order check.")
flags.DEFINE_string("pairs", None, "Optional minimal-pair files or folder (BLiMP's .jsonl) to time "
                    "score_pairs' scoring on (pairs/s); the sentence timing is then skipped.")
flags.DEFINE_integer("max_pairs", 2000, "Pairs to score with --pairs.", lower_bound=1)
FLAGS = flags.FLAGS


def sentences(count):
  with open(os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt"),
            encoding="utf-8") as f:
    lines = [l.strip() for l in f if len(l.split()) >= 8]
  return [" ".join(l.split()[:20]) for l in lines[50:50 + count]]


def time_pairs(builders, config, tokenizer):
  """Pairs/s of `minimal_pairs.score_pairs` for every (method, score kind) that has the score."""
  pairs = minimal_pairs.read_pairs([FLAGS.pairs])[:FLAGS.max_pairs]
  kinds = {"electric (1 pass)": ("pll",), "electra_tt (1 pass)": ("pll",),
           "masked LM (n passes)": ("pll", "discriminator")}
  print(f"{len(pairs)} pairs of {FLAGS.pairs}; encoder hidden 128, 2 layers, random weights; "
        f"{os.cpu_count()} CPU cores")
  for name, build in builders.items():
    model = build(config)
    for kind in kinds[name]:
      scorer = scoring.SentenceScorer(model, tokenizer, score=kind)
      # A cold pass (as `score_pairs` runs it: tracing and compiling once per padded sentence
      # width), then the same pairs again (every width already compiled).
      cold, warm = (minimal_pairs.score_pairs(scorer, pairs, log=lambda _: None)
                    for _ in range(2))
      print(f"{name}, score {kind}: {cold['pairs_per_second']:.1f} pairs/s cold, "
            f"{warm['pairs_per_second']:.1f} warm ({cold['sentences_scored']} distinct "
            f"sentences in {cold['seconds']:.1f} / {warm['seconds']:.1f} s)")


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  vocab = vocab_lib.load_vocab(os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"))
  tokenizer = tokenizer_lib.WordPieceTokenizer(vocab)
  texts = sentences(FLAGS.sentences)
  config = EncoderConfig(vocab_size=vocab.size, hidden_size=128, num_layers=2,
                         num_attention_heads=2, intermediate_size=512, embedding_size=128)
  builders = {"electric (1 pass)": electric.build_electric_pretrainer,
              "electra_tt (1 pass)": electra_tt.build_electra_tt_pretrainer,
              "masked LM (n passes)": electra.build_electra_pretrainer}
  pieces = np.mean([min(len(p), FLAGS.max_pieces) for p in tokenizer.tokenize_to_lists(texts)])
  print(f"{len(texts)} sentences, {pieces:.1f} pieces on average; encoder hidden 128, 2 layers; "
        f"generator 1/4; {os.cpu_count()} CPU cores")
  if FLAGS.pairs:
    time_pairs(builders, config, tokenizer)
    return
  for name, build in builders.items():
    model = build(config)
    scoring.score_sentences(model, tokenizer, texts[:4], FLAGS.max_pieces + 2)  # warm-up
    seconds = common.timed(
        lambda: scoring.score_sentences(model, tokenizer, texts, FLAGS.max_pieces + 2),
        warmup=0, repeats=1).median
    print(f"{name}: {len(texts) / seconds:.1f} sentences/s")
  if FLAGS.model_dir:
    model, run_tokenizer = runs.load_model(FLAGS.model_dir)
    rng = np.random.default_rng(0)
    shuffled = [" ".join(rng.permutation(t.split())) for t in texts]
    real, _ = scoring.score_sentences(model, run_tokenizer, texts)
    fake, _ = scoring.score_sentences(model, run_tokenizer, shuffled)
    print(f"{FLAGS.model_dir}: PLL(real) > PLL(word-shuffled) for {np.mean(real > fake):.3f} of "
          f"{len(texts)} sentences; mean difference {np.mean(real - fake):.2f}")


if __name__ == "__main__":
  app.run(main)
