"""Other languages and tokenizers on real German and Chinese text (`../shared/data/multilingual`):
SentencePiece vocabularies learned and used with the same ids as the sentencepiece library's,
records written and read back, a tiny pre-training run whose losses fall, a Hugging Face
`tokenizer.json`, and clear errors for tokenizers that cannot serve."""
import functools
import os
import tempfile
import unicodedata

import sentencepiece
import tensorflow as tf

from official_rtd.data import build_vocab
from official_rtd.data import pretrain_dataloader
from official_rtd.data import pretraining_data
from official_rtd.data import records
from official_rtd.data import tagging_data
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune.squad import data as squad_data
from official_rtd.methods import electra
from official_rtd.ops import masking
from official_rtd.ops import sampling
from tests import testutil
from tests.training.test_trainer import text_trainer

MULTILINGUAL = os.path.join(testutil.SHARED_DATA, "multilingual")
GERMAN = ["Die Verwandlung ist eine Erzählung von Franz Kafka.",
          "Als Gregor Samsa eines Morgens aus unruhigen Träumen erwachte, fand er sich in seinem "
          "Bett zu einem ungeheueren Ungeziefer verwandelt."]
CHINESE = ["話說天下大勢，分久必合，合久必分。", "宴桃園豪傑三結義，斬黃巾英雄首立功。"]


def head(language: str, directory: str, lines: int) -> str:
  """The first `lines` lines of the shared `<language>_00.txt`, as a file in `directory`."""
  with open(os.path.join(MULTILINGUAL, f"{language}_00.txt"), encoding="utf-8") as f:
    text = [next(f) for _ in range(lines)]
  path = os.path.join(directory, f"{language}.txt")
  testutil.write_text(path, "".join(text))
  return path


def train_tokenizer_json(path: str, corpus: str, special_tokens):
  """A Unigram `tokenizer.json` (NFKC, Metaspace) learned on `corpus`, saved at `path`."""
  import tokenizers  # pylint: disable=g-import-not-at-top
  tokenizer = tokenizers.Tokenizer(tokenizers.models.Unigram())
  tokenizer.normalizer = tokenizers.normalizers.NFKC()
  tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
  tokenizer.decoder = tokenizers.decoders.Metaspace()
  trainer = tokenizers.trainers.UnigramTrainer(vocab_size=1500, special_tokens=special_tokens,
                                               unk_token="<unk>", show_progress=False)
  tokenizer.train([corpus], trainer)
  tokenizer.save(path)
  return tokenizer


