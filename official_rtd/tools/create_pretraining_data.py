r"""Builds pre-training TFRecords (static N× masking) from a text corpus.

Input format: one sentence or paragraph per line, a blank line between documents; or a prepared
TensorFlow Datasets text dataset (`--input_tfds`, one example per document).

  create_pretraining_data --input_files='corpus/*.txt' --vocab_file=vocab.txt \
      --output_dir=records/ --max_seq_length=128 --dupe_factor=40

The same stages run on Apache Beam with `--runner=DirectRunner` (here: one process per core) or
DataflowRunner / FlinkRunner / SparkRunner (`--beam_pipeline_options` carries the runner's options);
for a seed the records are the same as the local tool's.

`--dupe_factor=0` writes unmasked examples for dynamic masking by the input pipeline.
The output directory gets sharded TFRecords and a `pretraining_data.json` sidecar.
"""
import dataclasses

from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_multi_string("input_files", None, "Text files: comma lists and/or globs; repeatable "
                          "(local paths or gs:// and other tf.io.gfile URLs).")
flags.DEFINE_string("input_tfds", "", "Instead of --input_files: a TFDS text dataset already "
                    "prepared in --tfds_data_dir, e.g. wikipedia/20230601.en (never downloaded).")
flags.DEFINE_string("tfds_data_dir", "", "TFDS data directory of --input_tfds ('': TFDS's default).")
flags.DEFINE_string("tfds_split", "train", "Split of --input_tfds to read.")
flags.DEFINE_string("tfds_text_key", "text", "Text feature of --input_tfds (one document each).")
flags.DEFINE_string("runner", "local", "local: this machine's worker pool; or an Apache Beam runner "
                    "(DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, ...).")
flags.DEFINE_string("beam_pipeline_options", "", "Options for the Beam runner, as on its command "
                    "line, e.g. '--project=P --region=R --temp_location=gs://B/tmp "
                    "--setup_file=./setup.py'.")
flags.DEFINE_string("vocab_file", None, "The vocabulary: a WordPiece vocab.txt (one token per "
                    "line), a SentencePiece *.model or a Hugging Face *.json tokenizer.")
flags.DEFINE_string("output_dir", None, "Directory for the TFRecord shards and the JSON sidecar.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (match the vocab); "
                  "--nodo_lower_case for SentencePiece and Hugging Face tokenizers, which "
                  "normalise text themselves.")
flags.DEFINE_enum("tokenizer", "fast", ["fast", "bert"],
                  "tensorflow-text FastBertTokenizer ('fast') or BertTokenizer ('bert').")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example, [CLS]/[SEP] included.")
flags.DEFINE_float("short_seq_prob", 0.05,
                   "Probability that an example targets a random length in [5, max_seq_length].")
flags.DEFINE_float("single_segment_prob", 0.1,
                   "Probability that an example is one segment instead of [CLS] A [SEP] B [SEP].")
flags.DEFINE_enum("packing", "fill", ["fill", "electra"],
                  "fill: cut the line that crosses an example's end and carry the rest over; "
                  "electra: ELECTRA's builder, which truncates the overflow.")
flags.DEFINE_integer("dupe_factor", 40,
                     "Differently masked copies of each example (0: unmasked, dynamic masking).")
flags.DEFINE_float("mask_prob", 0.15, "Fraction of (non-special) tokens to mask.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum masked positions per example.")
flags.DEFINE_enum("mask_strategy", "electra", ["electra", "bert"],
                  "electra: 85% [MASK] / 15% kept; bert: 80% [MASK] / 10% random / 10% kept.")
flags.DEFINE_bool("whole_word_mask", False, "Mask whole words (a piece and its ## pieces).")
flags.DEFINE_integer("num_shards", 8, "Number of output TFRecord shards.")
flags.DEFINE_bool("gzip", False, "GZIP-compress the shards.")
flags.DEFINE_integer("seed", 12345, "Random seed; the output is identical for a seed.")
flags.DEFINE_integer("num_workers", 0, "Worker processes (0: one per CPU core); local runner and "
                     "DirectRunner.")
flags.DEFINE_integer("chunk_bytes", 1 << 20,
                     "Text per work unit (a document is never split; an example never spans "
                     "two chunks).")
flags.DEFINE_enum("on_decode_error", "fail", ["fail", "skip"],
                  "What to do with a line that is not valid UTF-8 (the error names file:line).")
flags.mark_flags_as_required(["vocab_file", "output_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.data import worker_pool  # pylint: disable=g-import-not-at-top
  if FLAGS.runner == "local":
    worker_pool.prestart(FLAGS.num_workers)  # its TensorFlow import overlaps ours
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  fields = {f.name for f in dataclasses.fields(pretraining_data.DataConfig)}
  values = {name: FLAGS[name].value for name in fields if name != "input_files"}
  config = pretraining_data.DataConfig(input_files=tuple(cli.split_list(FLAGS.input_files or [])),
                                       **values)
  pretraining_data.create_pretraining_data(config, log=logging.info)


def run():
  cli.run_main(main, "create_pretraining_data")


if __name__ == "__main__":
  run()
