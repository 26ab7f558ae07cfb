"""The structure-onset monitor: its figures against hand computations on hand-made maps and on a
tiny encoder whose first head is forced to attend to the previous token; held-out rows; and a run
that reports them (log line, TensorBoard, onset.jsonl) and `compare_runs --plot` of them."""
import json
import os

import gin
import numpy as np
import tensorflow as tf

from official_rtd.tools import compare_runs
from official_rtd import runs
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.training import structure_monitor
from tests.training.test_trainer import RecordsTestCase

SEQ = 8
CONFIG = EncoderConfig(vocab_size=40, hidden_size=16, num_layers=2, num_attention_heads=2,
                       intermediate_size=32, embedding_size=16, max_position_embeddings=SEQ,
                       position_embedding="t5_relative", dropout_rate=0.0,
                       attention_dropout_rate=0.0)
PREVIOUS_TOKEN_BUCKET = 1  # T5 buckets: key − query = −1 is bucket 1 (|d| < 8 is exact, d < 0 first)


def forced_encoder(bias: float):
  """Both layers' queries are zero, so the scores are the (shared) relative position bias alone:
  head 0 gets `bias` on the previous token, head 1 nothing (uniform)."""
  tf.keras.utils.set_random_seed(0)
  encoder = TransformerEncoder(CONFIG)
  ids = np.arange(2, 2 + SEQ, dtype=np.int32)[None]
  encoder({"input_word_ids": ids, "input_mask": np.ones_like(ids),
           "input_type_ids": np.zeros_like(ids)})
  for block in encoder.transformer_layers:
    for weight in block.parts()["query"].weights:
      weight.assign(tf.zeros_like(weight))
    for role in ("value", "attention_output"):  # what attention adds outweighs the residual
      for weight in block.parts()[role].weights:
        weight.assign(weight * 30.0)
  table = np.zeros(encoder.position_bias.weights[0].shape, np.float32)  # [buckets, heads]
  table[PREVIOUS_TOKEN_BUCKET, 0] = bias
  encoder.position_bias.weights[0].assign(table)
  return encoder


class FiguresTest(tf.test.TestCase):

  def test_neighbour_weights_on_hand_made_maps(self):
    shift = np.eye(4, k=-1)[None, None]  # every query (but the first) on its previous token
    maps = np.concatenate([shift, np.full([1, 1, 4, 4], 0.25)], axis=1)  # [1, 2 heads, 4, 4]
    self.assertAllClose(structure_monitor.neighbour_weights(maps, -1), [1.0, 0.25])
    self.assertAllClose(structure_monitor.neighbour_weights(maps, 1), [0.0, 0.25])

  def test_forced_previous_token_head_by_hand(self):
    rows = np.random.default_rng(0).integers(5, 40, size=[4, SEQ]).astype(np.int32)
    rows[:, 0], rows[:, -1] = 2, 3
    figures = structure_monitor.onset_figures(forced_encoder(60.0), rows)
    # Head 0: query i >= 1 puts e^60 / (e^60 + 7) ≈ 1 on i − 1; query 0 has no previous token,
    # all its scores are 0: uniform. Head 1: uniform (1/8) everywhere, in both layers.
    self.assertAllClose(figures["attn_prev_max"], 1.0, atol=1e-6)
    self.assertAllClose(figures["attn_next_max"], 1 / SEQ, atol=1e-6)
    # Entropy ÷ log 8: head 0 is 1 on row 0 and 0 on the others (1/8 over the rows), head 1 is 1.
    self.assertAllClose(figures["attn_entropy_ratio"], (1 / SEQ + 1.0) / 2, atol=1e-5)
    self.assertGreater(figures["order_sensitivity"], 1e-3)
    # Without the bias every head is uniform and, with no absolute positions, blind to order.
    blind = structure_monitor.onset_figures(forced_encoder(0.0), rows)
    self.assertAllClose([blind["attn_prev_max"], blind["attn_next_max"],
                         blind["attn_entropy_ratio"]], [1 / SEQ, 1 / SEQ, 1.0], atol=1e-6)
    self.assertLess(blind["order_sensitivity"], 1e-6)

  def test_heldout_rows_run_the_text_on_between_cls_and_sep(self):
    batches = [{"input_word_ids": np.array([[1, 5, 6, 7, 2, 0], [1, 8, 9, 2, 0, 0]]),
                "input_mask": np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]])}]
    rows = structure_monitor.heldout_rows(batches, cls_id=1, sep_id=2, num_rows=3, width=4)
    self.assertAllEqual(rows, [[1, 5, 6, 2], [1, 7, 8, 2]])  # 5 pieces: two rows of two

  def test_config_refuses_nonsense(self):
    with self.assertRaisesRegex(ValueError, "OnsetConfig"):
      structure_monitor.OnsetConfig(width=2)