@testutil.requires(MULTILINGUAL)
class SentencePieceTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.corpus = {"de": head("de", cls.tmp, 3000), "zh": head("zh", cls.tmp, 1500)}
    cls.models = {
        "de": cls._learn("de", "sentencepiece_unigram", 2000, 1.0, False),
        "zh": cls._learn("zh", "sentencepiece_bpe", 3000, 0.99, True)}

  @classmethod
  def _learn(cls, language, model_type, size, coverage, byte_fallback):
    path = os.path.join(cls.tmp, f"{language}.model")
    build_vocab.build_vocab([cls.corpus[language]], path, vocab_size=size, lower_case=False,
                            log=lambda _: None, model_type=model_type,
                            character_coverage=coverage, byte_fallback=byte_fallback)
    return path

  def test_vocabularies_have_the_special_roles_and_the_librarys_ids(self):
    for language, texts in (("de", GERMAN), ("zh", CHINESE)):
      vocab = vocab_lib.load_vocab(self.models[language])
      self.assertEqual(vocab.kind, "sentencepiece")
      self.assertEqual(vocab.tokens[:5], vocab_lib.SPECIAL_TOKENS)
      self.assertEqual((vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id, vocab.mask_id),
                       (0, 1, 2, 3, 4))
      reference = sentencepiece.SentencePieceProcessor(model_file=self.models[language])
      ours = tokenizer_lib.for_vocab(vocab, do_lower_case=False).tokenize_to_lists(texts)
      self.assertEqual(ours, [reference.EncodeAsIds(t) for t in texts])
      # Cased and lossless up to the model's NFKC normalisation (full-width commas become ",").
      self.assertEqual([reference.DecodeIds(ids) for ids in ours],
                       [unicodedata.normalize("NFKC", t) for t in texts])
    # Chinese with byte fallback: a character the corpus never had is bytes, not [UNK].
    vocab = vocab_lib.load_vocab(self.models["zh"])
    rare = tokenizer_lib.for_vocab(vocab, False).tokenize_to_lists(["龘"])[0]
    self.assertNotIn(vocab.unk_id, rare)
    pieces = [vocab.tokens[i] for i in rare if vocab.tokens[i] != vocab_lib.WORD_START]
    self.assertEqual(pieces, ["<0xE9>", "<0xBE>", "<0x98>"])  # its UTF-8 bytes

  def test_word_starts_for_whole_word_masking(self):
    vocab = vocab_lib.load_vocab(self.models["de"])
    continuation = vocab.is_continuation()
    ids = tokenizer_lib.for_vocab(vocab, False).tokenize_to_lists(["ungeheueren Ungeziefer"])[0]
    starts = [i for i in ids if not continuation[i]]
    self.assertLen(starts, 2)  # one piece per word starts with "▁"
    self.assertTrue(all(vocab.tokens[i].startswith(vocab_lib.WORD_START) for i in starts))
    self.assertFalse(continuation[vocab.special_ids].any())

  def test_records_and_a_pretraining_run_in_chinese(self):
    records_dir = os.path.join(self.tmp, "zh_records")
    pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
        input_files=(self.corpus["zh"],), vocab_file=self.models["zh"], output_dir=records_dir,
        max_seq_length=64, max_predictions_per_seq=10, dupe_factor=0, num_shards=1,
        num_workers=1), log=lambda _: None)  # unset --do_lower_case: as the model implies
    vocab = vocab_lib.load_vocab(self.models["zh"])
    self.assertFalse(records.read_sidecar(records_dir)["vocab"]["do_lower_case"])
    batch = next(iter(pretrain_dataloader.load_pretraining_dataset(
        pretrain_dataloader.PretrainInputConfig(
            records_dir, 4, 64, 10, is_training=False,
            dynamic_masking=masking.MaskingConfig(max_predictions_per_seq=10),
            token_tables=masking.TokenTables.from_vocab(vocab)))))
    # Each record is [CLS] A [SEP] (B [SEP]): pieces of the corpus that the sentencepiece
    # library decodes back to (NFKC-normalised) text of the corpus.
    reference = sentencepiece.SentencePieceProcessor(model_file=self.models["zh"])
    with open(self.corpus["zh"], encoding="utf-8") as f:
      corpus = unicodedata.normalize("NFKC", f.read())
    original = sampling.unmask(batch).numpy()  # the records' ids, before dynamic masking
    for row, mask in zip(original, batch["input_mask"].numpy()):
      ids = row[mask > 0].tolist()
      self.assertEqual((ids[0], ids[-1]), (vocab.cls_id, vocab.sep_id))
      segments = " ".join(map(str, ids[1:-1])).split(f" {vocab.sep_id} ")
      for segment in segments:
        text = reference.DecodeIds([int(i) for i in segment.split()])
        for fragment in filter(None, text.split(" ")):  # one per paragraph (each starts with ▁)
          self.assertIn(fragment, corpus)
    trainer, logged = text_trainer(os.path.join(self.tmp, "zh_run"), records_dir,
                                   functools.partial(electra.build_electra_pretrainer,
                                                     generator_size=0.5), steps=60,
                                   log_every_steps=20)
    trainer.train()
    self.assertLess(logged[-1]["mlm_loss"], logged[0]["mlm_loss"] - 0.5, logged)
    self.assertTrue(os.path.isfile(os.path.join(trainer.model_dir, "export", "vocab.model")))

  def test_squad_answer_spans_map_back_to_the_exact_original_characters(self):
    with open(self.corpus["zh"], encoding="utf-8") as f:
      zh = next(line.strip() for line in f if "張飛" in line)
    de = GERMAN[1]
    for language, context, answer in (("zh", zh, "張飛"), ("de", de, "Ungeziefer")):
      tokenizer = tokenizer_lib.for_vocab(vocab_lib.load_vocab(self.models[language]), False)
      example = squad_data.SquadExample(
          qid=language, question="?", context=context,
          answers=(squad_data.Answer(answer, context.index(answer)),))
      features = squad_data.convert(
          [example], tokenizer, squad_data.FeatureConfig(max_seq_length=48, doc_stride=16,
                                                         max_query_length=8), do_lower_case=False)
      windows = [w for w, s in enumerate(features.start_positions) if s > 0]
      self.assertNotEmpty(windows, language)
      for w in windows:
        self.assertEqual(squad_data.span_text(example, features, w, features.start_positions[w],
                                              features.end_positions[w]), answer)
      # Every context piece's span is text of the context (no "▁" counted as a character).
      inside = features.token_start_char[0] >= 0
      for start, end in zip(features.token_start_char[0][inside],
                            features.token_end_char[0][inside]):
        self.assertLessEqual(end - start, max(len(w) for w in context.split()))

  def test_tagging_labels_sit_on_each_words_first_spelling_piece(self):
    vocab = vocab_lib.load_vocab(self.models["zh"])
    tokenizer = tokenizer_lib.for_vocab(vocab, False)
    reference = sentencepiece.SentencePieceProcessor(model_file=self.models["zh"])
    words = ("話說", "天下", "大勢", "，", "龘", "分久必合")
    sentence = tagging_data.Sentence(words, tuple("ABCDEF"))
    windows = tagging_data.encode([sentence], tokenizer, 32, {t: i for i, t in enumerate("ABCDEF")})
    ids = windows.inputs["input_word_ids"][0]
    positions = windows.inputs["word_positions"][0][:len(words)]
    self.assertAllEqual(windows.word_labels[0][:len(words)], range(6))
    for word, position in zip(words, positions):
      pieces = [p for p in reference.EncodeAsPieces(word) if p != vocab_lib.WORD_START]
      self.assertEqual(vocab.tokens[ids[position]], pieces[0], word)  # never a bare "▁"

  def test_too_small_a_vocabulary_for_the_characters_is_one_clear_error(self):
    output = os.path.join(self.tmp, "small.model")
    with self.assertRaisesRegex(ValueError, r"the sentencepiece trainer refused: Vocabulary size "
                                r"is smaller than required_chars"):
      build_vocab.build_vocab([self.corpus["zh"]], output, vocab_size=1000, lower_case=False,
                              log=lambda _: None, model_type="sentencepiece_unigram",
                              character_coverage=1.0)
    self.assertFalse(os.path.exists(output))

  def test_lower_casing_is_refused_for_a_sentencepiece_model(self):
    vocab = vocab_lib.load_vocab(self.models["de"])
    with self.assertRaisesRegex(vocab_lib.VocabError, r"de.model is a sentencepiece tokenizer, "
                                r"which normalises .*: pass --nodo_lower_case"):
      vocab.check_casing(True)


