"""The NumPy `tf.train.Example` encoder against protobuf's own serialization."""
import numpy as np
import tensorflow as tf

from official_rtd.data import example_encoder
from official_rtd.data import records


def _reference(columns):
  """Each row through protobuf's own `tf.train.Example` serialization (deterministic)."""
  rows = []
  for row in range(len(next(iter(columns.values())))):
    feature = {}
    for name, values in columns.items():
      values = values[row].tolist()
      feature[name] = (tf.train.Feature(float_list=tf.train.FloatList(value=values))
                       if name in records.FLOAT_FEATURES else
                       tf.train.Feature(int64_list=tf.train.Int64List(value=values)))
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    rows.append(example.SerializeToString(deterministic=True))
  return rows


class SerializeExamplesTest(tf.test.TestCase):

  def test_bytes_equal_protobuf(self):
    rng = np.random.default_rng(0)
    rows = 300
    ids = rng.integers(0, 30522, [rows, 64])
    ids[rng.random([rows, 64]) < 0.2] = 0
    columns = {
        "input_word_ids": ids,
        "input_mask": (ids > 0).astype(np.int64),
        "input_type_ids": rng.integers(0, 2, [rows, 64]),
        "masked_lm_positions": rng.integers(0, 200, [rows, 10]),  # 1- and 2-byte varints
        # every varint width from 1 to 10 bytes (beyond the lookup table)
        "masked_lm_ids": rng.integers(0, 2**63 - 1, [rows, 10]) >> rng.integers(0, 63, [rows, 10]),
        "masked_lm_weights": np.concatenate(
            [rng.normal(size=[rows, 6]), np.tile([0.0, -0.0, np.inf, np.nan], [rows, 1])], 1),
    }
    self.assertEqual(example_encoder.serialize_examples(columns), _reference(columns))

  def test_parses_back(self):
    columns = {"input_word_ids": np.array([[5, 300, 70000], [1, 2, 3]]),
               "masked_lm_weights": np.array([[1.0, 0.5], [0.0, 1.0]], np.float32)}
    parsed = tf.io.parse_example(
        example_encoder.serialize_examples(columns),
        {"input_word_ids": tf.io.FixedLenFeature([3], tf.int64),
         "masked_lm_weights": tf.io.FixedLenFeature([2], tf.float32)})
    self.assertAllEqual(parsed["input_word_ids"], columns["input_word_ids"])
    self.assertAllEqual(parsed["masked_lm_weights"], columns["masked_lm_weights"])

  def test_edge_shapes(self):
    empty_lists = {"input_word_ids": np.zeros([2, 0], np.int64)}
    self.assertEqual(example_encoder.serialize_examples(empty_lists), _reference(empty_lists))
    self.assertEqual(example_encoder.serialize_examples({"a": np.zeros([0, 3], np.int64)}), [])

  def test_bad_columns(self):
    with self.assertRaisesRegex(ValueError, "'input_word_ids' has negative values"):
      example_encoder.serialize_examples({"input_word_ids": np.array([[1, -1]])})
    with self.assertRaisesRegex(ValueError, "different numbers of rows"):
      example_encoder.serialize_examples({"a": np.zeros([2, 3], int), "b": np.zeros([3, 3], int)})
    with self.assertRaisesRegex(ValueError, "no columns"):
      example_encoder.serialize_examples({})
    with self.assertRaisesRegex(ValueError, r"'a' must be \[num_examples, width\]"):
      example_encoder.serialize_examples({"a": np.zeros([2], int)})


if __name__ == "__main__":
  tf.test.main()
