r"""Imports an ELECTRA checkpoint from another implementation: an encoder export that `run_glue`
and `run_squad` fine-tune (`--init_checkpoint=<output_dir>/export`), and the whole pre-training
model (generator included when the source has one) that `run_pretraining --warm_start_from=
<output_dir>` continues, with its sizes in `<output_dir>/operative_config.gin`.

  import_checkpoint --source=electra_tf1 --checkpoint=electra_small/electra_small \
      --vocab_file=electra_small/vocab.txt --output_dir=/runs/electra_small_public
  import_checkpoint --source=model_garden --checkpoint=/mg/electra/ckpt-1000000 \
      --gin_file=gin/models/small.gin --vocab_file=vocab.txt --output_dir=/runs/mg_small
  import_checkpoint --source=huggingface --checkpoint=electra-small-discriminator \
      --generator=electra-small-generator --output_dir=/runs/hf_small

`electra_tf1`: google-research/electra checkpoints (sizes read from the checkpoint; attention heads
default to hidden / 64). `model_garden`: Model Garden `ElectraPretrainer` checkpoints of the sizes
in `--gin_file` (and `--generator_size`). `huggingface`: transformers' ELECTRA directories
(`config.json` + `model.safetensors` or `tf_model.h5`, `vocab.txt`): `--checkpoint` an
`ElectraForPreTraining` (or `ElectraModel`), `--generator` an `ElectraForMaskedLM`; sizes from
`config.json`, embeddings shared when both hold the same tables. Missing or mis-shaped variables
fail with their names.
"""

import dataclasses
import os
from typing import Optional

from absl import logging

from official_rtd.tools import cli


@dataclasses.dataclass(frozen=True)
class ImportCheckpointConfig:
  source: str
  checkpoint: str
  output_dir: str
  generator: str = ""
  vocab_file: str = ""
  do_lower_case: Optional[bool] = None
  max_seq_length: int = 512
  num_attention_heads: Optional[int] = None
  generator_num_attention_heads: Optional[int] = None
  gin_file: tuple = ()
  generator_size: float = 0.25
  overwrite: bool = False


COMMAND_LINE = cli.Flags(ImportCheckpointConfig, {
    "source": "Checkpoint layout.",
    "checkpoint": "Checkpoint prefix (or directory for model_garden and huggingface: the "
                  "discriminator's).",
    "generator": "huggingface: the ElectraForMaskedLM directory (optional).",
    "vocab_file": "The checkpoint's vocabulary: a WordPiece vocab.txt, a SentencePiece .model or "
                  "a tokenizer.json (huggingface: default the checkpoint's vocab.txt, "
                  "tokenizer.json, spm.model or spiece.model, first found).",
    "output_dir": "Writes <output_dir>/export.",
    "do_lower_case": "Whether a WordPiece vocab is uncased (unset: true; huggingface: the "
                     "checkpoint's tokenizer_config.json); SentencePiece and tokenizer.json "
                     "vocabularies normalise text themselves (false).",
    "max_seq_length": "Recorded in the export's config.",
    "num_attention_heads": "electra_tf1: discriminator heads (unset: hidden / 64).",
    "generator_num_attention_heads": "electra_tf1: generator heads (unset: hidden / 64).",
    "gin_file": "model_garden: a gin/models/ file with the sizes.",
    "generator_size": "model_garden: the generator's width multiplier.",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_dir"),
}, enums={"source": ["electra_tf1", "model_garden", "huggingface"]})


def main(config):
  from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import electra_tf1  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import export  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import init_checkpoint  # pylint: disable=g-import-not-at-top
  if not config.overwrite:  # an occupied --output_dir is refused before anything is read
    cli.claim_output_dir(config.output_dir, False)
  vocab_file = config.vocab_file
  do_lower_case = True if config.do_lower_case is None else config.do_lower_case
  if config.source == "huggingface":
    from official_rtd.interop import huggingface  # pylint: disable=g-import-not-at-top
    vocab_file = vocab_file or huggingface.checkpoint_vocab(config.checkpoint)
    if config.do_lower_case is None:
      do_lower_case = huggingface.tokenizer_options(config.checkpoint).get("do_lower_case", True)
  elif config.generator:
    raise ValueError("--generator is for --source=huggingface (other checkpoints hold both)")
  if not vocab_file:
    raise ValueError(f"--source={config.source} needs --vocab_file (the checkpoint's vocab)")
  vocab = vocab_lib.load_vocab(vocab_file)
  if vocab.kind != "wordpiece":  # its tokenizer file normalises text itself
    do_lower_case = do_lower_case and (config.do_lower_case is not None)
    vocab.check_casing(do_lower_case)
  if config.source == "huggingface":
    model = huggingface.import_huggingface(config.checkpoint, config.generator, log=logging.info)
  elif config.source == "electra_tf1":
    model = electra_tf1.import_electra_tf1(config.checkpoint, config.num_attention_heads,
                                           config.generator_num_attention_heads)
  else:
    if not config.gin_file:
      raise ValueError("--source=model_garden needs --gin_file (the model's sizes)")
    import gin  # pylint: disable=g-import-not-at-top

    from official_rtd import runs  # pylint: disable=g-import-not-at-top
    from official_rtd.interop import model_garden  # pylint: disable=g-import-not-at-top
    from official_rtd.modeling.encoder_config import \
        EncoderConfig  # pylint: disable=g-import-not-at-top
    runs.parse_gin(config.gin_file, [])
    try:
      encoder_config = EncoderConfig(vocab_size=vocab.size)
    finally:
      gin.clear_config()
    model = model_garden.import_model_garden_electra(config.checkpoint, encoder_config,
                                                     config.generator_size)
  size = model.discriminator.config.vocab_size
  if size != vocab.size:
    raise ValueError(f"--vocab_file {vocab_file} has {vocab.size} tokens but the "
                     f"checkpoint's embeddings have {size} rows")
  with cli.staged_output_dir(config.output_dir, config.overwrite) as staging:
    os.makedirs(staging)
    export.export_encoder(model, vocab, staging, config.max_seq_length, do_lower_case)
    checkpoint = init_checkpoint.write_pretraining_checkpoint(
        model, vocab, staging, do_lower_case, {"source": config.source,
                                               "checkpoint": config.checkpoint,
                                               "generator": config.generator or None})
  path = os.path.join(config.output_dir, export.EXPORT_DIR)
  checkpoint = os.path.join(config.output_dir, os.path.relpath(checkpoint, staging))
  logging.info("wrote %s (hidden %d, %d layers); fine-tune with --init_checkpoint=%s", path,
               model.discriminator.config.hidden_size, model.discriminator.config.num_layers,
               path)
  logging.info("wrote %s (%s) and %s/operative_config.gin; continue pre-training with "
               "--gin_file=%s/operative_config.gin --gin_file=tasks/electra.gin "
               "--warm_start_from=%s", checkpoint,
               "generator and discriminator" if model.generator is not None
               else "discriminator only", config.output_dir, config.output_dir, config.output_dir)


def run():
  cli.run_main(main, "import_checkpoint", COMMAND_LINE)


if __name__ == "__main__":
  run()
