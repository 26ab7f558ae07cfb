r"""Scores text with a pre-trained model's pseudo-log-likelihood, or re-ranks n-best lists.

  score_pll --model_dir=/runs/electric --input_file=sentences.txt --output_file=scores.tsv
  score_pll --model_dir=/runs/electric --nbest_file=nbest.tsv --lm_weight=0.3 \
      [--references=refs.tsv] --output_file=reranked.tsv

Sentences: one per line; output `line<TAB>pll<TAB>pieces<TAB>text`. N-best: `id<TAB>hypothesis<TAB>
score` lines; output `id<TAB>best hypothesis<TAB>first-pass score<TAB>pll`, choosing by
score + lm_weight·PLL; with `--references` (`id<TAB>reference`) it also reports the word error rate
before and after re-ranking.
"""
import os

from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("model_dir", None, "A run_pretraining --model_dir (any method that can score).")
flags.DEFINE_string("input_file", None, "Sentences to score, one per line.")
flags.DEFINE_string("nbest_file", None, "N-best lists: id<TAB>hypothesis<TAB>score.")
flags.DEFINE_string("references", None, "With --nbest_file: id<TAB>reference, to report WER.")
flags.DEFINE_float("lm_weight", 1.0, "λ in score + λ·PLL for re-ranking.")
flags.DEFINE_string("output_file", None, "Where to write the TSV output.")
flags.DEFINE_integer("max_seq_length", 128, "Pieces per sentence, [CLS]/[SEP] included.")
flags.DEFINE_integer("batch_size", 16, "Sentences per batch.")
flags.mark_flags_as_required(["model_dir", "output_file"])
FLAGS = flags.FLAGS


def _write(path, lines):
  tmp = f"{path}.tmp-{os.getpid()}"
  with open(tmp, "w", encoding="utf-8") as f:
    f.write("".join(line + "\n" for line in lines))
  os.replace(tmp, path)


def main(_):
  from official_rtd.training import scoring  # pylint: disable=g-import-not-at-top
  if bool(FLAGS.input_file) == bool(FLAGS.nbest_file):
    raise ValueError("give exactly one of --input_file and --nbest_file")
  model, tokenizer = scoring.load_run(FLAGS.model_dir)
  if FLAGS.input_file:
    with open(FLAGS.input_file, encoding="utf-8") as f:
      sentences = [line.strip() for line in f if line.strip()]
    if not sentences:
      raise ValueError(f"{FLAGS.input_file} holds no sentences")
    plls, lengths = scoring.score_sentences(model, tokenizer, sentences, FLAGS.max_seq_length,
                                            FLAGS.batch_size)
    _write(FLAGS.output_file, [f"{i + 1}\t{p:.4f}\t{n}\t{s}" for i, (p, n, s) in
                               enumerate(zip(plls, lengths, sentences))])
    logging.info("scored %d sentences -> %s", len(sentences), FLAGS.output_file)
    return
  nbest = scoring.read_nbest(FLAGS.nbest_file)
  flat = [(key, i, hyp) for key, hyps in nbest.items() for i, (hyp, _) in enumerate(hyps)]
  plls, _ = scoring.score_sentences(model, tokenizer, [h for _, _, h in flat],
                                    FLAGS.max_seq_length, FLAGS.batch_size)
  by_key = {(key, i): float(p) for (key, i, _), p in zip(flat, plls)}
  best = scoring.rerank(nbest, by_key, FLAGS.lm_weight)
  _write(FLAGS.output_file, [f"{key}\t{nbest[key][i][0]}\t{nbest[key][i][1]}\t{by_key[(key, i)]:.4f}"
                             for key, i in best.items()])
  logging.info("re-ranked %d n-best lists -> %s", len(best), FLAGS.output_file)
  if FLAGS.references:
    references = {}
    with open(FLAGS.references, encoding="utf-8") as f:
      for line in f:
        if line.strip():
          key, _, text = line.rstrip("\n").partition("\t")
          references[key] = text
    missing = [k for k in nbest if k not in references]
    if missing:
      raise ValueError(f"{FLAGS.references} has no reference for id(s) {missing[:5]}")
    first_pass = {k: max(range(len(h)), key=lambda i, h=h: h[i][1]) for k, h in nbest.items()}
    for name, choice in (("first pass", first_pass), ("re-ranked", best)):
      errors = [scoring.word_errors(nbest[k][i][0], references[k]) for k, i in choice.items()]
      wer = 100.0 * sum(e for e, _ in errors) / max(sum(n for _, n in errors), 1)
      print(f"WER {name}: {wer:.2f}%")


def run():
  cli.run_main(main, "score_pll")


if __name__ == "__main__":
  run()
