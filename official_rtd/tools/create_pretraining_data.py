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
from absl import logging

from official_rtd.tools import cli  # first: quiets TensorFlow's C++ start-up output
from official_rtd.data import data_config

COMMAND_LINE = cli.Flags(data_config.DataConfig, {
    "input_files": "Text files: comma lists and/or globs; repeatable (local paths or gs:// and "
                   "other tf.io.gfile URLs).",
    "input_tfds": "Instead of --input_files: a TFDS text dataset already prepared in "
                  "--tfds_data_dir, e.g. wikipedia/20230601.en (never downloaded).",
    "tfds_data_dir": "TFDS data directory of --input_tfds ('': TFDS's default).",
    "tfds_split": "Split of --input_tfds to read.",
    "tfds_text_key": "Text feature of --input_tfds (one document each).",
    "runner": "local: this machine's worker pool; or an Apache Beam runner (DirectRunner, "
              "DataflowRunner, FlinkRunner, SparkRunner, ...).",
    "beam_pipeline_options": "Options for the Beam runner, as on its command line, e.g. "
                             "'--project=P --region=R --temp_location=gs://B/tmp "
                             "--setup_file=./setup.py'.",
    "vocab_file": "The vocabulary: a WordPiece vocab.txt (one token per line), a SentencePiece "
                  "*.model or a Hugging Face *.json tokenizer.",
    "output_dir": "Directory for the TFRecord shards and the JSON sidecar.",
    "do_lower_case": "Lower-case and strip accents; unset: as the vocabulary implies (never for "
                     "SentencePiece and Hugging Face tokenizers, which normalise text themselves; "
                     "for WordPiece, lower-cased unless the vocabulary is cased).",
    "tokenizer": "tensorflow-text FastBertTokenizer ('fast') or BertTokenizer ('bert').",
    "max_seq_length": "Tokens per example, [CLS]/[SEP] included.",
    "short_seq_prob": "Probability that an example targets a random length in [5, "
                      "max_seq_length].",
    "single_segment_prob": "Probability that an example is one segment instead of "
                           "[CLS] A [SEP] B [SEP].",
    "packing": "fill: cut the line that crosses an example's end and carry the rest over; "
               "electra: ELECTRA's builder, which truncates the overflow; sentences: "
               "sentence-level examples (paragraphs split by BlingFire; one segment of whole "
               "sentences of one document, --sentences_per_example at most).",
    "sentences_per_example": "With --packing=sentences: at most this many consecutive sentences "
                             "per example (0: as many as fit in --max_seq_length); a sentence "
                             "longer than --max_seq_length - 2 pieces is cut (the count is "
                             "reported).",
    "dupe_factor": "Differently masked copies of each example (0: unmasked, dynamic masking).",
    "mask_prob": "Fraction of (non-special) tokens to mask.",
    "max_predictions_per_seq": "Maximum masked positions per example.",
    "mask_strategy": "electra: 85% [MASK] / 15% kept; bert: 80% [MASK] / 10% random / 10% kept; "
                     "mask_only: 100% [MASK].",
    "whole_word_mask": "Mask whole words (a piece and its ## pieces).",
    "num_shards": "Number of output TFRecord shards.",
    "gzip": "GZIP-compress the shards.",
    "seed": "Random seed; the output is identical for a seed.",
    "num_workers": "Worker processes (0: one per CPU core); local runner and DirectRunner.",
    "chunk_bytes": "Text per work unit (a document is never split; an example never spans two "
                   "chunks).",
    "shuffle_chunks": "Write the chunks in an order shuffled by --seed (a chunk's own records "
                      "stay in text order). Off: corpus order, so that a run reading a fraction "
                      "of an epoch sees the first files only and a mixed corpus arrives source by "
                      "source (the input pipeline's shuffle buffer spans a few chunks).",
    "on_decode_error": "What to do with a line that is not valid UTF-8 (the error names "
                       "file:line).",
    "overwrite": "Replace records that other settings or another vocabulary made in "
                 "--output_dir (without it they are refused; the same settings redo them).",
}, enums={"tokenizer": ["fast", "bert"], "packing": ["fill", "electra", "sentences"],
          "mask_strategy": ["electra", "bert", "mask_only"], "on_decode_error": ["fail", "skip"]})


def main(config: data_config.DataConfig):
  from official_rtd.data import worker_pool  # pylint: disable=g-import-not-at-top
  if config.runner == "local":
    worker_pool.prestart(config.num_workers)  # its TensorFlow import overlaps ours
  cli.quiet_device_probe()
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  pretraining_data.create_pretraining_data(config, log=logging.info)


def run():
  cli.run_main(main, "create_pretraining_data", COMMAND_LINE, probe_devices=False)


if __name__ == "__main__":
  run()
