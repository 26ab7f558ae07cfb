"""Analytic FLOPs under the dissertation's section 5.2.2 rules.

An operation is one FLOP; a matrix-vector product with an m×n matrix is 2·m·n; the backward pass
costs the same as the forward pass (train = 2 × forward); embedding look-ups are dense (one-hot
matmuls: 2·vocab·width per token). Only matrix products and attention are counted: LayerNorm,
softmax, activations and biases (a few % of the total) are left out.
"""
from official_rtd.modeling.encoder_config import EncoderConfig


def encoder_forward_flops(config: EncoderConfig, seq_len: int) -> float:
  """Forward FLOPs of one `seq_len`-token sequence through embeddings, projection and layers."""
  h, f, e = config.hidden_size, config.intermediate_size, config.embedding_size
  per_token = 2 * e * (config.vocab_size + config.max_position_embeddings
                       + config.type_vocab_size)
  if e != h:
    per_token += 2 * e * h
  per_layer = 8 * h * h + 4 * h * f + 4 * seq_len * h  # Q,K,V,O; FFN; scores + weighted sum
  return float(seq_len * (per_token + config.num_layers * per_layer))


def mlm_head_flops(hidden_size: int, embedding_size: int, vocab_size: int,
                   num_predictions: int) -> float:
  """Dense to the embedding width, then logits over the vocabulary, at masked positions only."""
  return float(num_predictions * (2 * hidden_size * embedding_size
                                  + 2 * embedding_size * vocab_size))


def rtd_head_flops(hidden_size: int, seq_len: int) -> float:
  return float(seq_len * (2 * hidden_size * hidden_size + 2 * hidden_size))
