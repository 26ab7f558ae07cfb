r"""Learns a vocabulary from text files: WordPiece (`vocab.txt`) or SentencePiece (`.model`).

  build_vocab --input_files='corpus/*.txt' --vocab_size=30522 --output_file=vocab.txt
  build_vocab --input_files=zh.txt --model_type=sentencepiece_unigram --nodo_lower_case \
    --vocab_size=16000 --output_file=zh.model
"""
import dataclasses
import os

from absl import logging

from official_rtd.tools import cli


@dataclasses.dataclass(frozen=True)
class BuildVocabConfig:
  input_files: tuple
  output_file: str
  vocab_size: int = 30522
  do_lower_case: bool = True
  on_decode_error: str = "fail"
  sample_lines: int = 0
  seed: int = 12345
  learner: str = "tokenizers"
  model_type: str = "wordpiece"
  character_coverage: float = 0.9995
  byte_fallback: bool = False
  overwrite: bool = False


COMMAND_LINE = cli.Flags(BuildVocabConfig, {
    "input_files": "Text files: comma lists and/or globs; repeatable.",
    "output_file": "Where to write the vocabulary (one token per line).",
    "vocab_size": "Maximum vocabulary size, special tokens included.",
    "do_lower_case": "Learn an uncased vocabulary (--nodo_lower_case: cased), as "
                     "create_pretraining_data's --do_lower_case.",
    "on_decode_error": "What to do with a line that is not valid UTF-8.",
    "sample_lines": "Learn from a uniform random sample of this many lines (0: every line). The "
                    "corpus is still read once, but only the sample is held and counted: a few "
                    "million lines give word counts close to the full corpus's; words rarer than "
                    "one in --sample_lines lines may be missed (they are still spelled by pieces).",
    "seed": "Seed of the --sample_lines sample.",
    "learner": "WordPiece learner: tokenizers (Hugging Face's, fast) or tensorflow_text (the "
               "learner of earlier versions, for byte-identical vocabularies).",
    "model_type": "wordpiece: a BERT vocab.txt; sentencepiece_*: a SentencePiece model "
                  "(--output_file must end in .model) that normalises text itself, for any "
                  "language (no splitting on spaces: Chinese and Japanese need no pre-tokeniser).",
    "character_coverage": "SentencePiece: the fraction of the corpus's characters given their "
                          "own piece (0.9995 for CJK-rich text, 1.0 for small alphabets); rarer "
                          "characters become [UNK] or, with --byte_fallback, bytes.",
    "byte_fallback": "SentencePiece: spell characters without a piece as UTF-8 byte pieces "
                     "instead of [UNK] (no unknown characters; useful for CJK).",
    "overwrite": "Replace an existing --output_file (only once the new vocabulary is complete).",
}, enums={"on_decode_error": ["fail", "skip"], "learner": ["tokenizers", "tensorflow_text"],
          "model_type": ["wordpiece", "sentencepiece_unigram", "sentencepiece_bpe"]},
    ranges={"vocab_size": (1, None, True), "sample_lines": (0, None, True)},
    renamed={"lower_case": "do_lower_case"})


def main(config: BuildVocabConfig):
  from official_rtd.data import build_vocab  # pylint: disable=g-import-not-at-top
  if os.path.isfile(config.output_file) and not config.overwrite:
    # Records and runs made with it would no longer match their vocabulary.
    raise ValueError(f"--output_file={config.output_file} already exists: nothing was written; "
                     "give a new path, or --overwrite to replace it")
  build_vocab.build_vocab(list(config.input_files), config.output_file,
                          vocab_size=config.vocab_size, lower_case=config.do_lower_case,
                          on_decode_error=config.on_decode_error, log=logging.info,
                          sample_lines=config.sample_lines, seed=config.seed,
                          learner=config.learner, model_type=config.model_type,
                          character_coverage=config.character_coverage,
                          byte_fallback=config.byte_fallback)


def run():
  cli.run_main(main, "build_vocab", COMMAND_LINE)


if __name__ == "__main__":
  run()
