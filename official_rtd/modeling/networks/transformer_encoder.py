"""BERT-style Transformer encoder over (possibly shared) embeddings, from Model Garden layers."""
import functools
from typing import List, Optional, Sequence, Union

from official.modeling import tf_utils
from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.disentangled_embeddings import DisentangledEmbeddings
from official_rtd.modeling.layers.embeddings import Embeddings
from official_rtd.modeling.layers.layer_norm import LayerNorm
from official_rtd.modeling.layers.transformer_block import TransformerBlock
from official_rtd.ops import fused

POSITION_EMBEDDINGS = ("absolute", "t5_relative")


gelu = fused.gelu  # BERT's (tanh-approximated) GELU


def initializer(config: EncoderConfig):
  return tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def embedding_projection_layer(config: EncoderConfig) -> tf_keras.layers.EinsumDense:
  """The E→H projection of `[batch, seq_len, embedding_size]` embeddings.

  Its equation names every axis. With Model Garden's `...x,xy->...y`, TensorFlow's einsum gradient
  for the kernel builds an `[embedding_size, hidden, batch, seq_len]` outer product and then sums it
  (537 MB and 0.58 s of a 3.7 s ELECTRA-Small step at batch 32; `benchmarks/step_ops.py`: 614 ms
  against 3.8 ms for this equation).
  """
  return tf_keras.layers.EinsumDense(
      "btx,xy->bty", output_shape=(None, config.hidden_size), bias_axes="y",
      kernel_initializer=initializer(config), name="embedding_projection")


def build_embeddings(config: EncoderConfig,
                     share_tokens_with: Optional[Embeddings] = None) -> Embeddings:
  """The embedding layer of `config`'s sizes (no position table with relative positions); with
  `share_tokens_with`, its token table is that layer's (the rest its own)."""
  return Embeddings(
      config.vocab_size, config.embedding_size, config.max_position_embeddings,
      config.type_vocab_size, config.dropout_rate, initializer(config),
      use_position_embeddings=config.position_embedding != "t5_relative",
      shared_word_embeddings=(share_tokens_with.word_embeddings
                              if share_tokens_with is not None else None),
      name="embeddings")


def check_position_embedding(config: EncoderConfig) -> None:
  """Refuses a `config.position_embedding` none of the encoders implement."""
  if config.position_embedding not in POSITION_EMBEDDINGS:
    raise ValueError(f"EncoderConfig.position_embedding must be one of {POSITION_EMBEDDINGS}, "
                     f"got {config.position_embedding!r}")


def relative_position_bias(config: EncoderConfig, name: str = "relative_position_bias"
                           ) -> layers.RelativePositionBias:
  """T5's relative position biases of `config`'s heads and buckets (both directions)."""
  return layers.RelativePositionBias(
      num_heads=config.num_attention_heads,
      relative_attention_num_buckets=config.relative_attention_num_buckets,
      relative_attention_max_distance=config.relative_attention_max_distance,
      bidirectional=True, embeddings_initializer=initializer(config), name=name)


def transformer_block(config: EncoderConfig, name: str,
                      position_bias: Optional[layers.RelativePositionBias] = None
                      ) -> tf_keras.layers.Layer:
  """One Transformer block (Model Garden's, with our dropout) of `config`'s sizes, post- or
  pre-LayerNorm (`config.norm_first`); with a `position_bias`, its attention adds T5 relative
  position biases."""
  return TransformerBlock(
      position_bias=position_bias, norm_first=config.norm_first,
      num_attention_heads=config.num_attention_heads, inner_dim=config.intermediate_size,
      inner_activation=gelu, output_dropout=config.dropout_rate,
      attention_dropout=config.attention_dropout_rate,
      kernel_initializer=tf_utils.clone_initializer(initializer(config)), name=name)


