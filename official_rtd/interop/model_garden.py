"""Import of Model Garden ELECTRA checkpoints (`models.ElectraPretrainer` over
`networks.BertEncoder` generator and discriminator, as `official/nlp/tasks/electra_task.py` trains
and saves them with `tf.train.Checkpoint(model=...)`).

Model Garden's encoders are built from the same layers as ours, so weights copy layer by layer.
Model Garden ties only the token embeddings: the generator's position/segment embeddings and
embedding LayerNorm are its own, and ours (shared with the discriminator) take the
discriminator's. Model Garden TEAMS checkpoints are not supported.
"""
import re

from official.nlp.modeling import models as mg_models
from official.nlp.modeling import networks as mg_networks
import tensorflow as tf
import tf_keras

from official_rtd.interop.electra_tf1 import CheckpointImportError
from official_rtd.methods import base
from official_rtd.methods import electra
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks import transformer_encoder
from official_rtd.utils import checkpoint_files

NUM_PREDICTIONS = 1  # any value: it only shapes the call


def model_garden_electra(config: EncoderConfig, generator_size: float = 0.25):
  """Model Garden's ELECTRA of our config's sizes (the layout its checkpoints have)."""

  def encoder(c, embedding_layer=None):
    return mg_networks.BertEncoder(
        vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_layers=c.num_layers,
        num_attention_heads=c.num_attention_heads, max_sequence_length=c.max_position_embeddings,
        type_vocab_size=c.type_vocab_size, inner_dim=c.intermediate_size,
        inner_activation=transformer_encoder.gelu, embedding_width=c.embedding_size,
        embedding_layer=embedding_layer, dict_outputs=True)

  discriminator = encoder(config)
  generator = encoder(config.scaled(generator_size),
                      embedding_layer=discriminator.get_embedding_layer())
  return mg_models.ElectraPretrainer(
      generator_network=generator, discriminator_network=discriminator,
      vocab_size=config.vocab_size, num_classes=2, num_token_predictions=NUM_PREDICTIONS,
      mlm_activation=transformer_encoder.gelu,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range))


def _dummy_batch():
  return dict(base.dummy_inputs(4, NUM_PREDICTIONS),
              masked_lm_weights=tf.ones([1, NUM_PREDICTIONS]))


# Model Garden's embedding layers (Keras layer names in its functional `BertEncoder`) -> ours.
EMBEDDING_LAYERS = {"word_embeddings": "word_embeddings",
                    "position_embedding": "position_embeddings",
                    "type_embeddings": "type_embeddings", "embeddings/layer_norm": "layer_norm"}


def _copy_encoder(mg_encoder, ours, embeddings_from):
  """Copies a Model Garden `BertEncoder` into ours through its public Keras API (`get_layer` by
  name, `transformer_layers`); the embeddings come from `embeddings_from`."""
  for mg_name, name in EMBEDDING_LAYERS.items():
    getattr(ours.embeddings, name).set_weights(embeddings_from.get_layer(mg_name).get_weights())
  if ours.embedding_projection is not None:
    ours.embedding_projection.set_weights(
        mg_encoder.get_layer("embedding_projection").get_weights())
  for mg_layer, layer in zip(mg_encoder.transformer_layers, ours.transformer_layers):
    copy_weights_by_name(mg_layer, layer)


def copy_weights_by_name(source: tf_keras.layers.Layer, target: tf_keras.layers.Layer):
  """Gives `target` the weights of `source`, matched by their names inside each layer.

  Between Model Garden's Transformer block and ours, `get_weights()` lists differ in order (ours
  tracks its attention after its other sublayers); names are the same.

  Raises:
    CheckpointImportError: when the two layers' weight names differ.
  """
  def by_name(layer):
    return {v.name.split(f"{layer.name}/", 1)[-1]: v for v in layer.weights}
  theirs, ours = by_name(source), by_name(target)
  if theirs.keys() != ours.keys():
    raise CheckpointImportError(f"{target.name}: weights {sorted(ours)} do not match "
                                f"{source.name}'s {sorted(theirs)}")
  for name, variable in ours.items():
    variable.assign(theirs[name])


def _embedding_hint(message: str) -> str:
  """", its word embeddings are V × E (...)" when TensorFlow's restore error is about the token
  table (another vocabulary: the usual cause), else ""."""
  found = re.search(r"incompatible tensor with shape \((\d+), (\d+)\) when attempting to restore "
                    r"variable with shape \((\d+), \d+\) and name word_embeddings", message)
  if not found:
    return ""
  return (f"; its word embeddings are {found.group(1)} × {found.group(2)}: a vocabulary of "
          f"{found.group(1)} entries, not {found.group(3)} (give the checkpoint's own "
          "--vocab_file)")


def _restore_error(message: str) -> str:
  """TensorFlow's restore error in one short line: variables by name, never their values (its
  "objects not bound" error lists each `tf.Variable` with its numpy contents)."""
  unbound = re.search(r"Found (\d+) Python objects that were not bound", message)
  names = re.findall(r"<tf\.Variable '([^':]+)(?::\d+)?'", message)
  if unbound:
    return (f"{unbound.group(1)} of the model's variables have no value in the checkpoint (e.g. "
            f"{', '.join(names[:3])}): it is not a Model Garden ElectraPretrainer checkpoint, or "
            "not of these sizes")
  text = re.sub(r"<tf\.Variable '([^']+)'.*?>", r"\1", message, flags=re.S)
  return " ".join(text.split())[:300]


def import_model_garden_electra(checkpoint: str, config: EncoderConfig,
                                generator_size: float = 0.25) -> electra.ElectraPretrainer:
  """Our ELECTRA (tied embeddings) with a Model Garden ELECTRA checkpoint's weights.

  Raises:
    CheckpointImportError: when the checkpoint is missing or its variables do not fit `config`.
  """
  path = tf.train.latest_checkpoint(checkpoint) if tf.io.gfile.isdir(checkpoint) else checkpoint
  if not path or not tf.io.gfile.glob(path + ".index"):
    raise CheckpointImportError(f"no checkpoint at {checkpoint}")
  mg_model = model_garden_electra(config, generator_size)
  mg_model(_dummy_batch())
  try:
    with checkpoint_files.quiet_restore_warnings():
      tf.train.Checkpoint(model=mg_model).read(path).assert_existing_objects_matched(
          ).expect_partial()
  except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as e:
    raise CheckpointImportError(
        f"{path} does not fit a Model Garden ELECTRA of these sizes (vocabulary "
        f"{config.vocab_size}, hidden {config.hidden_size}, {config.num_layers} layers, generator "
        f"{generator_size}){_embedding_hint(str(e))}: {_restore_error(str(e))}") from None
  ours = registry.build("electra", config, generator_size=generator_size)
  ours(_dummy_batch(), training=False)
  discriminator = mg_model.discriminator_network
  _copy_encoder(discriminator, ours.discriminator, discriminator)
  _copy_encoder(mg_model.generator_network, ours.generator, discriminator)
  ours.masked_lm.set_weights(mg_model.masked_lm.get_weights())
  ours.rtd_head.dense.set_weights(mg_model.discriminator_projection.get_weights())
  ours.rtd_head.logit.set_weights(mg_model.discriminator_head.get_weights())
  return ours
