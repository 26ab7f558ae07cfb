r"""Exports a pre-training run for use elsewhere.

  export_model --run_dir=/runs/electra_small --format=huggingface --output_dir=/runs/hf
  export_model --run_dir=/runs/electra_small --format=saved_model --output_dir=/runs/saved

`huggingface`: `<output_dir>/discriminator` (`transformers.ElectraForPreTraining`, or
`ElectraModel` for methods without ELECTRA's RTD head) and `<output_dir>/generator`
(`ElectraForMaskedLM`, for masked-LM generators), each with `model.safetensors`, `config.json`
and the vocabulary's tokenizer files (`vocab.txt`, `spm.model` or `tokenizer.json`), loadable with
`from_pretrained`. `saved_model`: a TF SavedModel whose `serving_default` signature takes raw
strings (a WordPiece or SentencePiece tokenizer runs in the graph). The run's
latest checkpoint is used (`--ema`: the average of its weights); the output directory is replaced
only when the export is complete.
"""
from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_string("run_dir", None, "A run_pretraining model_dir (operative_config.gin + "
                    "checkpoints).")
flags.DEFINE_enum("format", "huggingface", ["huggingface", "saved_model"], "What to write.")
flags.DEFINE_string("output_dir", None, "Where the export goes (a new or empty directory).")
cli.define_overwrite_flag()
flags.DEFINE_integer("max_seq_length", 512, "Longest input the tokenizer config / the SavedModel "
                     "signature allows (capped at the encoder's positions; >= 3: [CLS], a "
                     "piece, [SEP]).", lower_bound=3)
flags.DEFINE_boolean("ema", False, "Export the average of the weights the run kept "
                     "(TrainConfig.ema_decay > 0) instead of the weights themselves.")
cli.define_renamed_flag("model_dir", "run_dir", required=True)
flags.mark_flags_as_required(["output_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.interop import huggingface  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import saved_model  # pylint: disable=g-import-not-at-top
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  if not FLAGS.overwrite:  # refuse an occupied --output_dir before loading anything
    cli.claim_output_dir(FLAGS.output_dir, False)
  model, tokenizer = runs.load_model(FLAGS.run_dir, weight_average=FLAGS.ema)
  if FLAGS.overwrite:  # move it aside only once the model has loaded
    cli.claim_output_dir(FLAGS.output_dir, True)
  max_len = min(FLAGS.max_seq_length, model.exported_encoder.config.max_position_embeddings)
  if FLAGS.format == "huggingface":
    written = huggingface.export_huggingface(model, tokenizer.vocab, FLAGS.output_dir,
                                             tokenizer.do_lower_case, max_len)
    for part, architecture in written.items():
      logging.info("wrote %s/%s (transformers.%s)", FLAGS.output_dir, part, architecture)
  else:
    saved_model.export_saved_model(model, tokenizer.vocab, FLAGS.output_dir,
                                   tokenizer.do_lower_case, max_len)
    logging.info("wrote SavedModel %s (signature serving_default: text -> sequence_output)",
                 FLAGS.output_dir)


def run():
  cli.run_main(main, "export_model")


if __name__ == "__main__":
  run()
