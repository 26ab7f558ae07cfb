"""What `import_checkpoint` writes next to the fine-tuning export: the whole pre-training model
(generator included when the source has one) as a checkpoint `run_pretraining --warm_start_from`
accepts, the gin sizes that rebuild it (`operative_config.gin`) and the vocab, laid out like a
run directory (so `export_model` and `score_pll` read it too)."""
import dataclasses
import os

import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import run_dir
from official_rtd.modeling.encoder_config import EncoderConfig


def _config_lines(config: EncoderConfig, scope: str = "") -> list:
  prefix = f"{scope}/" if scope else ""
  return [f"{prefix}EncoderConfig.{field.name} = {getattr(config, field.name)!r}"
          for field in dataclasses.fields(config)]


def sizes_gin(model, source: str) -> str:
  """Gin bindings that rebuild `model` (an ELECTRA): the discriminator's `EncoderConfig`, the
  generator's as `build_electra_pretrainer.generator_config`, the embedding sharing."""
  discriminator = model.discriminator.config
  lines = [f"# import_checkpoint of {source}: the model's sizes. Compose before a task file:",
           "#   run_pretraining --gin_file=<this file> --gin_file=tasks/electra.gin "
           "--warm_start_from=<this directory> ...",
           "pretraining_model.method = 'electra'", *_config_lines(discriminator),
           "MASK_PROB = 0.15"]
  if model.generator is None:
    lines += ["GENERATOR_SIZE = 0.0", "build_electra_pretrainer.generator_size = 0.0"]
  else:
    generator = model.generator.config
    sharing = ("shared" if model.generator.embeddings is model.discriminator.embeddings
               else "none")
    lines += [f"GENERATOR_SIZE = {generator.hidden_size / discriminator.hidden_size!r}",
              "build_electra_pretrainer.generator_config = @generator/EncoderConfig()",
              *_config_lines(generator, "generator"),
              f"build_electra_pretrainer.embedding_sharing = {sharing!r}"]
  return "\n".join(lines) + "\n"


def write_pretraining_checkpoint(model, vocab: vocab_lib.Vocab, output_dir: str,
                                 do_lower_case: bool, source: dict) -> str:
  """Writes `<output_dir>/ckpt-0.*` (`tf.train.Checkpoint(model=...)`, as run_pretraining's),
  `operative_config.gin`, `vocab.txt` and `run_flags.json` (`source`); returns the prefix."""
  os.makedirs(output_dir, exist_ok=True)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), output_dir,
                                       max_to_keep=1)
  path = manager.save(checkpoint_number=0)
  run_dir.write_run_config(output_dir, sizes_gin(model, source.get("checkpoint", "?")),
                           dict(source, imported=True), vocab, do_lower_case)
  return path
