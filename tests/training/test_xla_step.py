"""The whole replica step of every method (forward, backward, clipping, optimizer update) traced
with static shapes and compiled by XLA on CPU, as TPUStrategy requires: one test per method, each
in a process of its own (`xla_step_check.py`). The compiled step agrees with the uncompiled one on
the same weights and batch: the batch carries a `sampling_seed`, but XLA may implement the
stateless random ops with another algorithm than TensorFlow's kernels (ThreeFry vs Philox), so a
sampled token can differ and the figures agree to a few percent, not bit for bit (ELECTRA: 1e-4).
One gin file per method. XLA compiles here at backend optimisation level 0: that level is LLVM's
code generation, after every HLO pass, so whether a step compiles whole is settled before it
(the module took 108-110 s in-process at the default level, 76 s so, on one core)."""
import glob
import json
import math
import os
import sys

import gin
import tensorflow as tf

from official_rtd import runs
from official_rtd.methods import registry
from tests import testutil
from tests import tool_server

HERE = os.path.dirname(os.path.abspath(__file__))

# One gin task file per registered method (the other files re-bind a method's settings; ALE is
# ELECTRA on ALBERT's shared layers, a different encoder): `test_every_method_is_covered`.
TASKS = ["ale.gin", "amos.gin", "electra.gin", "electra_adversarial.gin", "electra_tt.gin",
         "electra_uniform.gin", "electric.gin", "mlm.gin", "replace_mlm.gin", "script.gin",
         "teams.gin"]


class XlaStepTest(tf.test.TestCase):

  def test_every_method_is_covered(self):
    covered = set()
    for task in TASKS:
      gin.clear_config()
      runs.parse_gin(["gin/models/tiny.gin", f"gin/tasks/{task}"], log=lambda _: None)
      covered.add(gin.query_parameter("pretraining_model.method"))
    gin.clear_config()
    self.assertEqual(covered, set(registry.names()))
    files = {os.path.basename(p) for p in glob.glob(os.path.join(testutil.REPO, "gin", "tasks",
                                                                 "*.gin"))}
    self.assertContainsSubset(TASKS, files)


def _test_for(task):
  def test(self):
    result = tool_server.run(
        [sys.executable, os.path.join(HERE, "xla_step_check.py"), task], cwd=testutil.REPO,
        env=dict(os.environ, XLA_FLAGS="--xla_backend_optimization_level=0"), timeout=600)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    report = json.loads(result.stdout.strip().splitlines()[-1])
    self.assertTrue(report["same_start"])
    jit_losses, losses = report["jit_losses"], report["losses"]
    self.assertTrue(all(math.isfinite(v) for v in jit_losses.values()), jit_losses)
    self.assertEqual(jit_losses.keys(), losses.keys())
    for name in losses:
      self.assertAllClose(jit_losses[name], losses[name], rtol=0.05, atol=0.01, msg=name)
    self.assertGreater(report["moved"], report["weights"] // 2, f"{task}: the compiled step "
                       f"moved {report['moved']} of {report['weights']} weights")
    self.assertGreater(report["cosine"], 0.9, task)  # the same update, by direction
  return test


for _task in TASKS:
  setattr(XlaStepTest, f"test_{_task[:-len('.gin')]}_step_compiles_whole",
          _test_for(_task))


if __name__ == "__main__":
  tf.test.main()
