"""Import of google-research/electra TF1 checkpoints (the public ELECTRA-Small/Base/Large) into our
ELECTRA: discriminator encoder + RTD head, and the generator + MLM head when present.

Variable names (BERT's `modeling.py` plus ELECTRA's heads):
  electra/embeddings/{word_embeddings, position_embeddings, token_type_embeddings, LayerNorm/*}
  electra/embeddings_project/{kernel, bias}                      (when embedding size ≠ hidden)
  electra/encoder/layer_N/attention/self/{query,key,value}/{kernel,bias}
  electra/encoder/layer_N/attention/output/{dense/*, LayerNorm/*}
  electra/encoder/layer_N/{intermediate/dense/*, output/dense/*, output/LayerNorm/*}
  discriminator_predictions/{dense, dense_1}/{kernel, bias}
  generator/{embeddings_project, encoder/layer_N/...}             (embeddings: electra/ if tied,
                                                                   generator/embeddings if not)
  generator_predictions/{dense/*, LayerNorm/*, output_bias}

Sizes are read from the checkpoint's shapes; attention heads default to hidden / 64 (every public
ELECTRA size) and can be given. Every variable of ours must be found with the right shape, or the
error names the missing or mismatched checkpoint variables.
"""
import re
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from official_rtd.interop import bert_layout
from official_rtd.methods import electra
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder


class CheckpointImportError(ValueError):
  """A checkpoint that does not match what the importer expects; names the variables."""


class _Reader:
  """Checkpoint tensors by name, recording what was asked for and not found or mis-shaped."""

  def __init__(self, path: str):
    try:
      self.reader = tf.train.load_checkpoint(path)
    except (tf.errors.NotFoundError, ValueError) as e:
      raise CheckpointImportError(f"cannot read checkpoint {path}: {e}") from None
    self.path = path
    self.shapes = self.reader.get_variable_to_shape_map()
    self.problems: List[str] = []

  def has(self, name: str) -> bool:
    return name in self.shapes

  def get(self, name: str, shape: Tuple[int, ...]) -> Optional[np.ndarray]:
    """The tensor reshaped to `shape` (same number of elements), or None (and a problem noted)."""
    if name not in self.shapes:
      self.problems.append(f"missing {name}")
      return None
    if int(np.prod(self.shapes[name])) != int(np.prod(shape)):
      self.problems.append(f"{name} has shape {self.shapes[name]}, expected {list(shape)}")
      return None
    return self.reader.get_tensor(name).reshape(shape)


def _num_layers(shapes, prefix: str) -> int:
  pattern = re.compile(rf"^{prefix}/encoder/layer_(\d+)/")
  layers = {int(m.group(1)) for name in shapes for m in [pattern.match(name)] if m}
  return max(layers) + 1 if layers else 0


