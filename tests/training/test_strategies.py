"""Strategy choice errors name the flag to change."""
import tensorflow as tf

from official_rtd.training import strategies


class StrategyErrorsTest(tf.test.TestCase):

  def test_tpu_without_a_tpu_names_the_tpu_flag(self):
    # This machine has no TPU and none is named: TensorFlow's own message names no flag.
    with self.assertRaisesRegex(ValueError, r"^--distribution_strategy=tpu: no TPU found \(.*\); "
                                r"give --tpu=<the TPU's name or grpc:// address>"):
      strategies.get_strategy("tpu")

  def test_unknown_strategy(self):
    with self.assertRaisesRegex(ValueError, r"--distribution_strategy must be one of"):
      strategies.get_strategy("mirror")


if __name__ == "__main__":
  tf.test.main()
