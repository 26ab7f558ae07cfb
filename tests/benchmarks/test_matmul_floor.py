"""The step's matmuls found in its traced graph (forward, the tape's gradients, a condition's true
branch; not XLA-compiled functions), their FLOPs counted by hand, and run alone with the same
shapes."""
import tensorflow as tf

from benchmarks import matmul_floor


def op(kind, shapes, **attrs):
  return matmul_floor.MatmulOp(kind, tuple(map(tuple, shapes)), (tf.float32,) * len(shapes),
                               tuple(attrs.items()))


class FlopsTest(tf.test.TestCase):

  def test_hand_counts(self):
    self.assertEqual(matmul_floor.flops(op("MatMul", [[3, 5], [5, 7]], transpose_a=False,
                                           transpose_b=False)), 2 * 3 * 5 * 7)
    self.assertEqual(matmul_floor.flops(op("MatMul", [[5, 3], [7, 5]], transpose_a=True,
                                           transpose_b=True)), 2 * 3 * 5 * 7)
    # [2, 3] batches of [4, 5] × [5, 6] (y given as [6, 5], adjoint).
    self.assertEqual(matmul_floor.flops(op("BatchMatMulV2", [[2, 3, 4, 5], [2, 3, 6, 5]],
                                           adj_x=False, adj_y=True)), 2 * 6 * 4 * 5 * 6)
    self.assertEqual(matmul_floor.flops(op("BatchMatMulV2", [[2, 3, 5, 4], [1, 1, 5, 6]],
                                           adj_x=True, adj_y=False)), 2 * 6 * 4 * 5 * 6)
    # The batch dims broadcast whichever operand carries them.
    self.assertEqual(matmul_floor.flops(op("BatchMatMulV2", [[1, 4, 5], [3, 5, 6]],
                                           adj_x=False, adj_y=False)), 2 * 3 * 4 * 5 * 6)
    self.assertEqual(matmul_floor.flops(op("Einsum", [[2, 3, 4], [4, 5]],
                                           equation="...x,xy->...y")), 2 * 2 * 3 * 4 * 5)
    # A kernel's gradient: a sum over b and t of outer products.
    self.assertEqual(matmul_floor.flops(op("Einsum", [[2, 3, 4], [2, 3, 5]],
                                           equation="btx,bty->xy")), 2 * 2 * 3 * 4 * 5)


class MatmulOpsTest(tf.test.TestCase):

  def test_forward_gradients_and_true_branch_not_xla(self):
    w = tf.Variable(tf.ones([4, 6]))
    k = tf.Variable(tf.ones([6, 3]))

    @tf.function(jit_compile=True, autograph=False)
    def compiled(x):
      return tf.matmul(x, tf.ones([3, 9]))  # fused by XLA: not a kernel of its own

    @tf.function(autograph=False)
    def step(x):
      with tf.GradientTape() as tape:
        h = tf.matmul(x, w)                       # [2, 4] × [4, 6]
        y = tf.einsum("bh,hk->bk", h, k)          # [2, 6] × [6, 3]
        loss = tf.reduce_sum(y) + tf.reduce_sum(compiled(y))
      grads = tape.gradient(loss, [w, k])
      return tf.cond(loss > 0, lambda: tf.matmul(grads[0], grads[1]),  # [4, 6] × [6, 3]
                     lambda: tf.matmul(grads[0], tf.ones([6, 5])))

    ops = matmul_floor.matmul_ops(step.get_concrete_function(tf.ones([2, 4])).graph)
    # Forward 2; the tape's gradients: the einsum's of h and k, the matmul's of w only (x is not
    # watched); the true branch 1; not the XLA matmul (its gradient is XLA's too) nor the false
    # branch.
    self.assertLen(ops, 6)
    self.assertEqual(sum(o.type == "Einsum" for o in ops), 3)
    self.assertEqual(sum(map(matmul_floor.flops, ops)),
                     2 * 2 * 2 * 4 * 6 + 3 * 2 * 2 * 6 * 3 + 2 * 4 * 6 * 3)
    self.assertNotIn(((2, 3), (3, 9)), [o.shapes for o in ops])
    self.assertNotIn(((4, 6), (6, 5)), [o.shapes for o in ops])

  def test_a_condition_inside_a_condition(self):
    @tf.function(autograph=False)
    def step(x):
      inner = lambda: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.matmul(x, tf.ones([4, 5])),
                              lambda: tf.zeros([2, 5]))
      return tf.cond(tf.reduce_sum(x) > 1, inner, lambda: tf.zeros([2, 5]))

    ops = matmul_floor.matmul_ops(step.get_concrete_function(tf.ones([2, 4])).graph)
    self.assertEqual([o.shapes for o in ops], [((2, 4), (4, 5))])

  def test_the_floor_runs_each_op_on_its_shapes(self):
    ops = [op("MatMul", [[5, 3], [5, 7]], transpose_a=True, transpose_b=False),
           op("BatchMatMulV2", [[2, 4, 5], [2, 6, 5]], adj_x=False, adj_y=True),
           op("Einsum", [[2, 3, 4], [4, 5]], equation="btx,xy->bty")]
    floor = matmul_floor.floor_function(ops)
    outputs = floor()
    (a, b), (x, y), (e, f) = [[v.numpy() for v in vs] for vs in floor.variables]
    self.assertNotAllClose(a, 0.0)
    self.assertAllClose(outputs[0], a.T @ b)  # each op with its own attributes
    self.assertAllClose(outputs[1], x @ y.transpose(0, 2, 1))
    self.assertAllClose(outputs[2], e @ f)

  def test_a_dynamic_shape_is_refused(self):
    @tf.function(input_signature=[tf.TensorSpec([None, 4])], autograph=False)
    def step(x):
      return tf.matmul(x, tf.ones([4, 2]))

    with self.assertRaisesRegex(ValueError, "not static"):
      matmul_floor.matmul_ops(step.get_concrete_function().graph)


if __name__ == "__main__":
  tf.test.main()
