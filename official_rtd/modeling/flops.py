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


MATMUL_TYPES = ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum")
# What a matmul op's attributes say about its product (transposes, adjoints, an einsum's equation).
MATMUL_ATTRS = {"MatMul": ("transpose_a", "transpose_b"), "BatchMatMulV2": ("adj_x", "adj_y"),
                "BatchMatMulV3": ("adj_x", "adj_y"), "Einsum": ("equation",)}
ALL_CALLS = ("f", "then_branch", "else_branch", "body")


def matmul_flops(op_type: str, shapes, attrs) -> float:
  """2 × (multiply-adds) of one matmul op of `MATMUL_TYPES` from its input shapes and its
  `MATMUL_ATTRS` (a mapping; an equation as text): for an Einsum, 2 × the product of the sizes of
  all its index letters."""
  if op_type == "Einsum":
    inputs, _ = attrs["equation"].split("->")
    sizes = {}
    for term, shape in zip(inputs.split(","), shapes):
      if "..." in term:  # broadcast dims, named right-aligned so operands agree
        extra = len(shape) - (len(term) - 3)
        term = term.replace("...", "".join(chr(0x100 + extra - i) for i in range(extra)))
      sizes.update(zip(term, shape))
    product = 2.0
    for size in sizes.values():
      product *= size
    return product
  a, b = shapes[0], shapes[1]
  transpose_a = attrs.get("transpose_a", attrs.get("adj_x", False))
  transpose_b = attrs.get("transpose_b", attrs.get("adj_y", False))
  m, k = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
  n = b[-2] if transpose_b else b[-1]
  batch = 1.0
  for size in _broadcast(a[:-2], b[:-2]):
    batch *= size
  return 2.0 * batch * m * k * n


def _broadcast(x, y):
  """The broadcast of two batch shapes (right-aligned, 1 stretches)."""
  x, y = [1] * (len(y) - len(x)) + list(x), [1] * (len(x) - len(y)) + list(y)
  return [max(p, q) for p, q in zip(x, y)]


def graph_matmuls(graph, follow=ALL_CALLS, skip=lambda function: False) -> list:
  """Every op of `MATMUL_TYPES` in a traced graph and in the functions it calls through the
  attributes `follow` (each once per call site), except functions for which `skip` is true."""
  found = []
  for op in graph.get_operations():
    if op.type in MATMUL_TYPES:
      found.append(op)
    for attr in follow:
      try:
        function_name = op.get_attr(attr).name
      except (ValueError, AttributeError):
        continue
      function = graph._get_function(function_name)  # pylint: disable=protected-access
      if not skip(function):
        found += graph_matmuls(function.graph, follow, skip)
  return found


def static_shapes(op):
  """The input shapes of a graph op, as tuples; ValueError if one is not static."""
  shapes = tuple(tuple(t.shape.as_list()) for t in op.inputs)
  if any(d is None for shape in shapes for d in shape):
    raise ValueError(f"{op.name}: input shapes {shapes} are not static")
  return shapes


def matmul_attrs(op) -> dict:
  """An op's `MATMUL_ATTRS`, an equation decoded to text."""
  values = {name: op.get_attr(name) for name in MATMUL_ATTRS[op.type]}
  return {name: value.decode() if isinstance(value, bytes) else value
          for name, value in values.items()}


def graph_matmul_flops(concrete_function) -> float:
  """Independent cross-check: 2 × (multiply-adds) of every MatMul, BatchMatMulV2 and Einsum in a
  traced TensorFlow graph (static shapes needed), following nested function calls.

  TensorFlow's profiler cannot do this for Model Garden layers (it has no FLOPs statistics for
  Einsum, which they use for every projection and for attention), so the count is read off the
  graph directly.
  """
  return sum(matmul_flops(op.type, static_shapes(op), matmul_attrs(op))
             for op in graph_matmuls(concrete_function.graph))
