"""Export of the fine-tunable encoder: `<model_dir>/export/{encoder.*, encoder_config.json,
vocab.txt}`."""
import os
import shutil

import tensorflow as tf

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import base
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.utils import checkpoint_files
from official_rtd.utils import textio

EXPORT_DIR = "export"
CONFIG_NAME = "encoder_config.json"
WEIGHTS_PREFIX = "encoder"


def export_encoder(model, vocab: vocab_lib.Vocab, model_dir: str, max_seq_length: int,
                   do_lower_case: bool = True, name: str = EXPORT_DIR) -> str:
  """Writes the model's exported encoder (ELECTRA: the discriminator; the generator is dropped),
  its config and the vocab into a temporary directory, then moves it to `<model_dir>/<name>`."""
  final = os.path.join(model_dir, name)
  tmp = f"{final}.tmp-{os.getpid()}"
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  encoder = model.exported_encoder.for_export()
  tf.train.Checkpoint(encoder=encoder).write(os.path.join(tmp, WEIGHTS_PREFIX))
  shutil.copyfile(vocab.path, os.path.join(tmp, vocab_lib.file_name(vocab)))
  textio.write_json_atomic(os.path.join(tmp, CONFIG_NAME), {
      "encoder": encoder.config.to_json(), "method": model.name, "vocab_sha256": vocab.sha256,
      "max_seq_length": max_seq_length, "do_lower_case": do_lower_case})
  shutil.rmtree(final, ignore_errors=True)
  os.replace(tmp, final)
  return final


class ExportError(ValueError):
  """A directory that is not a usable encoder export."""


def _read_config_and_vocab(export_dir: str):
  """The export's JSON config and its vocabulary, after checking the directory is complete and
  the vocabulary matches.

  Raises:
    ExportError: naming the directory and what is wrong.
  """
  path = os.path.join(export_dir, CONFIG_NAME)
  if not os.path.isfile(path):
    raise ExportError(f"{export_dir} is not an encoder export: it has no {CONFIG_NAME} "
                      f"(run_pretraining writes one to <model_dir>/{EXPORT_DIR})")
  config = textio.load_json(path)
  try:
    vocab = vocab_lib.load_vocab(vocab_lib.find_vocab(export_dir))
  except vocab_lib.VocabError as e:
    raise ExportError(str(e)) from None
  if vocab.sha256 != config["vocab_sha256"] or vocab.size != config["encoder"]["vocab_size"]:
    raise ExportError(f"{export_dir}: {os.path.basename(vocab.path)} does not match the encoder "
                      f"(vocab size {vocab.size} vs {config['encoder']['vocab_size']}, or a "
                      "changed file)")
  return config, vocab


def build_encoder(config: dict) -> TransformerEncoder:
  encoder = TransformerEncoder(EncoderConfig(**config["encoder"]), name="encoder")
  encoder(base.dummy_inputs(2, 1))
  return encoder


class Export:
  """An encoder export read once: its config, vocabulary and tokenizer when constructed, its
  weights at the first `encoder()` that restores them, kept in memory for the next ones (N
  fine-tuning trials read the directory once).

  Raises (constructing, or restoring):
    ExportError: naming the directory and what is wrong.
  """

  def __init__(self, export_dir: str):
    self.path = export_dir
    self.config, self.vocab = _read_config_and_vocab(export_dir)
    self.encoder_config: dict = self.config["encoder"]
    self.do_lower_case: bool = self.config.get("do_lower_case", True)
    self._tokenizer = None
    self._weights = None

  @property
  def tokenizer(self) -> tokenizer_lib.Tokenizer:
    if self._tokenizer is None:
      self._tokenizer = tokenizer_lib.for_vocab(self.vocab, self.do_lower_case)
    return self._tokenizer

  def encoder(self, restore: bool = True) -> TransformerEncoder:
    """A new encoder of the export's shape (under the current precision policy) with the
    exported weights (`restore=False`: randomly initialised)."""
    encoder = build_encoder(self.config)
    if not restore:
      return encoder
    if self._weights is not None:
      encoder.set_weights(self._weights)
      return encoder
    status = None
    try:
      with checkpoint_files.quiet_restore_warnings():
        status = tf.train.Checkpoint(encoder=encoder).read(os.path.join(self.path,
                                                                        WEIGHTS_PREFIX))
        status.assert_existing_objects_matched().expect_partial()
    except (AssertionError, ValueError, IndexError, tf.errors.OpError) as e:
      if status is not None:
        status.expect_partial()
      damaged = checkpoint_files.problem(os.path.join(self.path, WEIGHTS_PREFIX))
      if damaged:
        raise ExportError(f"{self.path}: the export's weights ({WEIGHTS_PREFIX}.*) are damaged: "
                          f"{damaged}; export the run again (export_model)") from None
      first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
      raise ExportError(f"{self.path}: the weights do not fit {CONFIG_NAME} (a damaged or "
                        f"hand-edited export?): {first[:300]}") from None
    self._weights = encoder.get_weights()
    return encoder


def load_encoder(export_dir: str, restore: bool = True) -> TransformerEncoder:
  """Rebuilds an exported encoder and (unless `restore=False`: random init of the same shape)
  restores its weights."""
  return Export(export_dir).encoder(restore)
