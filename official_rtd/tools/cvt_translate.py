r"""Translates an English file with a trained `run_cvt --tasks=translate` run (its kept EMA
weights), one sentence per line, with the run's beam search.

  cvt_translate --model_dir=/runs/mt --input_file=test.en --output_file=test.de

Output: one detokenized German line per input line (empty lines stay empty), written atomically.
Score it with `sacrebleu test.de.ref < test.de`.
"""
import dataclasses

from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.utils import textio


@dataclasses.dataclass(frozen=True)
class CvtTranslateConfig:
  model_dir: str
  input_file: str
  output_file: str
  trial: int = 0
  beam_size: int = 10
  max_decode_length: int = 50
  overwrite: bool = False


COMMAND_LINE = cli.Flags(CvtTranslateConfig, {
    "model_dir": "A run_cvt --tasks=translate --model_dir.",
    "input_file": "English text, one sentence per line (raw; Moses-tokenized here).",
    "output_file": "Where the German translations go, one per line.",
    "trial": "Which trial's weights (trial_<k>/model).",
    "beam_size": "Beam size (the paper: 10).",
    "max_decode_length": "Longest translation, in words.",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, ranges={"beam_size": (1, None, True), "max_decode_length": (1, None, True),
           "trial": (0, None, True)})


def main(config):
  from official_rtd.cvt import translator  # pylint: disable=g-import-not-at-top
  cli.claim_output_file(config.output_file, config.overwrite)
  lines = [line.rstrip("\n") for _, line in textio.numbered_lines(config.input_file)]
  vocab, model, target_vocab = translator.load(config.model_dir, config.trial)
  out = translator.translate_lines(lines, vocab, model, target_vocab, config.beam_size,
                                   config.max_decode_length, logging.info)
  textio.write_lines_atomic(config.output_file, out)
  logging.info("wrote %d lines to %s", len(out), config.output_file)


def run():
  cli.run_main(main, "cvt_translate", COMMAND_LINE)


if __name__ == "__main__":
  run()
