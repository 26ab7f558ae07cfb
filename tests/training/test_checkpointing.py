"""The checkpointer's restores: an evaluation's partial restore (a training checkpoint holds the
optimizer's values too) leaves no restore-warning flood behind, now or when its objects are
collected later (a failed restore's is `tests/interop/test_model_garden.py`'s and
`tests/methods/test_training_algorithms.py`'s)."""
import gc
import os
import tempfile

import tensorflow as tf

from official_rtd.training import checkpointing


def training_checkpoint(model_dir: str) -> None:
  """A checkpoint of a `model` and an `optimizer` (the evaluation below restores the model
  only): step 1."""
  weights = tf.Variable([1.0, 2.0])
  optimizer = tf.Module()
  optimizer.momentum = tf.Variable([0.5, 0.5])
  saver = checkpointing.Checkpointer(model_dir, {"model": tf.train.Checkpoint(weights=weights),
                                                 "optimizer": optimizer},
                                     keep_checkpoint_max=2, log=lambda _: None)
  saver.save(1)


class RestoreWarningsTest(tf.test.TestCase):

  def test_a_partial_evaluation_restore_warns_of_nothing_even_when_collected_later(self):
    model_dir = tempfile.mkdtemp()
    training_checkpoint(model_dir)
    weights = tf.Variable([0.0, 0.0])
    evaluation = checkpointing.Checkpointer(
        model_dir, {"model": tf.train.Checkpoint(weights=weights)}, keep_checkpoint_max=2,
        log=lambda _: None)
    with self.assertNoLogs("tensorflow", level="WARNING"):
      paths = list(evaluation.restored_in_turn())
      del evaluation
      gc.collect()  # where TensorFlow logs the values a status left unrestored
    self.assertEqual(paths, [os.path.join(model_dir, "ckpt-1")])
    self.assertAllEqual(weights, [1.0, 2.0])


if __name__ == "__main__":
  tf.test.main()
