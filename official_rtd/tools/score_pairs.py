r"""Scores minimal pairs (BLiMP) with a pre-trained model: accuracy per paradigm, phenomenon, overall.

  score_pairs --run_dir=/runs/electra --pairs=../shared/data/blimp --output_dir=/tmp/blimp
  score_pairs --run_dir=/runs/electra --pairs='blimp/*.jsonl' --score=discriminator ...

Input: BLiMP JSONL (`sentence_good`, `sentence_bad`, `UID`, `linguistics_term`), files, globs or
directories. A pair is right when `sentence_good` scores higher; ties count 1/2. `--score`: `pll`
(the method's pseudo-log-likelihood: masked LMs and ELECTRA's generator mask each piece in turn;
Electric, ELECTRA-TT and SCRIPT score in one pass), `pll_word_l2r` (masked LMs; a word's pieces to
the right are masked too) or `discriminator` (Σ log(1 − D(x)_t) under the replaced-token
detector). Writes `<output_dir>/pairs_results.json` (overall = macro mean over paradigms, per
phenomenon, per paradigm, ties, pairs/s) and `pairs_scores.tsv` (one row per pair).
"""
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("run_dir", None, "A run_pretraining --model_dir or an import_checkpoint "
                    "--output_dir (an export/ holds the encoder alone: give its parent).")
flags.DEFINE_list("pairs", None, "BLiMP JSONL files, globs or directories.")
flags.DEFINE_enum("score", "pll", ["pll", "pll_word_l2r", "discriminator"],
                  "Sentence score: pll, pll_word_l2r or discriminator.")
flags.DEFINE_string("output_dir", None, "Where pairs_results.json and pairs_scores.tsv go.")
flags.DEFINE_integer("max_seq_length", 128, "Pieces per sentence, [CLS]/[SEP] included (>= 3).",
                     lower_bound=3)
flags.DEFINE_integer("eval_batch_size", 32, "Sentences per forward pass (a PLL scores one masked copy "
                     "per piece of each) (>= 1).", lower_bound=1)
cli.define_overwrite_flag()
cli.define_renamed_flag("model_dir", "run_dir", required=True)
cli.define_renamed_flag("batch_size", "eval_batch_size")
flags.mark_flags_as_required(["pairs", "output_dir"])
FLAGS = flags.FLAGS

RESULTS = "pairs_results.json"
SCORES_TSV = "pairs_scores.tsv"


def main(_):
  import os  # pylint: disable=g-import-not-at-top
  from official_rtd.data import records  # pylint: disable=g-import-not-at-top
  from official_rtd.training import minimal_pairs  # pylint: disable=g-import-not-at-top
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  pairs = minimal_pairs.read_pairs(FLAGS.pairs)
  if not FLAGS.overwrite:  # refuse an occupied --output_dir before the slow scoring
    cli.claim_output_dir(FLAGS.output_dir, False)
  model, tokenizer = runs.load_model(FLAGS.run_dir)
  scorer = scoring.SentenceScorer(model, tokenizer, FLAGS.score, FLAGS.max_seq_length,
                                        FLAGS.eval_batch_size)
  logging.info("scoring %d pairs (%s) from %s", len(pairs), FLAGS.score, FLAGS.run_dir)
  report = minimal_pairs.score_pairs(scorer, pairs, log=logging.info)
  scores = report.pop("scores")
  cli.claim_output_dir(FLAGS.output_dir, FLAGS.overwrite)  # moved aside only now, if at all
  os.makedirs(FLAGS.output_dir, exist_ok=True)
  records.write_lines_atomic(os.path.join(FLAGS.output_dir, SCORES_TSV), [
      "paradigm\tpair_id\tgood_score\tbad_score\toutcome\tsentence_good\tsentence_bad"] + [
          f"{p.paradigm}\t{p.pair_id}\t{g:.6f}\t{b:.6f}\t{minimal_pairs.pair_outcome(g, b):g}\t"
          f"{p.good}\t{p.bad}" for p, (g, b) in zip(pairs, scores)])
  records.write_json_atomic(os.path.join(FLAGS.output_dir, RESULTS),
                            dict(report, run_dir=FLAGS.run_dir, pairs_input=FLAGS.pairs))
  for name, row in report["paradigms"].items():
    print(f"{row['accuracy']:6.2f}  {name} ({row['phenomenon']}, {row['pairs']} pairs, "
          f"{row['ties']} ties)")
  print(f"{report['overall']:6.2f}  overall ({FLAGS.score}; macro mean of "
        f"{len(report['paradigms'])} paradigms; {report['pairs']} pairs, {report['ties']} ties "
        f"counted 1/2; {report['pairs_per_second']:.1f} pairs/s)")


def run():
  cli.run_main(main, "score_pairs")


if __name__ == "__main__":
  run()
