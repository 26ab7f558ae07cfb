"""Linear probes: the token probe's features are each word's first piece (checked by hand on
unpadded sentences), and `run_probes` probes an export next to random initialisations."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.tools import run_probes
from official_rtd.data import tagging_data
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import export
from official_rtd.methods import mlm
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.probes import probe as probe_lib
from tests import testutil
from tests import tool_server

POS_DIR = os.path.join(testutil.SHARED_DATA, "tagging", "pos_ptb")
SST2_DIR = os.path.join(testutil.SHARED_DATA, "glue", "SST-2")
UD_DIR = os.path.join(testutil.SHARED_DATA, "parsing", "ud_ewt")


def tiny_export(directory):
  vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
  tf_keras.utils.set_random_seed(3)
  model = mlm.build_mlm_pretrainer(EncoderConfig(
      hidden_size=32, num_layers=2, num_attention_heads=2, intermediate_size=64,
      embedding_size=32, max_position_embeddings=64, vocab_size=vocab.size))
  model.encoder({"input_word_ids": tf.ones([1, 4], tf.int32),
                 "input_mask": tf.ones([1, 4], tf.int32),
                 "input_type_ids": tf.zeros([1, 4], tf.int32)})
  return export.export_encoder(model, vocab, directory, max_seq_length=64)


class TokenProbeFeaturesTest(tf.test.TestCase):

  def test_first_piece_of_each_word(self):
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    tokenizer = tokenizer_lib.WordPieceTokenizer(vocab)
    encoder = export.load_encoder(tiny_export(tempfile.mkdtemp()))
    sentences = [tagging_data.Sentence(("Unbelievably", "quick", "foxes", "."),
                                       ("RB", "JJ", "NNS", ".")),
                 tagging_data.Sentence(("She", "sat"), ("PRP", "VBD"))]
    windows = tagging_data.encode(sentences, tokenizer, 32, {"RB": 0, "JJ": 1, "NNS": 2, ".": 3,
                                                             "PRP": 4, "VBD": 5})
    features, labels = probe_lib.TokenProbe.features(encoder, windows)
    layers, _ = probe_lib.TokenProbe.features(encoder, windows, all_layers=True)
    self.assertAllEqual(labels, [0, 1, 2, 3, 4, 5])
    self.assertEqual((features.shape[0], layers.shape[0]), (1, 2))  # the export: 2 blocks
    expected, first_block, split = [], [], False
    for sentence in sentences:
      ids, firsts = [vocab.cls_id], []
      for word in sentence.words:
        firsts.append(len(ids))
        pieces = tokenizer.tokenize_to_lists([word])[0]
        split |= len(pieces) > 1
        ids += pieces
      row = tf.constant([ids + [vocab.sep_id]])
      out = encoder({"input_word_ids": row, "input_mask": tf.ones_like(row),
                     "input_type_ids": tf.zeros_like(row)}, training=False)
      expected.append(out["sequence_output"].numpy()[0, firsts])
      first_block.append(out["encoder_outputs"][0].numpy()[0, firsts])
    self.assertTrue(split)  # a word of several pieces: its first one is what the probe reads
    self.assertAllClose(features[0], np.concatenate(expected), atol=1e-5)
    self.assertAllClose(layers[1], np.concatenate(expected), atol=1e-5)
    self.assertAllClose(layers[0], np.concatenate(first_block), atol=1e-5)
    self.assertNotAllClose(layers[0], layers[1])

  def test_layer_figures_name_the_last_and_the_best(self):
    self.assertEqual(probe_lib.layer_figures("probe_pos_accuracy", [0.7]),
                     {"probe_pos_accuracy": 0.7})
    self.assertEqual(probe_lib.layer_figures("probe_pos_accuracy", [0.6, 0.8, 0.8, 0.7]),
                     {"probe_pos_accuracy": 0.7, "probe_pos_accuracy_best_layer": 0.8,
                      "probe_pos_accuracy_best_layer_index": 2})


@testutil.requires(testutil.SHARED_DATA)
class RunProbesTest(tf.test.TestCase):

  def test_probes_an_export_and_random_inits(self):
    tmp = tempfile.mkdtemp()
    path = tiny_export(tmp)
    out = os.path.join(tmp, "probes.json")
    result = tool_server.run(
        ["run_probes", f"--init_checkpoint={path}", f"--pos_data_dir={POS_DIR}",
         f"--glue_data_dir={SST2_DIR}", "--pos_max_train_sentences=60",
         f"--ud_data_dir={UD_DIR}", "--ud_max_train_sentences=60",
         "--glue_max_train_examples=60", "--max_seq_length=64", "--random_init_seeds=2",
         f"--output_file={out}"], cwd=testutil.REPO, timeout=900)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    with open(out) as f:
      report = json.load(f)
    for key in ("probe_pos_accuracy", "probe_sst-2_accuracy", "probe_ud_uas"):
      self.assertBetween(report["pretrained"][key], 0.0, 1.0)
      self.assertLen(report["random_init"][key + "_all"], 2)
      self.assertAllClose(report["random_init"][key],
                          np.median(report["random_init"][key + "_all"]))
    # POS from 60 sentences is far above chance (45 tags) even for random features.
    self.assertGreater(report["pretrained"]["probe_pos_accuracy"], 0.3)
    for key in ("probe_pos_accuracy", "probe_sst-2_accuracy", "probe_ud_uas"):  # both blocks
      self.assertIn(report["pretrained"][key + "_best_layer_index"], (1, 2))
      self.assertGreaterEqual(report["pretrained"][key + "_best_layer"],
                              report["pretrained"][key])
    self.assertIn("probe_pos_accuracy: pretrained", result.stdout)
    # Two refusals in this process (the tool's main raises the line's text); the third below
    # through the command line.
    with self.assertRaisesRegex(ValueError, "exceeds the encoder's 64 positions"):
      run_probes.main(run_probes.RunProbesConfig(init_checkpoint=path, output_file=out,
                                                 max_seq_length=512, pos_data_dir=POS_DIR))
    with self.assertRaisesRegex(ValueError, "give at least one of --pos_data_dir, "
                                "--glue_data_dir and --ud_data_dir"):
      run_probes.main(run_probes.RunProbesConfig(init_checkpoint=path, output_file=out))
    result = tool_server.run(
        ["run_probes", f"--init_checkpoint={path}", f"--pos_data_dir={POS_DIR}",
         "--max_seq_length=64", f"--output_file={out}"], cwd=testutil.REPO, timeout=300)
    self.assertEqual(result.returncode, 1)
    self.assertIn(f"--output_file={out} already exists: nothing was written", result.stderr)
    with open(out) as f:
      self.assertEqual(json.load(f), report)


if __name__ == "__main__":
  tf.test.main()