@testutil.requires(MULTILINGUAL)
class HuggingFaceTokenizerTest(tf.test.TestCase):

  def test_a_tokenizer_json_with_its_own_special_names(self):
    path = os.path.join(self.get_temp_dir(), "tokenizer.json")
    reference = train_tokenizer_json(path, head("de", self.get_temp_dir(), 2000),
                                     ["<pad>", "<unk>", "<s>", "</s>", "<mask>"])
    vocab = vocab_lib.load_vocab(path)
    self.assertEqual(vocab.kind, "huggingface")
    self.assertEqual(vocab.token_of("mask"), "<mask>")
    self.assertEqual(vocab.cls_id, reference.token_to_id("<s>"))
    ours = tokenizer_lib.for_vocab(vocab, False)
    self.assertEqual(ours.tokenize_to_lists(GERMAN),
                     [reference.encode(t, add_special_tokens=False).ids for t in GERMAN])
    self.assertEqual(ours.tokenize(tf.constant(GERMAN)).to_list(),
                     ours.tokenize_to_lists(GERMAN))
    continuation = vocab.is_continuation()
    starts = [i for i in ours.tokenize_to_lists(["Gregor Samsa"])[0] if not continuation[i]]
    self.assertLen(starts, 2)

  def test_a_tokenizer_without_a_mask_token_is_refused(self):
    path = os.path.join(self.get_temp_dir(), "nomask.json")
    train_tokenizer_json(path, head("de", self.get_temp_dir(), 2000),
                         ["<pad>", "<unk>", "<s>", "</s>"])
    with self.assertRaisesRegex(vocab_lib.VocabError,
                                r"nomask.json has no token for the special role\(s\) mask "
                                r"\(looked for \[MASK\] or <mask>\)"):
      vocab_lib.load_vocab(path)


class BadTokenizerFilesTest(tf.test.TestCase):

  def test_files_that_are_not_what_their_names_say(self):
    for name, message in (("bad.model", r"bad.model is not a SentencePiece model"),
                          ("bad.json", r"bad.json is not a Hugging Face tokenizer.json")):
      path = os.path.join(self.get_temp_dir(), name)
      testutil.write_text(path, "[PAD]\n[UNK]\n")
      with self.assertRaisesRegex(vocab_lib.VocabError, message):
        vocab_lib.load_vocab(path)

  def test_unknown_model_type_and_a_sentencepiece_output_without_model_suffix(self):
    corpus = os.path.join(self.get_temp_dir(), "c.txt")
    testutil.write_text(corpus, "\n".join(testutil.sample_paragraphs(20)) + "\n")
    with self.assertRaisesRegex(ValueError, r"--model_type=bpe must be one of wordpiece, "):
      build_vocab.build_vocab([corpus], os.path.join(self.get_temp_dir(), "v.txt"),
                              model_type="bpe")
    with self.assertRaisesRegex(ValueError, r"--output_file=.*v.txt must end in .model"):
      build_vocab.build_vocab([corpus], os.path.join(self.get_temp_dir(), "v.txt"),
                              model_type="sentencepiece_unigram")
    with self.assertRaisesRegex(ValueError, r"--character_coverage=1.5 must be in \(0, 1\]"):
      build_vocab.build_vocab([corpus], os.path.join(self.get_temp_dir(), "v.model"),
                              model_type="sentencepiece_bpe", character_coverage=1.5)
    self.assertFalse(os.path.exists(os.path.join(self.get_temp_dir(), "v.txt")))
    self.assertFalse(os.path.exists(os.path.join(self.get_temp_dir(), "v.model")))


if __name__ == "__main__":
  tf.test.main()
