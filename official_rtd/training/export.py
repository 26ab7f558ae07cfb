"""Export of the fine-tunable encoder: `<model_dir>/export/{encoder.*, encoder_config.json, vocab.txt}`."""
import json
import os
import shutil

import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.data import records
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder

EXPORT_DIR = "export"
CONFIG_NAME = "encoder_config.json"
VOCAB_NAME = "vocab.txt"
WEIGHTS_PREFIX = "encoder"


def export_encoder(model, vocab: vocab_lib.Vocab, model_dir: str, max_seq_length: int) -> str:
  """Writes the model's exported encoder (ELECTRA: the discriminator; the generator is dropped),
  its config and the vocab into a temporary directory, then moves it to `<model_dir>/export`."""
  final = os.path.join(model_dir, EXPORT_DIR)
  tmp = f"{final}.tmp-{os.getpid()}"
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  encoder = model.exported_encoder
  tf.train.Checkpoint(encoder=encoder).write(os.path.join(tmp, WEIGHTS_PREFIX))
  shutil.copyfile(vocab.path, os.path.join(tmp, VOCAB_NAME))
  records.write_json_atomic(os.path.join(tmp, CONFIG_NAME), {
      "encoder": encoder.config.to_json(), "method": model.name, "vocab_sha256": vocab.sha256,
      "max_seq_length": max_seq_length})
  shutil.rmtree(final, ignore_errors=True)
  os.replace(tmp, final)
  return final


def load_encoder(export_dir: str) -> TransformerEncoder:
  """Rebuilds an exported encoder and restores its weights (for fine-tuning)."""
  with open(os.path.join(export_dir, CONFIG_NAME), encoding="utf-8") as f:
    config = EncoderConfig(**json.load(f)["encoder"])
  encoder = TransformerEncoder(config, name="encoder")
  dummy = tf.zeros([1, 2], tf.int32)
  encoder({"input_word_ids": dummy, "input_mask": tf.ones_like(dummy), "input_type_ids": dummy})
  tf.train.Checkpoint(encoder=encoder).read(
      os.path.join(export_dir, WEIGHTS_PREFIX)).assert_existing_objects_matched()
  return encoder
