r"""Learns word vectors from unlabeled text with gensim's word2vec (skip-gram) and writes them in
GloVe's text format, for `run_cvt --word_embeddings` (needs `pip install -e ".[vectors]"`).

  train_word_vectors --input_files='../shared/data/wiki/wiki_*.txt' --dim=300 \
      --output_file=/tmp/wiki_w2v_300.txt

Words are lowercased with digits as 0, as run_cvt looks them up.
"""
import dataclasses

from absl import logging

from official_rtd.tools import cli


@dataclasses.dataclass(frozen=True)
class TrainWordVectorsConfig:
  input_files: str
  output_file: str
  dim: int = 300
  min_count: int = 3
  window: int = 5
  epochs: int = 5
  max_sentences: int = 0
  one_sentence_per_line: bool = False
  workers: int = 2
  seed: int = 0
  overwrite: bool = False


COMMAND_LINE = cli.Flags(TrainWordVectorsConfig, {
    "input_files": "Comma list of text files/globs (a paragraph per line, or see "
                   "--one_sentence_per_line).",
    "output_file": "Where the vectors go (GloVe text format).",
    "dim": "Vector size (run_cvt's --word_dim).",
    "min_count": "Words seen fewer times get no vector.",
    "window": "Context window, in words each side.",
    "epochs": "Passes over the text.",
    "max_sentences": "Read at most this many sentences (0: all).",
    "one_sentence_per_line": "Each line is one sentence of space-separated tokens.",
    "workers": "Training threads.",
    "seed": "word2vec's seed.",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, ranges={"dim": (1, None, True), "min_count": (1, None, True), "window": (1, None, True),
           "epochs": (1, None, True), "workers": (1, None, True), "max_sentences": (0, None, True)})


def main(config):
  from official_rtd.cvt import word_vectors  # pylint: disable=g-import-not-at-top
  cli.claim_output_file(config.output_file, config.overwrite)
  words = word_vectors.train(config.input_files.split(","), config.output_file, config.dim,
                             config.min_count, config.window, config.epochs,
                             config.max_sentences, config.workers, config.one_sentence_per_line,
                             config.seed, logging.info)
  logging.info("wrote %d vectors to %s", words, config.output_file)


def run():
  cli.run_main(main, "train_word_vectors", COMMAND_LINE)


if __name__ == "__main__":
  run()
