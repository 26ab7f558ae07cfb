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
import dataclasses

from absl import logging

from official_rtd.tools import cli


@dataclasses.dataclass(frozen=True)
class ExportModelConfig:
  run_dir: str
  output_dir: str
  format: str = "huggingface"
  overwrite: bool = False
  max_seq_length: int = 512
  ema: bool = False


COMMAND_LINE = cli.Flags(ExportModelConfig, {
    "run_dir": "A run_pretraining model_dir (operative_config.gin + checkpoints).",
    "format": "What to write.",
    "output_dir": "Where the export goes (a new or empty directory).",
    "overwrite": cli.OVERWRITE_HELP.format(what="--output_dir"),
    "max_seq_length": "Longest input the tokenizer config / the SavedModel signature allows "
                      "(capped at the encoder's positions; >= 3: [CLS], a piece, [SEP]).",
    "ema": "Export the average of the weights the run kept (TrainConfig.ema_decay > 0) instead "
           "of the weights themselves.",
}, enums={"format": ["huggingface", "saved_model"]}, ranges={"max_seq_length": (3, None, True)},
    renamed={"model_dir": "run_dir"})


def main(config):
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import huggingface  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import saved_model  # pylint: disable=g-import-not-at-top

  # An occupied --output_dir is refused before anything loads; with --overwrite the previous
  # export is moved aside only once the new one is complete (a failed export leaves it as it was).
  with cli.staged_output_dir(config.output_dir, config.overwrite) as staging:
    model, tokenizer = runs.load_model(config.run_dir, weight_average=config.ema)
    max_len = min(config.max_seq_length, model.exported_encoder.config.max_position_embeddings)
    if config.format == "huggingface":
      written = huggingface.export_huggingface(model, tokenizer.vocab, staging,
                                               tokenizer.do_lower_case, max_len)
    else:
      saved_model.export_saved_model(model, tokenizer.vocab, staging, tokenizer.do_lower_case,
                                     max_len)
  if config.format == "huggingface":
    for part, architecture in written.items():
      logging.info("wrote %s/%s (transformers.%s)", config.output_dir, part, architecture)
  else:
    logging.info("wrote SavedModel %s (signature serving_default: text -> sequence_output)",
                 config.output_dir)


def run():
  cli.run_main(main, "export_model", COMMAND_LINE)


if __name__ == "__main__":
  run()