class MonitoredRunTest(RecordsTestCase):
  PARAGRAPHS = 120

  def test_run_reports_onset_rows_tensorboard_and_plot(self):
    model_dir = os.path.join(self.tmp, "monitored")
    lines = []
    try:
      runs.run_pretraining(
          ["gin/models/tiny.gin", "gin/tasks/mlm.gin"],
          ["TrainConfig.train_batch_size = 8", "TrainConfig.num_train_steps = 6",
           "OnsetConfig.every_steps = 4", "OnsetConfig.num_rows = 4", "OnsetConfig.width = 16"],
          self.records, model_dir, log=lines.append)
    finally:
      gin.clear_config()
    with open(os.path.join(model_dir, "onset.jsonl"), encoding="utf-8") as f:
      rows = [json.loads(line) for line in f]
    self.assertEqual([r["step"] for r in rows], [4, 6])  # every 4 steps, and at the end
    for row in rows:
      self.assertEqual(set(row) - {"step", "train_flops"},
                       {"onset_" + n for n in structure_monitor.FIGURES})
      self.assertBetween(row["onset_attn_prev_max"], 0.0, 1.0)
    self.assertTrue(any(l.startswith("structure onset at step 6") for l in lines))
    tags = set()
    for path in tf.io.gfile.glob(os.path.join(model_dir, "train", "events.*")):
      for event in tf.compat.v1.train.summary_iterator(path):
        tags.update(v.tag for v in event.summary.value)
    self.assertIn("onset_order_sensitivity", tags)
    png = os.path.join(self.tmp, "onset.png")
    series = compare_runs.plot([model_dir], "onset_attn_prev_max", png)
    self.assertEqual([x for x, _ in series["monitored"]], [r["train_flops"] for r in rows])
    self.assertGreater(os.path.getsize(png), 1000)
    # Off by the flag: no rows.
    other = os.path.join(self.tmp, "unmonitored")
    try:
      runs.run_pretraining(["gin/models/tiny.gin", "gin/tasks/mlm.gin"],
                           ["TrainConfig.train_batch_size = 8", "TrainConfig.num_train_steps = 2"],
                           self.records, other, onset_monitor=False, log=lambda _: None)
    finally:
      gin.clear_config()
    self.assertFalse(os.path.exists(os.path.join(other, "onset.jsonl")))

  def test_a_run_resumed_after_a_hard_kill_writes_each_onset_row_once(self):
    # Onset read at step 4, killed before the step-6 save: the resumed run re-trains steps 2-4
    # from ckpt-2 and must not write step 4's row again.
    model_dir = os.path.join(self.tmp, "hard_kill")
    params = ["TrainConfig.train_batch_size = 8", "TrainConfig.num_train_steps = 6",
              "TrainConfig.save_checkpoints_steps = 2", "OnsetConfig.every_steps = 4",
              "OnsetConfig.num_rows = 4", "OnsetConfig.width = 16"]
    onset_file = os.path.join(model_dir, "onset.jsonl")
    for attempt in ("first", "resumed"):
      try:
        runs.run_pretraining(["gin/models/tiny.gin", "gin/tasks/mlm.gin"], params, self.records,
                             model_dir, log=lambda _: None)
      finally:
        gin.clear_config()
      with open(onset_file, encoding="utf-8") as f:
        steps = [json.loads(line)["step"] for line in f]
      self.assertEqual(steps, [4, 6], attempt)
      if attempt == "first":  # the kill: ckpt-4 and ckpt-6 lost, step 6's row never written
        for name in tf.io.gfile.glob(os.path.join(model_dir, "ckpt-[46].*")):
          os.remove(name)
        tf.compat.v1.train.update_checkpoint_state(model_dir, os.path.join(model_dir, "ckpt-2"))
        with open(onset_file, encoding="utf-8") as f:
          first_row = f.readline()
        with open(onset_file, "w", encoding="utf-8") as f:
          f.write(first_row)


if __name__ == "__main__":
  tf.test.main()
