r"""Scores minimal pairs (BLiMP) with a pre-trained model: accuracy per paradigm, phenomenon,
overall.

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
import dataclasses
from typing import List

from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.utils import textio


@dataclasses.dataclass(frozen=True)
class ScorePairsConfig:
  run_dir: str
  pairs: List[str]
  output_dir: str
  score: str = "pll"
  max_seq_length: int = 128
  eval_batch_size: int = 32
  overwrite: bool = False


COMMAND_LINE = cli.Flags(ScorePairsConfig, {
    "run_dir": "A run_pretraining --model_dir or an import_checkpoint --output_dir (an export/ "
               "holds the encoder alone: give its parent).",
    "pairs": "BLiMP JSONL files, globs or directories (comma list).",
    "score": "Sentence score: pll, pll_word_l2r or discriminator.",
    "output_dir": "Where pairs_results.json and pairs_scores.tsv go.",
    "max_seq_length": "Pieces per sentence, [CLS]/[SEP] included.",
    "eval_batch_size": "Sentences per forward pass (a PLL scores one masked copy per piece of "
                       "each).",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_dir"),
}, enums={"score": ["pll", "pll_word_l2r", "discriminator"]},
    ranges={"max_seq_length": (3, None, True), "eval_batch_size": (1, None, True)},
    renamed={"model_dir": "run_dir", "batch_size": "eval_batch_size"})

RESULTS = "pairs_results.json"
SCORES_TSV = "pairs_scores.tsv"


def main(config):
  import os  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.training import minimal_pairs  # pylint: disable=g-import-not-at-top
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  pairs = minimal_pairs.read_pairs(config.pairs)
  if not config.overwrite:  # refuse an occupied --output_dir before the slow scoring
    cli.claim_output_dir(config.output_dir, False)
  model, tokenizer = runs.load_model(config.run_dir)
  scorer = scoring.SentenceScorer(model, tokenizer, config.score, config.max_seq_length,
                                        config.eval_batch_size)
  logging.info("scoring %d pairs (%s) from %s", len(pairs), config.score, config.run_dir)
  report = minimal_pairs.score_pairs(scorer, pairs, log=logging.info)
  scores = report.pop("scores")
  # The previous output is moved aside (--overwrite) only once the new one is complete.
  with cli.staged_output_dir(config.output_dir, config.overwrite) as staging:
    os.makedirs(staging)
    textio.write_lines_atomic(os.path.join(staging, SCORES_TSV), [
        "paradigm\tpair_id\tgood_score\tbad_score\toutcome\tsentence_good\tsentence_bad"] + [
            f"{p.paradigm}\t{p.pair_id}\t{g:.6f}\t{b:.6f}\t{minimal_pairs.pair_outcome(g, b):g}"
            f"\t{p.good}\t{p.bad}" for p, (g, b) in zip(pairs, scores)])
    textio.write_json_atomic(os.path.join(staging, RESULTS),
                              dict(report, run_dir=config.run_dir, pairs_input=config.pairs))
  for name, row in report["paradigms"].items():
    print(f"{row['accuracy']:6.2f}  {name} ({row['phenomenon']}, {row['pairs']} pairs, "
          f"{row['ties']} ties)")
  print(f"{report['overall']:6.2f}  overall ({config.score}; macro mean of "
        f"{len(report['paradigms'])} paradigms; {report['pairs']} pairs, {report['ties']} ties "
        f"counted 1/2; {report['pairs_per_second']:.1f} pairs/s)")


def run():
  cli.run_main(main, "score_pairs", COMMAND_LINE)


if __name__ == "__main__":
  run()
