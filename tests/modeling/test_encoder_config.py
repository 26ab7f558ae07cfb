"""EncoderConfig's numbers are checked where it is built: a gin string or an impossible size is
one line naming the binding (issue 70), not a traceback from deep in the model."""
import gin
import tensorflow as tf

from official_rtd.modeling.encoder_config import EncoderConfig


class EncoderConfigTest(tf.test.TestCase):

  def test_a_bad_binding_is_one_line_naming_it(self):
    gin.parse_config("EncoderConfig.hidden_size = 'big'")
    with self.assertRaisesRegex(ValueError, r"^EncoderConfig\.hidden_size = 'big' must be a "
                                r"number >= 1"):
      EncoderConfig()
    gin.clear_config()
    for field, value, message in (
        ("num_layers", 0, "EncoderConfig.num_layers = 0 must be >= 1"),
        ("dropout_rate", 1.0, r"EncoderConfig.dropout_rate = 1.0 must be in \[0, 1\)"),
        ("initializer_range", 0.0, "EncoderConfig.initializer_range = 0.0 must be > 0")):
      with self.assertRaisesRegex(ValueError, message):
        EncoderConfig(**{field: value})
    self.assertEqual(EncoderConfig(dropout_rate=0.0).scaled(0.25).num_attention_heads, 1)


if __name__ == "__main__":
  tf.test.main()
