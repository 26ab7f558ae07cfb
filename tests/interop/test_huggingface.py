"""Round trips out of our models: transformers' ELECTRA classes (TF, no torch needed) and the
raw-text SavedModel give our hidden states and logits."""
import dataclasses
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import build_vocab
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import huggingface
from official_rtd.interop import saved_model
from official_rtd.methods import electra
from official_rtd.methods import electric
from tests import testutil
from tests.data import test_other_languages
from tests.training.test_trainer import TINY

TEXTS = ["The cat sat on the mat.",
         "Alice was beginning to get very tired of sitting by her sister on the bank."]


def tiny_electra(vocab, num_layers=2, **kwargs):  # two layers: their order is checked
  config = dataclasses.replace(TINY, vocab_size=vocab.size, embedding_size=32, dropout_rate=0.0,
                               attention_dropout_rate=0.0, num_layers=num_layers, **kwargs)
  model = electra.build_electra_pretrainer(config, generator_size=0.5)
  ids = tf.constant([[2, 10, 3]])
  model({"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids * 0,
         "masked_lm_positions": tf.constant([[1]]), "masked_lm_ids": tf.constant([[10]]),
         "masked_lm_weights": tf.ones([1, 1])})
  return model


def encode(vocab, texts, length=24):
  pieces = tokenizer_lib.WordPieceTokenizer(vocab).tokenize_to_lists(texts)
  ids = np.full([len(texts), length], vocab.pad_id, np.int32)
  for row, p in enumerate(pieces):
    ids[row, :len(p) + 2] = [vocab.cls_id, *p[:length - 2], vocab.sep_id]
  mask = (ids != vocab.pad_id).astype(np.int32)
  return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


class HuggingFaceExportTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    tf.keras.utils.set_random_seed(0)
    self.vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)

  def test_transformers_loads_the_same_model(self):
    import transformers  # pylint: disable=g-import-not-at-top
    model = tiny_electra(self.vocab)
    out = os.path.join(tempfile.mkdtemp(), "hf")
    written = huggingface.export_huggingface(model, self.vocab, out)
    self.assertEqual(written, {"discriminator": "ElectraForPreTraining",
                               "generator": "ElectraForMaskedLM"})
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
      self.assertTrue(os.path.isfile(os.path.join(out, "discriminator", name)), name)
    batch = encode(self.vocab, TEXTS)
    real = batch["input_mask"] > 0
    hf_batch = {"input_ids": batch["input_word_ids"], "attention_mask": batch["input_mask"],
                "token_type_ids": batch["input_type_ids"], "output_hidden_states": True}

    disc = transformers.TFElectraForPreTraining.from_pretrained(os.path.join(out, "discriminator"))
    got = disc(**hf_batch)
    sequence = model.discriminator(batch)["sequence_output"]
    self.assertAllClose(got.hidden_states[-1].numpy()[real], sequence.numpy()[real], atol=1e-5)
    self.assertAllClose(got.logits.numpy()[real], model.rtd_head(sequence).numpy()[real],
                        atol=1e-5)

    gen = transformers.TFElectraForMaskedLM.from_pretrained(os.path.join(out, "generator"))
    got = gen(**hf_batch)
    sequence = model.generator(batch)["sequence_output"]
    self.assertAllClose(got.hidden_states[-1].numpy()[real], sequence.numpy()[real], atol=1e-5)
    positions = tf.constant([[1, 2, 3], [1, 4, 5]])
    ours_logits = model.masked_lm(sequence, positions).numpy()
    hf_logits = np.take_along_axis(got.logits.numpy(), positions.numpy()[..., None], 1)
    self.assertAllClose(hf_logits, ours_logits, atol=1e-4)

    # transformers' tokenizer reads the exported vocab and config the same way ours does.
    hf_tokenizer = transformers.ElectraTokenizer.from_pretrained(os.path.join(out, "generator"))
    self.assertAllEqual(hf_tokenizer(TEXTS, padding="max_length", max_length=24)["input_ids"],
                        batch["input_word_ids"])

  def test_files_are_readable_by_others_as_the_umask_says(self):
    previous = os.umask(0o022)
    try:
      out = os.path.join(tempfile.mkdtemp(), "hf")
      huggingface.export_huggingface(tiny_electra(self.vocab), self.vocab, out)
    finally:
      os.umask(previous)
    modes = {os.path.relpath(os.path.join(root, name), out):
             oct(os.stat(os.path.join(root, name)).st_mode & 0o777)
             for root, _, names in os.walk(out) for name in names}
    self.assertIn(os.path.join("discriminator", "model.safetensors"), modes)
    self.assertEqual(set(modes.values()), {"0o644"}, modes)  # safetensors alone wrote 0o600

  def test_shared_layers_are_unrolled(self):
    import transformers  # pylint: disable=g-import-not-at-top
    model = tiny_electra(self.vocab, share_layers=True)
    out = os.path.join(tempfile.mkdtemp(), "hf")
    huggingface.export_huggingface(model, self.vocab, out)
    disc = transformers.TFElectraModel.from_pretrained(os.path.join(out, "discriminator"))
    batch = encode(self.vocab, TEXTS)
    real = batch["input_mask"] > 0
    got = disc(input_ids=batch["input_word_ids"], attention_mask=batch["input_mask"])
    self.assertAllClose(got.last_hidden_state.numpy()[real],
                        model.discriminator(batch)["sequence_output"].numpy()[real], atol=1e-5)

  def test_non_transformer_generator_is_skipped_and_bad_encoders_refused(self):
    config = dataclasses.replace(TINY, vocab_size=self.vocab.size)
    model = electric.build_electric_pretrainer(config)
    ids = tf.constant([[2, 10, 11, 3]])
    model({"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ids * 0,
           "masked_lm_positions": tf.constant([[1]]), "masked_lm_ids": tf.constant([[10]]),
           "masked_lm_weights": tf.ones([1, 1])})
    out = os.path.join(tempfile.mkdtemp(), "hf")
    self.assertEqual(huggingface.export_huggingface(model, self.vocab, out),
                     {"discriminator": "ElectraModel"})

    class NotAnEncoder:
      name = "custom"
      exported_encoder = object()

    with self.assertRaisesRegex(huggingface.ExportFormatError, "not a BERT-style"):
      huggingface.export_huggingface(NotAnEncoder(), self.vocab, out)
    self.assertTrue(os.path.isdir(os.path.join(out, "discriminator")))  # earlier export intact


