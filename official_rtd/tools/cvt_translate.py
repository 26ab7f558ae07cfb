r"""Translates an English file with a trained `run_cvt --tasks=translate` run (its kept EMA
weights), one sentence per line, with the run's beam search.

  cvt_translate --model_dir=/runs/mt --input_file=test.en --output_file=test.de

Output: one detokenized German line per input line (empty lines stay empty), written atomically.
Score it with `sacrebleu test.de.ref < test.de`.
"""
import dataclasses
from typing import Optional

from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.cvt import settings  # pylint: disable=g-bad-import-order
from official_rtd.utils import textio


@dataclasses.dataclass(frozen=True)
class CvtTranslateConfig:
  model_dir: str
  input_file: str
  output_file: str
  trial: int = 0
  beam_size: Optional[int] = None
  max_decode_length: Optional[int] = None
  overwrite: bool = False


# What decodes as the run did when a flag is unset (the run's recorded setting), else this.
DECODING_DEFAULTS = {"beam_size": 10, "max_decode_length": 50}


COMMAND_LINE = cli.Flags(CvtTranslateConfig, {
    "model_dir": "A run_cvt --tasks=translate --model_dir.",
    "input_file": "English text, one sentence per line (raw; Moses-tokenized here).",
    "output_file": "Where the German translations go, one per line.",
    "trial": "Which trial's weights (trial_<k>/model; counts from 0 as the folders do).",
    "beam_size": "Beam size (unset: the run's own --beam_size, as its dev predictions were "
                 "decoded).",
    "max_decode_length": "Longest translation, in words (unset: the run's own).",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, ranges={**{k: settings.RUN_CONFIG_RANGES[k] for k in DECODING_DEFAULTS},
           "trial": (0, None, True)})


def decoding(config) -> dict:
  """The beam size and length to decode with: each flag given, else the run's recorded one
  (`run_fingerprint.json`), else `DECODING_DEFAULTS`; and where each came from."""
  from official_rtd.finetune import fingerprint  # pylint: disable=g-import-not-at-top
  recorded = fingerprint.recorded_settings(config.model_dir)
  out = {}
  for name, default in DECODING_DEFAULTS.items():
    given = getattr(config, name)
    if given is not None:
      out[name] = (given, "--" + name)
    elif name in recorded:
      out[name] = (recorded[name], "the run's")
    else:
      out[name] = (default, "default")
  return out


def main(config):
  from official_rtd.cvt import translator  # pylint: disable=g-import-not-at-top
  cli.claim_output_file(config.output_file, config.overwrite)
  lines = [line.rstrip("\n") for _, line in textio.numbered_lines(config.input_file)]
  vocab, model, target_vocab = translator.load(config.model_dir, config.trial)
  settings = decoding(config)
  logging.info("decoding with %s", ", ".join(f"{k}={v} ({source})"
                                             for k, (v, source) in settings.items()))
  out = translator.translate_lines(lines, vocab, model, target_vocab,
                                   settings["beam_size"][0], settings["max_decode_length"][0],
                                   logging.info)
  textio.write_lines_atomic(config.output_file, out)
  logging.info("wrote %d lines to %s", len(out), config.output_file)


def run():
  cli.run_main(main, "cvt_translate", COMMAND_LINE)


if __name__ == "__main__":
  run()
