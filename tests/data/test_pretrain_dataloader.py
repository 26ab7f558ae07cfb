"""The tf.data reader: batching, sidecar checks, dynamic masking, input-pipeline sharding."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import pretrain_dataloader as loader
from official_rtd.data import pretraining_data
from official_rtd.data import records
from official_rtd.data import vocab as vocab_lib
from official_rtd.ops import masking
from tests import testutil


class PretrainDataloaderTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    corpus = testutil.write_text(os.path.join(cls.tmp, "corpus.txt"),
                                 "\n".join(testutil.sample_paragraphs(60)) + "\n")
    cls.vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    for name, dupes in [("masked", 2), ("plain", 0)]:
      pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
          input_files=(corpus,), vocab_file=testutil.SAMPLE_VOCAB,
          output_dir=os.path.join(cls.tmp, name), max_seq_length=32, max_predictions_per_seq=5,
          dupe_factor=dupes, num_shards=4, num_workers=1), log=lambda _: None)

  def _config(self, name, **kwargs):
    values = dict(input_path=os.path.join(self.tmp, name), global_batch_size=8, seq_length=32,
                  max_predictions_per_seq=5, seed=1)
    values.update(kwargs)
    return loader.PretrainInputConfig(**values)

  def test_static_masked_batches(self):
    batch = next(iter(loader.load_pretraining_dataset(self._config("masked"))))
    self.assertEqual(batch["input_word_ids"].shape, [8, 32])
    self.assertEqual(batch["input_word_ids"].dtype, tf.int32)
    self.assertEqual(batch["masked_lm_positions"].shape, [8, 5])
    self.assertEqual(batch["masked_lm_weights"].dtype, tf.float32)
    self.assertAllEqual(batch["input_word_ids"][:, 0], np.full(8, self.vocab.cls_id))

  def test_dynamic_masking_of_plain_records(self):
    config = self._config(
        "plain", dynamic_masking=masking.MaskingConfig(max_predictions_per_seq=5),
        token_tables=masking.TokenTables.from_vocab(self.vocab), is_training=False,
        global_batch_size=64)
    first = [{k: v.numpy() for k, v in b.items()} for b in loader.load_pretraining_dataset(config)]
    again = [{k: v.numpy() for k, v in b.items()} for b in loader.load_pretraining_dataset(config)]
    n_masked = sum(b["masked_lm_weights"].sum() for b in first)
    n_cand = sum((~self.vocab.is_special()[b["input_word_ids"]]).sum() for b in first) + sum(
        (b["input_word_ids"] == self.vocab.mask_id).sum() for b in first)
    self.assertAllClose(n_masked / n_cand, 0.15, atol=0.02)
    n_mask_token = sum((b["input_word_ids"] == self.vocab.mask_id).sum() for b in first)
    self.assertAllClose(n_mask_token / n_masked, 0.85, atol=0.05)
    for a, b in zip(first, again):  # same seed, same masks
      self.assertAllEqual(a["masked_lm_positions"], b["masked_lm_positions"])

  def test_input_context_shards_disjointly(self):
    def examples(pipeline_id):
      context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id,
                                           num_replicas_in_sync=2)
      dataset = loader.load_pretraining_dataset(
          self._config("masked", is_training=False, global_batch_size=4), context)
      return {row.tobytes() for b in dataset for row in b["input_word_ids"].numpy()}, dataset

    a, dataset = examples(0)
    b, _ = examples(1)
    self.assertEqual(dataset.element_spec["input_word_ids"].shape.as_list(), [None, 32])
    self.assertFalse(a & b)
    self.assertTrue(a and b)

  def test_mismatches_fail_clearly(self):
    with self.assertRaisesRegex(records.RecordsError, "max_seq_length 32 but the run trains at "
                                "64 .*TrainConfig.max_seq_length = 32.*--max_seq_length=64"):
      loader.load_pretraining_dataset(self._config("masked", seq_length=64))
    with self.assertRaisesRegex(records.RecordsError, "max_predictions_per_seq 5 but the run "
                                "expects 7 .*TrainConfig.max_predictions_per_seq = 5.*"
                                "--max_predictions_per_seq=7"):
      loader.load_pretraining_dataset(self._config("masked", max_predictions_per_seq=7))
    with self.assertRaisesRegex(records.RecordsError, "different vocab file"):
      loader.load_pretraining_dataset(self._config("masked", vocab_sha256="0" * 64))
    with self.assertRaisesRegex(records.RecordsError, "unmasked.*dynamic masking"):
      loader.load_pretraining_dataset(self._config("plain"))
    empty = tempfile.mkdtemp()
    with self.assertRaisesRegex(records.RecordsError, f"records directory {empty} is empty"):
      loader.load_pretraining_dataset(self._config(empty))
    with self.assertRaisesRegex(records.RecordsError, "matches nothing"):
      loader.load_pretraining_dataset(self._config(os.path.join(self.tmp, "nothing*")))
    with self.assertRaisesRegex(records.RecordsError, "mixes masked and unmasked"):
      loader.load_pretraining_dataset(self._config(
          f"{self.tmp}/masked,{self.tmp}/plain", dynamic_masking=masking.MaskingConfig(),
          token_tables=masking.TokenTables.from_vocab(self.vocab)))


if __name__ == "__main__":
  tf.test.main()
