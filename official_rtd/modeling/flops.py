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


def graph_matmul_flops(concrete_function) -> float:
  """Independent cross-check: 2 × (multiply-adds) of every MatMul, BatchMatMulV2 and Einsum in a
  traced TensorFlow graph (static shapes needed), following nested function calls.

  TensorFlow's profiler cannot do this for Model Garden layers (it has no FLOPs statistics for
  Einsum, which they use for every projection and for attention), so the count is read off the
  graph directly: for an Einsum, 2 × the product of the sizes of all its index letters.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def dims(tensor):
    return [int(d) for d in tensor.shape]

  def count(graph) -> float:
    total = 0.0
    for op in graph.get_operations():
      if op.type == "MatMul":
        a, b = dims(op.inputs[0]), dims(op.inputs[1])
        m, k = (a[1], a[0]) if op.get_attr("transpose_a") else (a[0], a[1])
        n = b[0] if op.get_attr("transpose_b") else b[1]
        total += 2.0 * m * k * n
      elif op.type in ("BatchMatMulV2", "BatchMatMulV3"):
        a, b = dims(op.inputs[0]), dims(op.inputs[1])
        k = a[-2] if op.get_attr("adj_x") else a[-1]
        total += 2.0 * float(tf.reduce_prod(dims(op.outputs[0]))) * k
      elif op.type == "Einsum":
        inputs, _ = op.get_attr("equation").decode().split("->")
        sizes = {}
        for term, tensor in zip(inputs.split(","), op.inputs):
          shape = dims(tensor)
          if "..." in term:  # broadcast dims, named right-aligned so operands agree
            extra = len(shape) - (len(term) - 3)
            term = term.replace("...", "".join(chr(0x100 + extra - i) for i in range(extra)))
          sizes.update(zip(term, shape))
        product = 1.0
        for size in sizes.values():
          product *= size
        total += 2.0 * product
      for attr in ("f", "then_branch", "else_branch", "body"):
        try:
          function_name = op.get_attr(attr).name
        except (ValueError, AttributeError):
          continue
        total += count(graph._get_function(function_name).graph)  # pylint: disable=protected-access
    return total

  return count(concrete_function.graph)