class TransformerEncoder(tf_keras.layers.Layer):
  """Embeddings -> (projection to hidden size) -> `num_layers` Transformer blocks.

  Args:
    config: sizes; `config.vocab_size` must be set.
    embeddings: an `Embeddings` layer to share (e.g. the discriminator's) or a
      `DisentangledEmbeddings` over one (GDES); built from `config` when None. With
      `embedding_size != hidden_size` each encoder owns its projection.
    transformer_layers: blocks to share (e.g. `tie_all`); built when None, as `num_layers`
      blocks or, with `config.share_layers` (ALBERT), one block applied `num_layers` times.
    embedding_projection: an E→H projection to share (e.g. an encoder view over another's layers).
    stop_gradient_after: 1-based layer numbers whose output is passed on to the next layer under
      stop-gradient (AMOS: each block between two MLM heads trains only on its own head's loss);
      `encoder_outputs` still carry gradient.
    position_bias: with `t5_relative` positions, a `RelativePositionBias` to share (e.g. the
      discriminator's, for a generator over some of its layers); built when None.
    final_layer_norm: with `config.norm_first`, the LayerNorm after the last block to share (an
      export view); built when None. Intermediate `encoder_outputs` of pre-LayerNorm blocks are
      the unnormalised residual stream; the last is normalised (it is `sequence_output`).
  """

  def __init__(self, config: EncoderConfig,
               embeddings: Optional[Union[Embeddings, DisentangledEmbeddings]] = None,
               transformer_layers: Optional[List[tf_keras.layers.Layer]] = None,
               embedding_projection: Optional[tf_keras.layers.Layer] = None,
               stop_gradient_after: Sequence[int] = (),
               position_bias: Optional[layers.RelativePositionBias] = None,
               final_layer_norm: Optional[LayerNorm] = None, **kwargs):
    super().__init__(**kwargs)
    self.stop_gradient_after = frozenset(stop_gradient_after)
    if config.vocab_size is None:
      raise ValueError("EncoderConfig.vocab_size is not set")
    check_position_embedding(config)
    self.config = config
    relative = config.position_embedding == "t5_relative"
    self.embeddings = embeddings or build_embeddings(config)
    self.position_bias = position_bias or (relative_position_bias(config) if relative else None)
    self.embedding_projection = embedding_projection
    if embedding_projection is None and config.embedding_size != config.hidden_size:
      self.embedding_projection = embedding_projection_layer(config)
    block = functools.partial(transformer_block, config, position_bias=self.position_bias)
    if transformer_layers is not None:
      self.transformer_layers = transformer_layers
    elif config.share_layers:
      self.transformer_layers = [block("transformer/shared_layer")] * config.num_layers
    else:
      self.transformer_layers = [block(f"transformer/layer_{i}") for i in range(config.num_layers)]
    self.attention_mask_layer = layers.SelfAttentionMask()
    # Pre-LayerNorm blocks leave the residual stream unnormalised: one LayerNorm after the last.
    self.final_layer_norm = None
    if config.norm_first:
      self.final_layer_norm = final_layer_norm or LayerNorm(epsilon=1e-12, name="final_layer_norm")

  def get_embedding_table(self):
    """`[vocab_size, embedding_size]` token table: a variable, or with GDES an `EffectiveTable`
    (converts to the current sg(E_G) + E_Δ wherever a tensor is expected)."""
    return self.embeddings.embedding_table

  def for_export(self) -> "TransformerEncoder":
    """This encoder, or with GDES a view over the same layers whose embeddings are one plain
    `Embeddings` holding E_G + E_Δ: every variable of the result is a weight of the exported
    model (what the fine-tuning export, Hugging Face and SavedModel exports write)."""
    if not isinstance(self.embeddings, DisentangledEmbeddings):
      return self
    return TransformerEncoder(self.config, embeddings=self.embeddings.materialize(),
                              transformer_layers=self.transformer_layers,
                              embedding_projection=self.embedding_projection,
                              stop_gradient_after=self.stop_gradient_after,
                              position_bias=self.position_bias, name=self.name,
                              final_layer_norm=self.final_layer_norm)

  def call(self, inputs, training=None):
    """Args: dict with `input_word_ids`, `input_mask`, `input_type_ids` (`[batch, seq_len]`) and
    optionally `input_word_embeddings` (`[batch, seq_len, embedding_size]`).

    Returns: dict with `sequence_output` (`[batch, seq_len, hidden]`), `encoder_outputs` (one per
    layer) and `embedding_output` (`[batch, seq_len, hidden]`, after projection).
    """
    x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"],
                        word_embeddings=inputs.get("input_word_embeddings"), training=training)
    if self.embedding_projection is not None:
      x = self.embedding_projection(x)
    embedding_output = x
    attention_mask = self.attention_mask_layer(x, inputs["input_mask"])
    encoder_outputs = []
    for number, layer in enumerate(self.transformer_layers, start=1):
      x = layer([x, attention_mask], training=training)
      encoder_outputs.append(x)
      if number in self.stop_gradient_after:
        x = tf.stop_gradient(x)
    if self.final_layer_norm is not None:
      x = self.final_layer_norm(x)
      encoder_outputs[-1] = x
    return {"sequence_output": x, "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output}
