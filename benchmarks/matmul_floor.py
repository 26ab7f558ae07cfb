"""The matmuls of a traced step, run alone: a floor under the step's time with the same kernels.

`matmul_ops(graph)` lists every `MatMul`, `BatchMatMulV2/V3` and `Einsum` of a traced step (its
graph and the functions it calls, except XLA-compiled ones, whose matmuls are fused into their
passes), with their static input shapes and attributes. `floor_function(ops)` builds a
`tf.function` that runs exactly those ops, each on its own random inputs (held in variables, so
nothing is constant-folded or merged), and returns their outputs: its time is what the step would
take if everything but its matmuls cost nothing. `flops(op)` counts an op's FLOPs from its shapes
(2 per multiply-add). The graph walk and the count are `official_rtd/modeling/flops.py`'s, which
its FLOPs counter's cross-check uses too; `tests/benchmarks/test_matmul_floor.py` checks both by
hand.
"""
import dataclasses
from typing import List, Sequence, Tuple

import tensorflow as tf

from official_rtd.modeling import flops as flops_lib


@dataclasses.dataclass(frozen=True)
class MatmulOp:
  """One matmul of a traced graph: its op type, input shapes and dtypes, and the attributes that
  change what it computes (`flops_lib.MATMUL_ATTRS`: transposes, adjoints, an einsum's
  equation)."""
  type: str
  shapes: Tuple[Tuple[int, ...], ...]
  dtypes: Tuple[tf.DType, ...]
  attrs: Tuple[Tuple[str, object], ...]


def _xla_compiled(function) -> bool:
  attr = function.definition.attr
  return "_XlaMustCompile" in attr and attr["_XlaMustCompile"].b


def matmul_ops(graph) -> List[MatmulOp]:
  """Every matmul of `graph` and of the (non-XLA) functions it calls, each function once per
  call site; of a condition, its true branch (a step's conditions are "the update is finite:
  apply it"); a loop's body once. Raises ValueError for a matmul whose input shapes are not all
  static."""
  return [MatmulOp(op.type, flops_lib.static_shapes(op), tuple(t.dtype for t in op.inputs),
                   tuple(flops_lib.matmul_attrs(op).items()))
          for op in flops_lib.graph_matmuls(graph, follow=("f", "then_branch", "body"),
                                            skip=_xla_compiled)]


def flops(op: MatmulOp) -> float:
  """Multiply-adds × 2 of one matmul (`flops_lib.matmul_flops`)."""
  return flops_lib.matmul_flops(op.type, op.shapes, dict(op.attrs))


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
