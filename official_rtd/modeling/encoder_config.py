"""Transformer encoder hyper-parameters (gin: `EncoderConfig.hidden_size = 256`, ...)."""
import dataclasses
import math
from typing import Optional

import gin

from official_rtd.utils import ranges


@gin.configurable
@dataclasses.dataclass(frozen=True)
class EncoderConfig:
  """A BERT-style encoder; `vocab_size=None` means "take it from the vocab file"."""
  vocab_size: Optional[int] = None
  hidden_size: int = 256
  num_layers: int = 12
  num_attention_heads: int = 4
  intermediate_size: int = 1024
  embedding_size: int = 128
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  dropout_rate: float = 0.1
  attention_dropout_rate: float = 0.1
  initializer_range: float = 0.02
  share_layers: bool = False  # ALBERT cross-layer sharing: one block's weights in every layer
  # "absolute" (BERT: learned position embeddings) or "t5_relative" (T5 buckets, as AMOS uses):
  # a learned per-head bias on the attention scores by bucketed relative distance, shared by all
  # layers, and no absolute position embeddings.
  position_embedding: str = "absolute"
  relative_attention_num_buckets: int = 32
  relative_attention_max_distance: int = 128
  # Pre-LayerNorm blocks (Model Garden's `norm_first`; Cramming, Geiping & Goldstein 2022): each
  # sublayer reads LayerNorm(x) and adds to the residual x, and one final LayerNorm follows the
  # last block. False: BERT's post-LayerNorm blocks.
  norm_first: bool = False

  def __post_init__(self):
    ranges.check_ranges(self, ENCODER_CONFIG_RANGES, "EncoderConfig.{name} = {value}")

  def scaled(self, size: float, layers: float = 1.0) -> "EncoderConfig":
    """ELECTRA's generator size: hidden size, FFN size and heads × `size`; layers × `layers`.
    The embedding size is unchanged (the embeddings are shared)."""
    return dataclasses.replace(
        self,
        hidden_size=max(1, int(round(self.hidden_size * size))),
        intermediate_size=max(1, int(round(self.intermediate_size * size))),
        num_attention_heads=max(1, int(round(self.num_attention_heads * size))),
        num_layers=max(1, int(math.ceil(self.num_layers * layers))))

  def to_json(self) -> dict:
    return dataclasses.asdict(self)


# Valid values of EncoderConfig's numbers (`ranges.Range`; a gin string is one line, not a
# traceback from deep in the model).
ENCODER_CONFIG_RANGES = {
    "vocab_size": (1, None, True), "hidden_size": (1, None, True), "num_layers": (1, None, True),
    "num_attention_heads": (1, None, True), "intermediate_size": (1, None, True),
    "embedding_size": (1, None, True), "max_position_embeddings": (1, None, True),
    "type_vocab_size": (1, None, True), "dropout_rate": (0, 1, True, False),
    "attention_dropout_rate": (0, 1, True, False), "initializer_range": (0, None, False),
    "relative_attention_num_buckets": (1, None, True),
    "relative_attention_max_distance": (1, None, True)}
