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
from official_rtd import textio
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("run_dir", None, "A run_pretraining --model_dir (any method that can score).")
flags.DEFINE_string("input_file", None, "Sentences to score, one per line.")
flags.DEFINE_string("nbest_file", None, "N-best lists: id<TAB>hypothesis<TAB>score.")
flags.DEFINE_string("references", None, "With --nbest_file: id<TAB>reference, to report WER.")
flags.DEFINE_float("lm_weight", 1.0, "λ in score + λ·PLL for re-ranking.")
flags.DEFINE_string("tune_lm_weight_on", None, "A dev n-best file: choose λ from "
                    "--lm_weight_grid by its WER there (needs --tune_references); overrides "
                    "--lm_weight.")
flags.DEFINE_string("tune_references", None, "id<TAB>reference for --tune_lm_weight_on.")
flags.DEFINE_list("lm_weight_grid", None, "λ values --tune_lm_weight_on tries; unset: 0.05, "
                  "0.1, ..., 0.95, 1.0 (dissertation §5.4.5).")
flags.DEFINE_string("output_file", None, "Where to write the TSV output.")
flags.DEFINE_integer("max_seq_length", 128, "Pieces per sentence, [CLS]/[SEP] included.")
flags.DEFINE_integer("eval_batch_size", 16, "Sentences per batch.")
cli.define_overwrite_flag("--output_file")
cli.define_renamed_flag("model_dir", "run_dir", required=True)
cli.define_renamed_flag("batch_size", "eval_batch_size")
flags.mark_flags_as_required(["output_file"])
FLAGS = flags.FLAGS


def _score_nbest(model, tokenizer, nbest):
  """{(id, index): PLL} of every hypothesis."""
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  flat = [(key, i, hyp) for key, hyps in nbest.items() for i, (hyp, _) in enumerate(hyps)]
  plls, _ = scoring.score_sentences(model, tokenizer, [h for _, _, h in flat],
                                    FLAGS.max_seq_length, FLAGS.eval_batch_size)
  return {(key, i): float(p) for (key, i, _), p in zip(flat, plls)}


def main(_):
  from official_rtd.data import records  # pylint: disable=g-import-not-at-top
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  if bool(FLAGS.input_file) == bool(FLAGS.nbest_file):
    raise ValueError("give exactly one of --input_file and --nbest_file")
  if bool(FLAGS.tune_lm_weight_on) != bool(FLAGS.tune_references):
    raise ValueError("--tune_lm_weight_on and --tune_references go together")
  try:
    grid = ([float(w) for w in FLAGS.lm_weight_grid] if FLAGS.lm_weight_grid
            else scoring.LM_WEIGHT_GRID)
  except ValueError:
    raise ValueError(f"--lm_weight_grid must be numbers, got {FLAGS.lm_weight_grid}") from None
  cli.claim_output_file(FLAGS.output_file, FLAGS.overwrite)
  model, tokenizer = runs.load_model(FLAGS.run_dir)
  if FLAGS.input_file:
    sentences = [line.strip() for _, line in textio.numbered_lines(FLAGS.input_file)
                 if line.strip()]
    if not sentences:
      raise ValueError(f"{FLAGS.input_file} holds no sentences")
    plls, lengths = scoring.score_sentences(model, tokenizer, sentences, FLAGS.max_seq_length,
                                            FLAGS.eval_batch_size)
    records.write_lines_atomic(FLAGS.output_file, [
        f"{i + 1}\t{p:.4f}\t{n}\t{s}" for i, (p, n, s) in enumerate(zip(plls, lengths, sentences))])
    logging.info("scored %d sentences -> %s", len(sentences), FLAGS.output_file)
    return
  nbest = scoring.read_nbest(FLAGS.nbest_file)
  lm_weight = FLAGS.lm_weight
  if FLAGS.tune_lm_weight_on:
    dev = scoring.read_nbest(FLAGS.tune_lm_weight_on)
    dev_references = scoring.read_references(FLAGS.tune_references, dev)
    lm_weight, wers = scoring.tune_lm_weight(dev, _score_nbest(model, tokenizer, dev),
                                             dev_references, grid)
    print(f"lm_weight {lm_weight:g} chosen on {FLAGS.tune_lm_weight_on}: dev WER "
          f"{wers[lm_weight]:.2f}% (grid {min(grid):g}..{max(grid):g}: "
          f"{min(wers.values()):.2f}–{max(wers.values()):.2f}%)")
  by_key = _score_nbest(model, tokenizer, nbest)
  best = scoring.rerank(nbest, by_key, lm_weight)
  records.write_lines_atomic(
      FLAGS.output_file,
      [f"{key}\t{nbest[key][i][0]}\t{nbest[key][i][1]}\t{by_key[(key, i)]:.4f}"
       for key, i in best.items()])
  logging.info("re-ranked %d n-best lists -> %s", len(best), FLAGS.output_file)
  if FLAGS.references:
    references = scoring.read_references(FLAGS.references, nbest)
    first_pass = scoring.rerank(nbest, {k: 0.0 for k in by_key}, 0.0)
    for name, choice in (("first pass", first_pass), ("re-ranked", best)):
      print(f"WER {name}: {scoring.corpus_wer(nbest, choice, references):.2f}%")


def run():
  cli.run_main(main, "score_pll")


if __name__ == "__main__":
  run()
