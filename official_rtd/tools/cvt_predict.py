r"""Labels new text with a trained `run_cvt` run (a trial's kept EMA weights): tags for a tagger,
trees for a parser, translations for a translator.

  cvt_predict --model_dir=/runs/chunk --input_file=news.txt --output_file=news.chunks
  cvt_predict --model_dir=/runs/dep --input_file=dev.conllu --input_format=conllu \
      --output_file=dev.pred.conllu
  cvt_predict --model_dir=/runs/mt --input_file=news.en --output_file=news.de

Input (`--input_format`, unset: read off the file's content and said; given, refused where the
content shows another): `text`, a sentence per line (tokens split on whitespace; translation: raw
English, Moses-tokenized here; a blank line stays an empty sentence in every task, so output
sentence k is input line k), `conll` (the first column of a column file, blank lines between
sentences) or `conllu`. Output: tagging `word tag` columns (IOB2
for chunking and NER), a blank line after each sentence; parsing CoNLL-U with the predicted heads
and relations (MST decoding; the input's tags and ids kept); translation detokenized German, a
line per input line. A translation decodes as the run did (its recorded --beam_size and
--max_decode_length) unless the flags say otherwise. Progress and an ETA every 30 s; the output
is written atomically.
"""
import dataclasses
from typing import Callable, Optional

from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.cvt import settings  # pylint: disable=g-bad-import-order

INPUT_FORMATS = ("text", "conll", "conllu")  # `cvt/task.py` reads each


@dataclasses.dataclass(frozen=True)
class CvtPredictConfig:
  model_dir: str
  input_file: str
  output_file: str
  task: str = ""
  trial: int = 0
  input_format: Optional[str] = None
  beam_size: Optional[int] = None
  max_decode_length: Optional[int] = None
  overwrite: bool = False


# The decoding flags: unset, the run's recorded setting, else `CvtRunConfig`'s default.
DECODING_HELP = {
    "beam_size": "Beam size (unset: the run's own --beam_size, as its dev predictions were "
                 "decoded).",
    "max_decode_length": "Longest translation, in words (unset: the run's own).",
}
RANGES = {**{k: settings.RUN_CONFIG_RANGES[k] for k in DECODING_HELP},
          "trial": (0, None, True)}

COMMAND_LINE = cli.Flags(CvtPredictConfig, {
    "model_dir": "A run_cvt --model_dir (finished, or evaluated at least once).",
    "input_file": "The text to label (see --input_format).",
    "output_file": "Where the predictions go (tagging: word tag columns; parsing: CoNLL-U; "
                   "translation: German lines).",
    "task": "Which of the run's tasks (unset: its only one).",
    "trial": "Which trial's weights (trial_<k>/model; counts from 0 as the folders do).",
    "input_format": "text: a sentence per line (a blank line stays an empty sentence, so output "
                    "sentence k is input line k); conll: the first column of a column file; "
                    "conllu: Universal Dependencies (tagging and parsing). Unset: read off the "
                    "file's content (and said); given, refused where the content shows another.",
    **{k: "translate: " + text for k, text in DECODING_HELP.items()},
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_file"),
}, enums={"input_format": list(INPUT_FORMATS)}, ranges=RANGES)


def decoding(model_dir: str, beam_size: Optional[int], max_decode_length: Optional[int]) -> dict:
  """`{setting: (value, where it came from)}` for the beam size and length: each flag given,
  else the run's recorded one (`run_fingerprint.json`), else `CvtRunConfig`'s default."""
  from official_rtd.trials import fingerprint  # pylint: disable=g-import-not-at-top
  recorded = fingerprint.recorded_settings(model_dir)
  defaults = fingerprint.field_defaults(settings.CvtRunConfig)
  given = {"beam_size": beam_size, "max_decode_length": max_decode_length}
  out = {}
  for name in DECODING_HELP:
    if given[name] is not None:
      out[name] = (given[name], "--" + name)
    elif name in recorded:
      out[name] = (recorded[name], "the run's")
    else:
      out[name] = (defaults[name], "default")
  return out


def predict(config, log: Callable[[str], None] = logging.info, only: str = "") -> None:
  """Loads the run, picks the task (`only`: the one this tool accepts) and writes the output."""
  from official_rtd.cvt import run_dir  # pylint: disable=g-import-not-at-top
  from official_rtd.cvt import task as task_lib  # pylint: disable=g-import-not-at-top
  cli.claim_output_file(config.output_file, config.overwrite)
  chosen = decoding(config.model_dir, config.beam_size, config.max_decode_length)
  run = run_dir.load(config.model_dir, config.trial, {k: v for k, (v, _) in chosen.items()})
  names = sorted(run.tasks)
  name = only or config.task or (names[0] if len(names) == 1 else "")
  if not name:
    raise ValueError(f"--model_dir={config.model_dir} trained {', '.join(names)}: name one with "
                     "--task")
  if name not in run.tasks:
    raise ValueError(f"--model_dir={config.model_dir} is not a run of {name} (its tasks: "
                     f"{', '.join(names)})")
  task = run.tasks[name]
  if config.input_format and config.input_format not in task.input_formats:
    raise ValueError(f"--input_format={config.input_format}: {name} reads "
                     f"{', '.join(task.input_formats)}")
  input_format = task_lib.input_format_of(config.input_file, config.input_format, log)
  if input_format not in task.input_formats:
    raise ValueError(f"{config.input_file} reads as --input_format={input_format}: {name} reads "
                     f"{', '.join(task.input_formats)}")
  if task.decoding_settings:
    log("decoding with " + ", ".join(f"{k}={v} ({source})" for k, (v, source) in chosen.items()
                                      if k in task.decoding_settings))
  count = task.predict_file(run, config.input_file, config.output_file, input_format, log)
  log(f"wrote {count} {task.output_unit} to {config.output_file}")


def main(config):
  predict(config)


def run():
  cli.run_main(main, "cvt_predict", COMMAND_LINE)


if __name__ == "__main__":
  run()
