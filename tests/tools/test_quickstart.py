"""The README's quickstart command, shortened to a few steps."""
import os
import tempfile

import tensorflow as tf

from tests import tool_server


class QuickstartTest(tf.test.TestCase):

  def test_quickstart_builds_everything_and_reports(self):
    out = os.path.join(tempfile.mkdtemp(), "qs")
    result = tool_server.run(["rtd_quickstart", f"--output_dir={out}", "--num_train_steps=50",
                              "--vocab_size=2000"], cwd=tempfile.gettempdir(), timeout=900)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("Quickstart finished.", result.stdout)
    self.assertRegex(result.stdout, r"mlm_loss: [\d.]+ at step 50")
    self.assertIn(f"TensorBoard logs: {out}/model/train", result.stdout)
    for path in ("vocab.txt", "records/pretraining_data.json", "model/ckpt-50.index",
                 "model/export/encoder_config.json"):
      self.assertTrue(os.path.exists(os.path.join(out, path)), path)


if __name__ == "__main__":
  tf.test.main()
