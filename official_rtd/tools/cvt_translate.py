r"""Translates an English file with a trained `run_cvt --tasks=translate` run (its kept EMA
weights), one sentence per line, with the run's beam search: `cvt_predict` for translation runs.

  cvt_translate --model_dir=/runs/mt --input_file=test.en --output_file=test.de

Output: one detokenized German line per input line (empty lines stay empty), written atomically.
It decodes as the run did (its recorded --beam_size and --max_decode_length) unless the flags say
otherwise; the log says which values it used. Score it with `sacrebleu test.de.ref < test.de`.
"""
import dataclasses
from typing import Optional

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.tools import cvt_predict  # pylint: disable=g-bad-import-order


@dataclasses.dataclass(frozen=True)
class CvtTranslateConfig:
  model_dir: str
  input_file: str
  output_file: str
  trial: int = 0
  beam_size: Optional[int] = None
  max_decode_length: Optional[int] = None
  overwrite: bool = False


COMMAND_LINE = cli.Flags(CvtTranslateConfig, {
    "model_dir": "A run_cvt --tasks=translate --model_dir.",
    "input_file": "English text, one sentence per line (raw; Moses-tokenized here).",
    "output_file": "Where the German translations go, one per line.",
    "trial": "Which trial's weights (trial_<k>/model; counts from 0 as the folders do).",
    **cvt_predict.DECODING_HELP,
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, ranges=cvt_predict.RANGES)


def main(config):
  cvt_predict.predict(cvt_predict.CvtPredictConfig(**dataclasses.asdict(config)),
                      only="translate")


def run():
  cli.run_main(main, "cvt_translate", COMMAND_LINE)


if __name__ == "__main__":
  run()
