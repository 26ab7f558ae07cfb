r"""Learns a vocabulary from text files: WordPiece (`vocab.txt`) or SentencePiece (`.model`).

  build_vocab --input_files='corpus/*.txt' --vocab_size=30522 --output_file=vocab.txt
  build_vocab --input_files=zh.txt --model_type=sentencepiece_unigram --nodo_lower_case \
    --vocab_size=16000 --output_file=zh.model
"""
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_multi_string("input_files", None, "Text files: comma lists and/or globs; repeatable.")
flags.DEFINE_string("output_file", None, "Where to write the vocabulary (one token per line).")
flags.DEFINE_integer("vocab_size", 30522, "Maximum vocabulary size, special tokens included.")
flags.DEFINE_bool("do_lower_case", True, "Learn an uncased vocabulary (--nodo_lower_case: "
                  "cased), as create_pretraining_data's --do_lower_case.")
cli.define_renamed_flag("lower_case", "do_lower_case")
flags.DEFINE_enum("on_decode_error", "fail", ["fail", "skip"],
                  "What to do with a line that is not valid UTF-8.")
flags.DEFINE_integer("sample_lines", 0,
                     "Learn from a uniform random sample of this many lines (0: every line). The "
                     "corpus is still read once, but only the sample is held and counted: a few "
                     "million lines give word counts close to the full corpus's; words rarer than "
                     "one in --sample_lines lines may be missed (they are still spelled by pieces).")
flags.DEFINE_integer("seed", 12345, "Seed of the --sample_lines sample.")
flags.DEFINE_enum("learner", "tokenizers", ["tokenizers", "tensorflow_text"],
                  "WordPiece learner: tokenizers (Hugging Face's, fast) or tensorflow_text (the "
                  "learner of earlier versions, for byte-identical vocabularies).")
flags.DEFINE_enum("model_type", "wordpiece",
                  ["wordpiece", "sentencepiece_unigram", "sentencepiece_bpe"],
                  "wordpiece: a BERT vocab.txt; sentencepiece_*: a SentencePiece model "
                  "(--output_file must end in .model) that normalises text itself, for any "
                  "language (no splitting on spaces: Chinese and Japanese need no pre-tokeniser).")
flags.DEFINE_float("character_coverage", 0.9995, "SentencePiece: the fraction of the corpus's "
                   "characters given their own piece (0.9995 for CJK-rich text, 1.0 for small "
                   "alphabets); rarer characters become [UNK] or, with --byte_fallback, bytes.")
flags.DEFINE_bool("byte_fallback", False, "SentencePiece: spell characters without a piece as "
                  "UTF-8 byte pieces instead of [UNK] (no unknown characters; useful for CJK).")
flags.mark_flags_as_required(["input_files", "output_file"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.data import build_vocab  # pylint: disable=g-import-not-at-top
  build_vocab.build_vocab(cli.split_list(FLAGS.input_files), FLAGS.output_file,
                          vocab_size=FLAGS.vocab_size, lower_case=FLAGS.do_lower_case,
                          on_decode_error=FLAGS.on_decode_error, log=logging.info,
                          sample_lines=FLAGS.sample_lines, seed=FLAGS.seed,
                          learner=FLAGS.learner, model_type=FLAGS.model_type,
                          character_coverage=FLAGS.character_coverage,
                          byte_fallback=FLAGS.byte_fallback)


def run():
  cli.run_main(main, "build_vocab")


if __name__ == "__main__":
  run()
