"""The fair PyTorch comparison runs beside ours on any CPU (issue 71): each PyTorch configuration
in a process that never imports TensorFlow, checked against our parameter count and FLOPs,
computed by the parent."""
import importlib.util
import json
import os
import re
import sys
import textwrap
import unittest

import tensorflow as tf

from tests import testutil
from tests import tool_server

SCRIPT = os.path.join(testutil.REPO, "benchmarks", "train_throughput.py")


@unittest.skipUnless(importlib.util.find_spec("torch") and importlib.util.find_spec("transformers"),
                     "torch is not installed (pip install -e '.[benchmark]')")
class TrainThroughputTest(tf.test.TestCase):

  def test_ours_and_huggingface_in_both_precisions_reach_the_table(self):
    result = tool_server.run(
        [sys.executable, SCRIPT, "--configs=ours/float32/32,huggingface/float32/32,"
         "huggingface/bfloat16/32", "--steps=1", "--warmup=1", "--model=one_machine",
         "--noinput_pipeline", "--nobreakdown"], timeout=1200, cwd=testutil.REPO)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    for spec in ("ours/float32/32", "huggingface/float32/32", "huggingface/bfloat16/32"):
      self.assertRegex(result.stdout, rf"\n\| {re.escape(spec)} \| [0-9.]+ \| [0-9]+ \|",
                       result.stdout)  # a timed row, not "skipped" or "failed"


class BaselineCheckoutTest(tf.test.TestCase):

  def test_a_folder_that_is_no_checkout_is_refused_before_any_run(self):
    # (A missing folder once ran the installed package as the "baseline": ours against ours.)
    missing = os.path.join(self.create_tempdir().full_path, "nowhere")
    result = tool_server.run(
        [sys.executable, SCRIPT, "--configs=baseline/float32/32,ours/float32/32",
         f"--baseline_checkout={missing}", "--noinput_pipeline", "--nobreakdown"],
        timeout=300, cwd=testutil.REPO)
    self.assertEqual(result.returncode, 1, result.stderr[-3000:])
    self.assertIn(f"--baseline_checkout: {missing} is not a checkout of this repository",
                  result.stderr)
    self.assertNotIn("run 1/1", result.stdout)


class RecipeShapesTest(tf.test.TestCase):
  """`--model=recipe` is the ELECTRA recipe's step: its shapes are the recipe's gin files'."""

  def test_the_shapes_are_the_recipes_gin_files(self):
    program = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, "benchmarks")
        import train_throughput
        from official_rtd import runs
        from official_rtd.modeling.encoder_config import EncoderConfig
        from official_rtd.training.train_config import TrainConfig
        runs.parse_gin(["gin/models/one_machine.gin", "gin/recipes/electra_one_machine.gin",
                        "gin/recipes/one_machine_sentences.gin"], log=lambda _: None)
        encoder, _, predictions, length, batch = train_throughput.MODELS["recipe"]
        config, train = EncoderConfig(), TrainConfig()
        print(json.dumps({"gin": [{k: getattr(config, k) for k in encoder}, train.max_seq_length,
                                  train.train_batch_size, train.max_predictions_per_seq],
                          "script": [encoder, length, batch, predictions]}))
        """)
    result = tool_server.run([sys.executable, "-c", program], timeout=300, cwd=testutil.REPO)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    shapes = json.loads(result.stdout.splitlines()[-1])
    self.assertEqual(shapes["script"], shapes["gin"])

  def test_encoders_without_its_positions_are_refused(self):
    # Model Garden's and Hugging Face's encoders have no T5 relative positions: a row of theirs
    # under --model=recipe would time another model.
    for configs in ("ours/float32/16,model_garden/float32/16", "huggingface/float32/16", None):
      result = tool_server.run(
          [sys.executable, SCRIPT, "--model=recipe", "--noinput_pipeline", "--nobreakdown"]
          + ([f"--configs={configs}"] if configs else []), timeout=300, cwd=testutil.REPO)
      self.assertEqual(result.returncode, 1, result.stderr[-3000:])
      self.assertIn("--model=recipe", result.stderr.splitlines()[-1])
      self.assertIn("ours and baseline only", result.stderr.splitlines()[-1])
      self.assertNotIn("run 1/1", result.stdout)


if __name__ == "__main__":
  tf.test.main()
