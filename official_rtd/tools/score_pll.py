r"""Scores text with a pre-trained model's pseudo-log-likelihood, or re-ranks n-best lists.

  score_pll --run_dir=/runs/electric --input_file=sentences.txt --output_file=scores.tsv
  score_pll --run_dir=/runs/electric --nbest_file=nbest.tsv --lm_weight=0.3 \
      [--references=refs.tsv] --output_file=reranked.tsv
  score_pll --run_dir=/runs/electric --nbest_file=test_nbest.tsv \
      --tune_lm_weight_on=dev_nbest.tsv --tune_references=dev_refs.tsv --output_file=reranked.tsv

Sentences: one per line; output `line<TAB>pll<TAB>pieces<TAB>text`. N-best: `id<TAB>hypothesis<TAB>
score` lines; output `id<TAB>best hypothesis<TAB>first-pass score<TAB>pll`, choosing by
score + lm_weight·PLL; with `--references` (`id<TAB>reference`) it also reports the word error rate
before and after re-ranking. `--tune_lm_weight_on` chooses lm_weight instead, as §5.4.5 does: the
value of `--lm_weight_grid` (0.05, 0.1, ..., 1.0) with the lowest WER on a dev n-best list.
"""
import dataclasses
from typing import List

from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.utils import textio


@dataclasses.dataclass(frozen=True)
class ScorePllConfig:
  run_dir: str
  output_file: str
  input_file: str = ""
  nbest_file: str = ""
  references: str = ""
  lm_weight: float = 1.0
  tune_lm_weight_on: str = ""
  tune_references: str = ""
  lm_weight_grid: List[str] = dataclasses.field(default_factory=list)
  max_seq_length: int = 128
  eval_batch_size: int = 16
  overwrite: bool = False


COMMAND_LINE = cli.Flags(ScorePllConfig, {
    "run_dir": "A run_pretraining --model_dir (any method that can score).",
    "input_file": "Sentences to score, one per line.",
    "nbest_file": "N-best lists: id<TAB>hypothesis<TAB>score.",
    "references": "With --nbest_file: id<TAB>reference, to report WER.",
    "lm_weight": "λ in score + λ·PLL for re-ranking.",
    "tune_lm_weight_on": "A dev n-best file: choose λ from --lm_weight_grid by its WER there "
                         "(needs --tune_references); overrides --lm_weight.",
    "tune_references": "id<TAB>reference for --tune_lm_weight_on.",
    "lm_weight_grid": "λ values --tune_lm_weight_on tries (comma list); unset: 0.05, 0.1, ..., "
                      "0.95, 1.0 (dissertation §5.4.5).",
    "output_file": "Where to write the TSV output.",
    "max_seq_length": "Pieces per sentence, [CLS]/[SEP] included.",
    "eval_batch_size": "Sentences per batch.",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, ranges={"max_seq_length": (3, None, True), "eval_batch_size": (1, None, True)},
    renamed={"model_dir": "run_dir", "batch_size": "eval_batch_size"})


def _score_nbest(config, model, tokenizer, nbest):
  """{(id, index): PLL} of every hypothesis."""
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  flat = [(key, i, hyp) for key, hyps in nbest.items() for i, (hyp, _) in enumerate(hyps)]
  plls, _ = scoring.score_sentences(model, tokenizer, [h for _, _, h in flat],
                                    config.max_seq_length, config.eval_batch_size)
  return {(key, i): float(p) for (key, i, _), p in zip(flat, plls)}


def main(config):
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  if bool(config.input_file) == bool(config.nbest_file):
    raise ValueError("give exactly one of --input_file and --nbest_file")
  if bool(config.tune_lm_weight_on) != bool(config.tune_references):
    raise ValueError("--tune_lm_weight_on and --tune_references go together")
  try:
    grid = ([float(w) for w in config.lm_weight_grid] if config.lm_weight_grid
            else scoring.LM_WEIGHT_GRID)
  except ValueError:
    raise ValueError(f"--lm_weight_grid must be numbers, got {config.lm_weight_grid}") from None
  cli.claim_output_file(config.output_file, config.overwrite)
  model, tokenizer = runs.load_model(config.run_dir)
  if config.input_file:
    sentences = [line.strip() for _, line in textio.numbered_lines(config.input_file)
                 if line.strip()]
    if not sentences:
      raise ValueError(f"{config.input_file} holds no sentences")
    plls, lengths = scoring.score_sentences(model, tokenizer, sentences, config.max_seq_length,
                                            config.eval_batch_size)
    textio.write_lines_atomic(config.output_file, [
        f"{i + 1}\t{p:.4f}\t{n}\t{s}" for i, (p, n, s) in enumerate(zip(plls, lengths, sentences))])
    logging.info("scored %d sentences -> %s", len(sentences), config.output_file)
    return
  nbest = scoring.read_nbest(config.nbest_file)
  lm_weight = config.lm_weight
  if config.tune_lm_weight_on:
    dev = scoring.read_nbest(config.tune_lm_weight_on)
    dev_references = scoring.read_references(config.tune_references, dev)
    lm_weight, wers = scoring.tune_lm_weight(dev, _score_nbest(config, model, tokenizer, dev),
                                             dev_references, grid)
    print(f"lm_weight {lm_weight:g} chosen on {config.tune_lm_weight_on}: dev WER "
          f"{wers[lm_weight]:.2f}% (grid {min(grid):g}..{max(grid):g}: "
          f"{min(wers.values()):.2f}–{max(wers.values()):.2f}%)")
  by_key = _score_nbest(config, model, tokenizer, nbest)
  best = scoring.rerank(nbest, by_key, lm_weight)
  textio.write_lines_atomic(
      config.output_file,
      [f"{key}\t{nbest[key][i][0]}\t{nbest[key][i][1]}\t{by_key[(key, i)]:.4f}"
       for key, i in best.items()])
  logging.info("re-ranked %d n-best lists -> %s", len(best), config.output_file)
  if config.references:
    references = scoring.read_references(config.references, nbest)
    first_pass = scoring.rerank(nbest, {k: 0.0 for k in by_key}, 0.0)
    for name, choice in (("first pass", first_pass), ("re-ranked", best)):
      print(f"WER {name}: {scoring.corpus_wer(nbest, choice, references):.2f}%")


def run():
  cli.run_main(main, "score_pll", COMMAND_LINE)


if __name__ == "__main__":
  run()