class HuggingFaceImportTest(tf.test.TestCase):
  """transformers checkpoints into our ELECTRA: our own export back (bit-identical), and
  checkpoints written by transformers' TF classes (h5 and safetensors)."""

  def setUp(self):
    super().setUp()
    tf.keras.utils.set_random_seed(0)
    self.vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)

  def assert_same_weights(self, a, b):
    for part in ("discriminator", "generator", "masked_lm", "rtd_head"):
      ours, theirs = getattr(a, part).weights, getattr(b, part).weights
      self.assertLen(theirs, len(ours), part)
      for v, w in zip(ours, theirs):
        self.assertAllEqual(v, w, msg=f"{part}: {v.name}")

  def test_round_trip_of_our_export_is_exact(self):
    for sharing in ("shared", "none"):
      config = dataclasses.replace(TINY, vocab_size=self.vocab.size, embedding_size=32,
                                   num_layers=2)
      model = electra.build_electra_pretrainer(config, generator_size=0.5,
                                               embedding_sharing=sharing)
      batch = encode(self.vocab, TEXTS)
      model(dict(batch, masked_lm_positions=tf.constant([[1], [2]]),
                 masked_lm_ids=tf.constant([[10], [11]]), masked_lm_weights=tf.ones([2, 1])))
      out = os.path.join(tempfile.mkdtemp(), "hf")
      huggingface.export_huggingface(model, self.vocab, out)
      logged = []
      back = huggingface.import_huggingface(os.path.join(out, "discriminator"),
                                            os.path.join(out, "generator"), log=logged.append)
      self.assertIn(f"embedding_sharing = {sharing!r}", logged[-1])
      self.assertEqual(back.discriminator.config, model.discriminator.config)
      self.assertEqual(back.generator.config, model.generator.config)
      self.assertEqual(back.generator.embeddings is back.discriminator.embeddings,
                       sharing == "shared")
      self.assert_same_weights(model, back)
      noise = tf.constant(np.random.default_rng(0).gumbel(size=[2, 1, self.vocab.size]),
                          tf.float32)
      inputs = dict(batch, masked_lm_positions=tf.constant([[1], [2]]),
                    masked_lm_ids=tf.constant([[10], [11]]), masked_lm_weights=tf.ones([2, 1]),
                    gumbel_noise=noise)
      a, b = model(inputs, training=False), back(inputs, training=False)
      for name in ("mlm_logits", "rtd_logits"):
        self.assertAllEqual(a[name], b[name], msg=name)

  def test_transformers_written_checkpoints_import_with_equal_hidden_states(self):
    import transformers  # pylint: disable=g-import-not-at-top
    tf.random.set_seed(3)  # transformers' random initialisation
    common = dict(vocab_size=self.vocab.size, embedding_size=16, num_hidden_layers=2,
                  max_position_embeddings=32, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    disc = transformers.TFElectraForPreTraining(transformers.ElectraConfig(
        hidden_size=32, num_attention_heads=2, intermediate_size=64, **common))
    gen = transformers.TFElectraForMaskedLM(transformers.ElectraConfig(
        hidden_size=16, num_attention_heads=1, intermediate_size=32, **common))
    for m in (disc, gen):
      m(m.dummy_inputs)
    gen.electra.embeddings.set_weights(disc.electra.embeddings.get_weights())  # tied, as released
    root = tempfile.mkdtemp()
    disc.save_pretrained(os.path.join(root, "disc"), safe_serialization=False)  # tf_model.h5
    gen.save_pretrained(os.path.join(root, "gen"), safe_serialization=True)  # TF-named safetensors
    self.assertTrue(os.path.isfile(os.path.join(root, "disc", "tf_model.h5")))
    model = huggingface.import_huggingface(os.path.join(root, "disc"), os.path.join(root, "gen"),
                                           log=lambda _: None)
    self.assertIs(model.generator.embeddings, model.discriminator.embeddings)
    batch = encode(self.vocab, TEXTS)
    real = batch["input_mask"] > 0
    hf_batch = {"input_ids": batch["input_word_ids"], "attention_mask": batch["input_mask"],
                "token_type_ids": batch["input_type_ids"], "output_hidden_states": True}
    got = disc(**hf_batch)
    sequence = model.discriminator(batch)["sequence_output"]
    self.assertAllClose(sequence.numpy()[real], got.hidden_states[-1].numpy()[real], atol=1e-5)
    self.assertAllClose(model.rtd_head(sequence).numpy()[real], got.logits.numpy()[real],
                        atol=1e-5)
    got = gen(**hf_batch)
    sequence = model.generator(batch)["sequence_output"]
    self.assertAllClose(sequence.numpy()[real], got.hidden_states[-1].numpy()[real], atol=1e-5)
    positions = tf.constant([[1, 2, 3], [1, 4, 5]])
    hf_logits = np.take_along_axis(got.logits.numpy(), positions.numpy()[..., None], 1)
    # transformers' generator head applies the erf GELU whatever hidden_act says; ours (and the
    # original ELECTRA code's) is BERT's tanh approximation: logits differ by ~1e-4 here.
    self.assertAllClose(model.masked_lm(sequence, positions), hf_logits, atol=5e-4)

  def test_problems_are_named(self):
    model = tiny_electra(self.vocab)
    out = os.path.join(tempfile.mkdtemp(), "hf")
    huggingface.export_huggingface(model, self.vocab, out)
    path = os.path.join(out, "discriminator", huggingface.SAFETENSORS_NAME)
    from safetensors import numpy as safetensors_numpy  # pylint: disable=g-import-not-at-top
    tensors = safetensors_numpy.load_file(path)
    del tensors["electra.encoder.layer.1.output.dense.weight"]
    tensors["electra.embeddings.LayerNorm.bias"] = np.zeros([3], np.float32)
    safetensors_numpy.save_file(tensors, path)
    with self.assertRaisesRegex(
        huggingface.HuggingFaceImportError,
        r"2 problem\(s\): .*electra.embeddings.LayerNorm.bias has shape \[3\], expected "
        r"\[32\]; .*missing electra.encoder.layer.1.output.dense.weight"):
      huggingface.import_huggingface(os.path.join(out, "discriminator"))
    with open(path, "r+b") as f:  # a download cut short
      f.truncate(os.path.getsize(path) // 2)
    with self.assertRaisesRegex(huggingface.HuggingFaceImportError,
                                rf"{path} is not a readable safetensors file \(truncated"):
      huggingface.import_huggingface(os.path.join(out, "discriminator"))
    os.remove(path)
    with self.assertRaisesRegex(huggingface.HuggingFaceImportError,
                                "no model.safetensors or tf_model.h5 .*found: config.json"):
      huggingface.import_huggingface(os.path.join(out, "discriminator"))
    with open(os.path.join(out, "generator", "config.json"), "w", encoding="utf-8") as f:
      f.write('{"model_type": "bert", "hidden_act": "relu"}')
    with self.assertRaisesRegex(huggingface.HuggingFaceImportError,
                                "model_type 'bert'.*hidden_act 'relu'"):
      huggingface.import_huggingface(os.path.join(out, "generator"))



@testutil.requires(test_other_languages.MULTILINGUAL)
class OtherTokenizersTest(tf.test.TestCase):
  """Exports of runs with a SentencePiece model or a tokenizer.json (learned on German text):
  transformers' `AutoTokenizer` on the export gives our ids and our pair layout, and the import
  takes the export's tokenizer file back with the same ids."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    tmp = tempfile.mkdtemp()
    corpus = test_other_languages.head("de", tmp, 2000)
    cls.texts = test_other_languages.GERMAN + ["  Straße   ''zitiert'' 1990, Œuvre ①  "]
    with open(corpus, encoding="utf-8") as f:
      cls.texts += [line.strip() for line in f.readlines()[-100:] if line.strip()]
    model_path = os.path.join(tmp, "de.model")
    build_vocab.build_vocab([corpus], model_path, vocab_size=1500, lower_case=False,
                            log=lambda _: None, model_type="sentencepiece_unigram")
    json_path = os.path.join(tmp, "tokenizer.json")
    test_other_languages.train_tokenizer_json(json_path, corpus,
                                              ["<pad>", "<unk>", "<s>", "</s>", "<mask>"])
    cls.vocabs = {"sentencepiece": vocab_lib.load_vocab(model_path),
                  "huggingface": vocab_lib.load_vocab(json_path)}

  def test_transformers_tokenizer_gives_our_ids_and_the_import_takes_it_back(self):
    import transformers  # pylint: disable=g-import-not-at-top
    for kind, vocab in self.vocabs.items():
      ours = tokenizer_lib.for_vocab(vocab, do_lower_case=False)
      expected = ours.tokenize_to_lists(self.texts)
      out = os.path.join(tempfile.mkdtemp(), "hf")
      huggingface.export_huggingface(tiny_electra(vocab), vocab, out, do_lower_case=False)
      directory = os.path.join(out, "discriminator")
      # The fast tokenizer of a .model is converted through sentencepiece's protobuf module,
      # which this environment's protobuf cannot import: the SentencePiece case uses the slow one.
      hf = transformers.AutoTokenizer.from_pretrained(directory,
                                                      use_fast=kind == "huggingface")
      self.assertEqual([hf(t, add_special_tokens=False)["input_ids"] for t in self.texts],
                       expected, msg=kind)
      pair = hf(self.texts[0], self.texts[1])
      a, b = expected[0], expected[1]
      self.assertEqual(pair["input_ids"], [vocab.cls_id, *a, vocab.sep_id, *b, vocab.sep_id])
      self.assertEqual(pair["token_type_ids"], [0] * (len(a) + 2) + [1] * (len(b) + 1))
      self.assertEqual(hf.mask_token_id, vocab.mask_id)
      self.assertEqual(hf.pad_token_id, vocab.pad_id)
      back = vocab_lib.load_vocab(huggingface.checkpoint_vocab(directory))
      self.assertEqual(back.kind, kind)
      self.assertEqual(tokenizer_lib.for_vocab(back, False).tokenize_to_lists(self.texts),
                       expected, msg=kind)
    with self.assertRaisesRegex(huggingface.HuggingFaceImportError,
                                "has no tokenizer file .*vocab.txt / tokenizer.json.*--vocab_file"):
      huggingface.checkpoint_vocab(tempfile.mkdtemp())

  def test_a_sentencepiece_saved_model_serves_raw_text_and_a_tokenizer_json_is_refused(self):
    vocab = self.vocabs["sentencepiece"]
    model = tiny_electra(vocab)
    out = os.path.join(tempfile.mkdtemp(), "saved")
    saved_model.export_saved_model(model, vocab, out, do_lower_case=False, max_seq_length=64)
    got = tf.saved_model.load(out).signatures["serving_default"](tf.constant(self.texts[:2]))
    pieces = tokenizer_lib.for_vocab(vocab, False).tokenize_to_lists(self.texts[:2])
    for row, p in enumerate(pieces):
      ids = [vocab.cls_id, *p[:62], vocab.sep_id]
      self.assertEqual(got["input_word_ids"].numpy()[row, :len(ids)].tolist(), ids)
    with self.assertRaisesRegex(ValueError, "runs in Python, not inside a TensorFlow graph"):
      saved_model.export_saved_model(model, self.vocabs["huggingface"], out + "2",
                                     do_lower_case=False)


class SavedModelTest(tf.test.TestCase):

  def test_raw_text_signature_matches_the_model(self):
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    model = tiny_electra(vocab)
    out = os.path.join(tempfile.mkdtemp(), "saved")
    saved_model.export_saved_model(model, vocab, out, max_seq_length=64)
    loaded = tf.saved_model.load(out)
    got = loaded.signatures["serving_default"](tf.constant(TEXTS))
    batch = encode(vocab, TEXTS, length=int(got["input_word_ids"].shape[1]))
    self.assertAllEqual(got["input_word_ids"], batch["input_word_ids"])
    real = batch["input_mask"] > 0
    sequence = model.discriminator(batch)["sequence_output"]
    self.assertAllClose(got["sequence_output"].numpy()[real], sequence.numpy()[real], atol=1e-5)
    self.assertAllClose(got["rtd_logits"].numpy()[real],
                        model.rtd_head(sequence).numpy()[real], atol=1e-5)


if __name__ == "__main__":
  tf.test.main()