def infer_config(reader: _Reader, prefix: str, embeddings_prefix: str,
                 num_attention_heads: Optional[int]) -> EncoderConfig:
  """An encoder config from the checkpoint's shapes (heads: given, or hidden / 64)."""
  shapes = reader.shapes
  word = f"{embeddings_prefix}/embeddings/word_embeddings"
  query = f"{prefix}/encoder/layer_0/attention/self/query/kernel"
  for name in (word, query):
    if name not in shapes:
      raise CheckpointImportError(f"{reader.path} is not a google-research/electra checkpoint: "
                                  f"it has no {name}")
  vocab_size, embedding_size = shapes[word]
  hidden = shapes[query][1]
  return EncoderConfig(
      vocab_size=vocab_size, hidden_size=hidden, num_layers=_num_layers(shapes, prefix),
      num_attention_heads=num_attention_heads or max(1, hidden // 64),
      intermediate_size=shapes[f"{prefix}/encoder/layer_0/intermediate/dense/kernel"][1],
      embedding_size=embedding_size,
      max_position_embeddings=shapes[f"{embeddings_prefix}/embeddings/position_embeddings"][0],
      type_vocab_size=shapes[f"{embeddings_prefix}/embeddings/token_type_embeddings"][0])


def _assignments(encoder: TransformerEncoder, prefix: str, embeddings_prefix: Optional[str]):
  """[(our variable, checkpoint name)] for an encoder (embeddings skipped when None)."""
  pairs = []
  if embeddings_prefix:
    e = f"{embeddings_prefix}/embeddings"
    emb = encoder.embeddings
    pairs += [(emb.embedding_table, f"{e}/word_embeddings"),
              (emb.position_embeddings.weights[0], f"{e}/position_embeddings"),
              (emb.type_embeddings.embeddings, f"{e}/token_type_embeddings"),
              (emb.layer_norm.gamma, f"{e}/LayerNorm/gamma"),
              (emb.layer_norm.beta, f"{e}/LayerNorm/beta")]
  if encoder.embedding_projection is not None:
    kernel, bias = encoder.embedding_projection.weights
    pairs += [(kernel, f"{prefix}/embeddings_project/kernel"),
              (bias, f"{prefix}/embeddings_project/bias")]
  else:  # the checkpoint must not have one either
    pairs.append((None, f"{prefix}/embeddings_project/kernel"))
  for i, block in enumerate(encoder.transformer_layers):
    for path, layer in bert_layout.block_layers(block):
      name = f"{prefix}/encoder/layer_{i}/{path}"
      if hasattr(layer, "gamma"):
        pairs += [(layer.gamma, f"{name}/gamma"), (layer.beta, f"{name}/beta")]
      else:
        pairs += [(layer.kernel, f"{name}/kernel"), (layer.bias, f"{name}/bias")]
  return pairs


def import_electra_tf1(checkpoint: str, num_attention_heads: Optional[int] = None,
                       generator_num_attention_heads: Optional[int] = None
                       ) -> electra.ElectraPretrainer:
  """Our ELECTRA with the checkpoint's weights (generator included when the checkpoint has one).

  Raises:
    CheckpointImportError: naming every missing or mis-shaped checkpoint variable.
  """
  reader = _Reader(checkpoint)
  config = infer_config(reader, "electra", "electra", num_attention_heads)
  has_generator = reader.has("generator/encoder/layer_0/attention/self/query/kernel")
  tied = not reader.has("generator/embeddings/word_embeddings")
  options = {"generator_size": 0.0}  # no generator in the checkpoint: a discriminator alone
  if has_generator:
    generator_config = infer_config(reader, "generator", "electra" if tied else "generator",
                                    generator_num_attention_heads)
    options = {"generator_config": generator_config,
               "embedding_sharing": "shared" if tied else "none"}
  model = registry.build("electra", config, **options)
  electra.create_variables(model)
  discriminator, generator = model.discriminator, model.generator
  pairs = _assignments(discriminator, "electra", "electra")
  if has_generator:
    pairs += _assignments(generator, "generator", None if tied else "generator")
    masked_lm = model.masked_lm
    pairs += [(masked_lm.dense.kernel, "generator_predictions/dense/kernel"),
              (masked_lm.dense.bias, "generator_predictions/dense/bias"),
              (masked_lm.layer_norm.gamma, "generator_predictions/LayerNorm/gamma"),
              (masked_lm.layer_norm.beta, "generator_predictions/LayerNorm/beta"),
              (masked_lm.bias, "generator_predictions/output_bias")]
  head = model.rtd_head
  pairs += [(head.dense.kernel, "discriminator_predictions/dense/kernel"),
            (head.dense.bias, "discriminator_predictions/dense/bias"),
            (head.logit.kernel, "discriminator_predictions/dense_1/kernel"),
            (head.logit.bias, "discriminator_predictions/dense_1/bias")]
  values: Dict[int, np.ndarray] = {}
  for variable, name in pairs:
    if variable is None:
      if reader.has(name):
        reader.problems.append(f"unexpected {name} (embedding size equals hidden size here)")
      continue
    value = reader.get(name, tuple(variable.shape))
    if value is not None:
      values[id(variable)] = value
  if reader.problems:
    raise CheckpointImportError(f"{checkpoint} does not fit an ELECTRA of the inferred sizes "
                                f"({len(reader.problems)} problems): "
                                + "; ".join(reader.problems[:10]))
  for variable, _ in pairs:
    if variable is not None:
      variable.assign(values[id(variable)])
  return model
