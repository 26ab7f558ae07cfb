"""Sharded TFRecord writing."""
import os
import tempfile

import tensorflow as tf

from official_rtd.data import records


class ShardedWriterTest(tf.test.TestCase):

  def test_round_robin_continues_across_calls(self):
    out = tempfile.mkdtemp()
    writer = records.ShardedWriter(out, 3)
    writer.write([b"a", b"b"])
    writer.write([b"c", b"d", b"e", b"f", b"g"])
    writer.write([])
    writer.write([b"h"])
    writer.commit({"counts": {"examples": 8}})
    shards = [list(tf.data.TFRecordDataset(os.path.join(out, name)).as_numpy_iterator())
              for name in writer.names]
    self.assertEqual(shards, [[b"a", b"d", b"g"], [b"b", b"e", b"h"], [b"c", b"f"]])


if __name__ == "__main__":
  tf.test.main()
