"""Encoder exports: a damaged or mismatched export is one clear error naming it."""
import glob
import json
import os
import tempfile

import tensorflow as tf

from official_rtd.interop import export
from tests.finetune.squad.test_task import write_export
from tests.training.test_trainer import TINY


class LoadEncoderTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.export_dir = write_export(os.path.join(tempfile.mkdtemp(), "run"))

  def test_round_trip(self):
    encoder = export.load_encoder(self.export_dir)
    self.assertEqual((encoder.config.num_layers, encoder.config.hidden_size),
                     (TINY.num_layers, TINY.hidden_size))  # the encoder write_export exported

  def test_config_that_does_not_fit_the_weights(self):
    path = os.path.join(self.export_dir, export.CONFIG_NAME)
    with open(path) as f:
      config = json.load(f)
    config["encoder"]["hidden_size"] *= 2
    config["encoder"]["embedding_size"] *= 2
    with open(path, "w") as f:
      json.dump(config, f)
    with self.assertRaisesRegex(export.ExportError,
                                rf"^{self.export_dir}: the weights do not fit encoder_config.json"
                                r" .*shape"):
      export.load_encoder(self.export_dir)

  def test_truncated_weights(self):
    data = glob.glob(os.path.join(self.export_dir, "*.data-*"))[0]
    with open(data, "r+b") as f:
      f.truncate(os.path.getsize(data) // 2)
    with self.assertRaisesRegex(export.ExportError,
                                rf"^{self.export_dir}: the export's weights \(encoder\.\*\) are "
                                r"damaged: its files are truncated or corrupt \(Read less bytes"):
      export.load_encoder(self.export_dir)



if __name__ == "__main__":
  tf.test.main()
