"""The matmuls of a traced step, run alone: a floor under the step's time with the same kernels.

`matmul_ops(graph)` lists every `MatMul`, `BatchMatMulV2/V3` and `Einsum` of a traced step (its
graph and the functions it calls, except XLA-compiled ones, whose matmuls are fused into their
passes), with their static input shapes and attributes. `floor_function(ops)` builds a
`tf.function` that runs exactly those ops, each on its own random inputs (held in variables, so
nothing is constant-folded or merged), and returns their outputs: its time is what the step would
take if everything but its matmuls cost nothing. `flops(op)` counts an op's FLOPs from its shapes
(2 per multiply-add), which `tests/benchmarks/test_matmul_floor.py` checks by hand.
"""
import dataclasses
import string
from typing import Dict, List, Sequence, Tuple

import tensorflow as tf

MATMUL_TYPES = ("MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum")


@dataclasses.dataclass(frozen=True)
class MatmulOp:
  """One matmul of a traced graph: its op type, input shapes and dtypes, and the attributes that
  change what it computes (transposes, adjoints, an einsum's equation)."""
  type: str
  shapes: Tuple[Tuple[int, ...], ...]
  dtypes: Tuple[tf.DType, ...]
  attrs: Tuple[Tuple[str, object], ...]


def _attrs(op) -> Tuple[Tuple[str, object], ...]:
  names = {"MatMul": ("transpose_a", "transpose_b"), "BatchMatMulV2": ("adj_x", "adj_y"),
           "BatchMatMulV3": ("adj_x", "adj_y"), "Einsum": ("equation",)}[op.type]
  values = []
  for name in names:
    value = op.get_attr(name)
    values.append((name, value.decode() if isinstance(value, bytes) else value))
  return tuple(values)


def _functions(graph):
  """The functions `graph` calls, as {name: function with a `.graph`}."""
  return dict(getattr(graph, "_functions", {}))


def _xla_compiled(function) -> bool:
  attr = function.definition.attr
  return "_XlaMustCompile" in attr and attr["_XlaMustCompile"].b


def matmul_ops(graph) -> List[MatmulOp]:
  """Every matmul of `graph` and of the (non-XLA) functions it calls, each function once per
  call site; of a condition, its true branch (a step's conditions are "the update is finite:
  apply it"); a loop's body once. Raises ValueError for a matmul whose input shapes are not all
  static."""
  found = []

  def visit(g, seen):
    calls = {}
    for op in g.get_operations():
      if op.type in MATMUL_TYPES:
        shapes = tuple(tuple(t.shape.as_list()) for t in op.inputs)
        if any(d is None for shape in shapes for d in shape):
          raise ValueError(f"{op.name}: input shapes {shapes} are not static")
        found.append(MatmulOp(op.type, shapes, tuple(t.dtype for t in op.inputs), _attrs(op)))
      for attr in ("f", "then_branch", "body"):
        try:
          name = op.get_attr(attr).name
        except (ValueError, AttributeError):
          continue
        calls[name] = calls.get(name, 0) + 1
    functions = _functions(g)
    for name, count in calls.items():
      function = functions.get(name)
      if function is None or _xla_compiled(function) or name in seen:
        continue
      for _ in range(count):
        visit(function.graph, seen | {name})

  visit(graph, frozenset())
  return found


def _einsum_sizes(op: MatmulOp) -> Dict[str, int]:
  """{index letter: size} of an einsum's inputs (an ellipsis' dimensions get letters of their
  own)."""
  equation = dict(op.attrs)["equation"]
  inputs = equation.split("->")[0].split(",")
  spare = iter(c for c in string.ascii_uppercase if c not in equation)
  ellipsis = None
  sizes = {}
  for term, shape in zip(inputs, op.shapes):
    if "..." in term:
      rank = len(shape) - (len(term) - 3)
      ellipsis = ellipsis or "".join(next(spare) for _ in range(rank))
      term = term.replace("...", ellipsis[len(ellipsis) - rank:])
    for letter, size in zip(term, shape):
      sizes[letter] = size
  return sizes


def flops(op: MatmulOp) -> int:
  """Multiply-adds × 2 of one matmul."""
  if op.type == "Einsum":
    total = 2
    for size in _einsum_sizes(op).values():
      total *= size
    return total
  a, b = op.shapes
  attrs = dict(op.attrs)
  transposed = attrs.get("transpose_a", attrs.get("adj_x", False))
  m, k = (a[-1], a[-2]) if transposed else (a[-2], a[-1])
  n = b[-2] if attrs.get("transpose_b", attrs.get("adj_y", False)) else b[-1]
  batch = 1
  for d in (a[:-2] if len(a) >= len(b) else b[:-2]):
    batch *= d
  return 2 * batch * m * n * k


def _run(op: MatmulOp, inputs: Sequence[tf.Tensor]) -> tf.Tensor:
  attrs = dict(op.attrs)
  if op.type == "MatMul":
    return tf.raw_ops.MatMul(a=inputs[0], b=inputs[1], **attrs)
  if op.type == "BatchMatMulV2":
    return tf.raw_ops.BatchMatMulV2(x=inputs[0], y=inputs[1], **attrs)
  if op.type == "BatchMatMulV3":
    return tf.raw_ops.BatchMatMulV3(x=inputs[0], y=inputs[1], Tout=op.dtypes[0], **attrs)
  return tf.raw_ops.Einsum(inputs=list(inputs), **attrs)


def floor_function(ops: Sequence[MatmulOp]):
  """A `tf.function` of no arguments running every op of `ops` on its own random inputs."""
  variables = [[tf.Variable(tf.cast(tf.random.normal(shape, stddev=0.1, seed=i), dtype))
                for i, (shape, dtype) in enumerate(zip(op.shapes, op.dtypes))] for op in ops]

  @tf.function(autograph=False)
  def run():
    return [_run(op, [v.read_value() for v in inputs]) for op, inputs in zip(ops, variables)]

  run.variables = variables  # kept alive with the function
  return run
