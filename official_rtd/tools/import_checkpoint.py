r"""Imports an ELECTRA checkpoint from another implementation: an encoder export that `run_glue`
and `run_squad` fine-tune (`--init_checkpoint=<output_dir>/export`), and the whole pre-training
model (generator included when the source has one) that `run_pretraining --init_checkpoint=
<output_dir>` continues, with its sizes in `<output_dir>/operative_config.gin`.

  import_checkpoint --source=electra_tf1 --checkpoint=electra_small/electra_small \
      --vocab_file=electra_small/vocab.txt --output_dir=/runs/electra_small_public
  import_checkpoint --source=model_garden --checkpoint=/mg/electra/ckpt-1000000 \
      --gin_file=gin/models/small.gin --vocab_file=vocab.txt --output_dir=/runs/mg_small
  import_checkpoint --source=huggingface --checkpoint=electra-small-discriminator \
      --generator=electra-small-generator --output_dir=/runs/hf_small

`electra_tf1`: google-research/electra checkpoints (sizes read from the checkpoint; attention heads
default to hidden / 64). `model_garden`: Model Garden `ElectraPretrainer` checkpoints of the sizes in
`--gin_file` (and `--generator_size`). `huggingface`: transformers' ELECTRA directories
(`config.json` + `model.safetensors` or `tf_model.h5`, `vocab.txt`): `--checkpoint` an
`ElectraForPreTraining` (or `ElectraModel`), `--generator` an `ElectraForMaskedLM`; sizes from
`config.json`, embeddings shared when both hold the same tables. Missing or mis-shaped variables
fail with their names.
"""

from official_rtd.tools import cli

from absl import flags  # pylint: disable=g-bad-import-order
from absl import logging

flags.DEFINE_enum("source", None, ["electra_tf1", "model_garden", "huggingface"],
                  "Checkpoint layout.")
flags.DEFINE_string("checkpoint", None, "Checkpoint prefix (or directory for model_garden and "
                    "huggingface: the discriminator's).")
flags.DEFINE_string("generator", None, "huggingface: the ElectraForMaskedLM directory (optional).")
flags.DEFINE_string("vocab_file", None, "The checkpoint's vocabulary: a WordPiece vocab.txt, a "
                    "SentencePiece .model or a tokenizer.json (huggingface: default the "
                    "checkpoint's vocab.txt, tokenizer.json, spm.model or spiece.model, first "
                    "found).")
flags.DEFINE_string("output_dir", None, "Writes <output_dir>/export.")
flags.DEFINE_bool("do_lower_case", True, "Whether a WordPiece vocab is uncased (huggingface: "
                  "default the checkpoint's tokenizer_config.json); SentencePiece and "
                  "tokenizer.json vocabularies normalise text themselves (False).")
flags.DEFINE_integer("max_seq_length", 512, "Recorded in the export's config.")
flags.DEFINE_integer("num_attention_heads", None, "electra_tf1: discriminator heads "
                     "(default hidden / 64).")
flags.DEFINE_integer("generator_num_attention_heads", None, "electra_tf1: generator heads "
                     "(default hidden / 64).")
flags.DEFINE_multi_string("gin_file", None, "model_garden: a gin/models/ file with the sizes.")
flags.DEFINE_float("generator_size", 0.25, "model_garden: the generator's width multiplier.")
cli.define_overwrite_flag()
flags.mark_flags_as_required(["source", "checkpoint", "output_dir"])
FLAGS = flags.FLAGS


def main(_):
  from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import electra_tf1  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import init_checkpoint  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import export  # pylint: disable=g-import-not-at-top
  cli.claim_output_dir(FLAGS.output_dir, FLAGS.overwrite)
  vocab_file, do_lower_case = FLAGS.vocab_file, FLAGS.do_lower_case
  if FLAGS.source == "huggingface":
    from official_rtd.interop import huggingface  # pylint: disable=g-import-not-at-top
    vocab_file = vocab_file or huggingface.checkpoint_vocab(FLAGS.checkpoint)
    if not FLAGS["do_lower_case"].present:
      do_lower_case = huggingface.tokenizer_options(FLAGS.checkpoint).get("do_lower_case", True)
  elif FLAGS.generator:
    raise ValueError("--generator is for --source=huggingface (other checkpoints hold both)")
  if not vocab_file:
    raise ValueError(f"--source={FLAGS.source} needs --vocab_file (the checkpoint's vocab)")
  vocab = vocab_lib.load_vocab(vocab_file)
  if vocab.kind != "wordpiece":  # its tokenizer file normalises text itself
    do_lower_case = do_lower_case and FLAGS["do_lower_case"].present
    vocab.check_casing(do_lower_case)
  if FLAGS.source == "huggingface":
    model = huggingface.import_huggingface(FLAGS.checkpoint, FLAGS.generator, log=logging.info)
  elif FLAGS.source == "electra_tf1":
    model = electra_tf1.import_electra_tf1(FLAGS.checkpoint, FLAGS.num_attention_heads,
                                           FLAGS.generator_num_attention_heads)
  else:
    if not FLAGS.gin_file:
      raise ValueError("--source=model_garden needs --gin_file (the model's sizes)")
    import gin  # pylint: disable=g-import-not-at-top
    from official_rtd.interop import model_garden  # pylint: disable=g-import-not-at-top
    from official_rtd.modeling.encoder_config import EncoderConfig  # pylint: disable=g-import-not-at-top
    from official_rtd import runs  # pylint: disable=g-import-not-at-top
    runs.parse_gin(FLAGS.gin_file, [])
    try:
      config = EncoderConfig(vocab_size=vocab.size)
    finally:
      gin.clear_config()
    model = model_garden.import_model_garden_electra(FLAGS.checkpoint, config,
                                                     FLAGS.generator_size)
  size = model.discriminator.config.vocab_size
  if size != vocab.size:
    raise ValueError(f"--vocab_file {vocab_file} has {vocab.size} tokens but the "
                     f"checkpoint's embeddings have {size} rows")
  path = export.export_encoder(model, vocab, FLAGS.output_dir, FLAGS.max_seq_length,
                               do_lower_case)
  logging.info("wrote %s (hidden %d, %d layers); fine-tune with --init_checkpoint=%s", path,
               model.discriminator.config.hidden_size, model.discriminator.config.num_layers,
               path)
  checkpoint = init_checkpoint.write_pretraining_checkpoint(
      model, vocab, FLAGS.output_dir, do_lower_case,
      {"source": FLAGS.source, "checkpoint": FLAGS.checkpoint, "generator": FLAGS.generator})
  logging.info("wrote %s (%s) and %s/operative_config.gin; continue pre-training with "
               "--gin_file=%s/operative_config.gin --gin_file=tasks/electra.gin "
               "--init_checkpoint=%s", checkpoint,
               "generator and discriminator" if model.generator is not None
               else "discriminator only", FLAGS.output_dir, FLAGS.output_dir, FLAGS.output_dir)


def run():
  cli.run_main(main, "import_checkpoint")


if __name__ == "__main__":
  run()
