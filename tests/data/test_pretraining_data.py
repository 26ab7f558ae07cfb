"""create_pretraining_data end to end on real paragraphs of the shipped Gutenberg sample."""
import collections
import glob
import json
import os
import tempfile
import unicodedata

import tensorflow as tf

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import pretraining_data
from official_rtd.data import records
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from tests import testutil


def read_records(output_dir):
  sidecar = records.read_sidecar(output_dir)
  spec = records.feature_spec(sidecar["max_seq_length"], sidecar["max_predictions_per_seq"])
  rows = []
  for path in records.shard_paths(output_dir, sidecar):
    for serialized in tf.data.TFRecordDataset(path, compression_type=sidecar["compression"]):
      rows.append({k: v.numpy() for k, v in tf.io.parse_single_example(serialized, spec).items()})
  return sidecar, rows


def unmask(row):
  ids = row["input_word_ids"].copy()
  n = int(row["masked_lm_weights"].sum())
  ids[row["masked_lm_positions"][:n]] = row["masked_lm_ids"][:n]
  return ids


class CreatePretrainingDataTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    self.vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    paragraphs = testutil.sample_paragraphs(40)
    # Two documents of real paragraphs.
    self.documents = [paragraphs[:25], paragraphs[25:]]
    self.corpus = testutil.write_text(
        os.path.join(self.tmp, "corpus.txt"),
        "\n\n".join("\n".join(doc) for doc in self.documents) + "\n")

  def _config(self, **kwargs):
    values = dict(input_files=(self.corpus,), vocab_file=testutil.SAMPLE_VOCAB,
                  output_dir=os.path.join(self.tmp, "out"), max_seq_length=64, dupe_factor=0,
                  num_shards=1, num_workers=1)
    values.update(kwargs)
    return pretraining_data.DataConfig(**values)

  def _run(self, **kwargs):
    config = self._config(**kwargs)
    pretraining_data.create_pretraining_data(config, log=lambda _: None)
    return read_records(config.output_dir)

  def test_round_trip_tokens_and_text(self):
    sidecar, rows = self._run()
    tokenizer = tokenizer_lib.WordPieceTokenizer(self.vocab)
    expected = [t for doc in self.documents for ids in tokenizer.tokenize_to_lists(doc) for t in ids]
    special = self.vocab.is_special()
    got = [t for row in rows for t in row["input_word_ids"] if not special[t]]
    self.assertEqual(got, expected)
    self.assertNotIn(self.vocab.unk_id, expected)
    self.assertEqual(sidecar["counts"]["tokens"], len(expected))
    self.assertEqual(sidecar["counts"]["tokens_truncated"], 0)
    self.assertEqual(sidecar["counts"]["documents"], 2)
    # The word pieces spell the (lower-cased, accent-stripped) input text.
    text = "".join(self.vocab.tokens[t].removeprefix("##") for t in got)
    normalized = unicodedata.normalize("NFD", " ".join(" ".join(d) for d in self.documents).lower())
    normalized = "".join(c for c in normalized if unicodedata.category(c) != "Mn" and not c.isspace())
    self.assertEqual(text, normalized)
    # Layout: [CLS] A [SEP] (B [SEP]) [PAD]...
    for row in rows:
      ids, mask, types = row["input_word_ids"], row["input_mask"], row["input_type_ids"]
      n = int(mask.sum())
      self.assertEqual(ids[0], self.vocab.cls_id)
      self.assertEqual(ids[n - 1], self.vocab.sep_id)
      self.assertTrue((ids[n:] == self.vocab.pad_id).all())
      self.assertEqual((ids[:n] == self.vocab.sep_id).sum(), 1 + int(types.any()))
    self.assertTrue(any(row["input_type_ids"].any() for row in rows))
    # Examples never mix documents: the first document's pieces fill whole examples.
    n_first = sum(len(ids) for ids in tokenizer.tokenize_to_lists(self.documents[0]))
    boundary, count = [], 0
    for row in rows:
      count += int((~special[row["input_word_ids"]]).sum())
      boundary.append(count)
    self.assertIn(n_first, boundary)

  def test_sentence_examples_equal_the_splitters_own_sentences(self):
    """--packing=sentences, one per example: each record is `[CLS] s [SEP]` for exactly the
    sentences BlingFire itself splits the paragraphs into, in order, on real text."""
    import blingfire  # pylint: disable=g-import-not-at-top
    tokenizer = tokenizer_lib.for_vocab(self.vocab, True, "fast")
    sentences = [s for doc in self.documents for p in doc
                 for s in blingfire.text_to_sentences(p.strip()).split("\n") if s.strip()]
    expected = [pieces for pieces in tokenizer.tokenize_to_lists(sentences) if pieces]
    self.assertGreater(len(expected), 2 * sum(len(d) for d in self.documents))  # really split
    self.assertLess(max(map(len, expected)), 254)  # none is cut at this length
    sidecar, rows = self._run(packing="sentences", sentences_per_example=1, max_seq_length=256)
    got = [list(row["input_word_ids"][1:int(row["input_mask"].sum()) - 1]) for row in rows]
    self.assertEqual(got, expected)
    self.assertTrue(all(row["input_type_ids"].sum() == 0 for row in rows))  # one segment
    self.assertEqual((sidecar["counts"]["sentences"], sidecar["counts"]["sentences_cut"]),
                     (len(expected), 0))
    # Examples of 8 positions hold 6 pieces: every longer sentence is cut, and said so.
    logs = []
    config = self._config(packing="sentences", sentences_per_example=1, max_seq_length=8,
                          max_predictions_per_seq=2, output_dir=os.path.join(self.tmp, "short"))
    pretraining_data.create_pretraining_data(config, log=logs.append)
    sidecar, _ = read_records(config.output_dir)
    long_ones = sum(len(pieces) > 6 for pieces in expected)
    self.assertGreater(long_ones, 0)
    self.assertEqual((sidecar["counts"]["sentences"], sidecar["counts"]["sentences_cut"]),
                     (len(expected), long_ones))
    self.assertIn(f"{long_ones} of {len(expected)} sentences", logs[-1])
    self.assertIn("were longer than --max_seq_length=8 minus [CLS] and [SEP]", logs[-1])

  def test_static_masks_statistics(self):
    dupes = 10
    sidecar, rows = self._run(dupe_factor=dupes, mask_strategy="bert", max_predictions_per_seq=12)
    _, unmasked_rows = self._run(dupe_factor=0, output_dir=os.path.join(self.tmp, "plain"))
    # Each unique example appears exactly `dupes` times, each copy masked differently.
    originals = collections.Counter(unmask(r).tobytes() for r in rows)
    self.assertEqual(set(originals.values()), {dupes})
    self.assertEqual(set(originals), {r["input_word_ids"].tobytes() for r in unmasked_rows})
    special = self.vocab.is_special()
    # Copies of an example long enough for collisions to be unlikely are all masked differently
    # (a 5-token example can repeat a mask by chance).
    variants = collections.defaultdict(set)
    for r in rows:
      if (~special[unmask(r)]).sum() >= 20:
        variants[unmask(r).tobytes()].add(r["input_word_ids"].tobytes())
    self.assertGreater(len(variants), 10)
    self.assertEqual({len(v) for v in variants.values()}, {dupes})
    n_cand = n_masked = n_mask_token = n_kept = 0
    for row in rows:
      original = unmask(row)
      n = int(row["masked_lm_weights"].sum())
      positions = row["masked_lm_positions"][:n]
      self.assertFalse(special[original[positions]].any(), "a special token was masked")
      n_cand += int((~special[original]).sum())
      n_masked += n
      n_mask_token += int((row["input_word_ids"][positions] == self.vocab.mask_id).sum())
      n_kept += int((row["input_word_ids"][positions] == original[positions]).sum())
    self.assertAllClose(n_masked / n_cand, 0.15, atol=0.01)
    self.assertAllClose(sidecar["counts"]["mask_rate"], n_masked / n_cand)
    self.assertEqual(sidecar["counts"]["masked_positions"], n_masked)
    self.assertAllClose([n_mask_token / n_masked, n_kept / n_masked], [0.8, 0.1], atol=0.03)

  def test_deterministic_for_seed_and_worker_count(self):
    base = dict(dupe_factor=3, num_shards=2, chunk_bytes=2000)
    outputs = {}
    for name, extra in [("a", {}), ("b", {}), ("workers", {"num_workers": 2}),
                        ("other_seed", {"seed": 7})]:
      output_dir = os.path.join(self.tmp, name)
      pretraining_data.create_pretraining_data(self._config(output_dir=output_dir, **base, **extra),
                                               log=lambda _: None)
      outputs[name] = [open(p, "rb").read()
                       for p in sorted(glob.glob(os.path.join(output_dir, "*.tfrecord")))]
    self.assertEqual(outputs["a"], outputs["b"])
    self.assertEqual(outputs["a"], outputs["workers"])
    self.assertNotEqual(outputs["a"], outputs["other_seed"])

  def test_shuffled_chunks_mix_the_sources_from_the_first_records(self):
    """Two files of different text: with `shuffle_chunks` (the default) the first half of the
    records, the part a run reading half an epoch sees, holds text of both; in corpus order it
    holds the first file's only. Either way the same records are written."""
    paragraphs = testutil.sample_paragraphs(60)
    sources = {"a": paragraphs[:30], "b": paragraphs[30:]}
    files = tuple(testutil.write_text(os.path.join(self.tmp, f"{name}.txt"), "\n\n".join(lines))
                  for name, lines in sources.items())  # one paragraph per document
    tokenizer = tokenizer_lib.WordPieceTokenizer(self.vocab)
    streams = {name: " " + " ".join(str(t) for ids in tokenizer.tokenize_to_lists(lines)
                                    for t in ids) + " " for name, lines in sources.items()}
    special = self.vocab.is_special()

    def source_of(row):
      text = " " + " ".join(str(t) for t in row["input_word_ids"] if not special[t]) + " "
      found = [name for name, stream in streams.items() if text in stream]
      self.assertLen(found, 1)
      return found[0]

    order, written = {}, {}
    for shuffle in (True, False):
      _, rows = self._run(input_files=files, chunk_bytes=1500, shuffle_chunks=shuffle,
                          output_dir=os.path.join(self.tmp, f"shuffle_{shuffle}"))
      order[shuffle] = [source_of(row) for row in rows]
      written[shuffle] = sorted(tuple(row["input_word_ids"]) for row in rows)
      self.assertGreater(order[shuffle].count("b"), 10)
    first_half = len(order[False]) // 2
    self.assertEqual(set(order[False][:first_half]), {"a"})
    self.assertEqual(set(order[True][:first_half]), {"a", "b"})
    self.assertEqual(written[True], written[False])

  def test_gzip_and_electra_packing(self):
    sidecar, rows = self._run(gzip=True, packing="electra")
    self.assertEqual(sidecar["compression"], "GZIP")
    self.assertTrue(sidecar["shards"][0].endswith(".tfrecord.gz"))
    self.assertGreater(sidecar["counts"]["tokens_truncated"], 0)
    self.assertLen(rows, sidecar["counts"]["examples"])

  def test_bad_inputs_fail_before_writing(self):
    def fails(regex, error=ValueError, **kwargs):
      with self.assertRaisesRegex(error, regex):
        pretraining_data.create_pretraining_data(self._config(**kwargs), log=lambda _: None)

    fails("matches no file", corpus_lib.CorpusError,
          input_files=(os.path.join(self.tmp, "nope*.txt"),))
    fails("does not exist", corpus_lib.CorpusError, input_files=(os.path.join(self.tmp, "x.txt"),))
    fails(r"--sentences_per_example=-1 must be >= 0", packing="sentences",
          sentences_per_example=-1)
    fails(r"--sentences_per_example=3 applies only with --packing=sentences \(got "
          r"--packing=fill\)", pretraining_data.ConfigError, sentences_per_example=3)
    empty = testutil.write_text(os.path.join(self.tmp, "empty.txt"), "\n\n   \n")
    fails("the corpus is empty", corpus_lib.CorpusError, input_files=(empty,))
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))  # no empty directory left
    bad_vocab = testutil.write_text(os.path.join(self.tmp, "vocab.txt"), "a\nb\n")
    fails(r"lacks the special token\(s\) \[PAD\] \[UNK\] \[CLS\] \[SEP\] \[MASK\]",
          vocab_lib.VocabError, vocab_file=bad_vocab)
    fails(r"--max_seq_length=4 is too small", pretraining_data.ConfigError, max_seq_length=4)
    fails(r"--max_predictions_per_seq=80 must be in \[1, --max_seq_length=64\]",
          pretraining_data.ConfigError, max_predictions_per_seq=80)
    fails(r"--mask_strategy=random must be one of", pretraining_data.ConfigError,
          mask_strategy="random")
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "out", records.SIDECAR_NAME)))

  def test_decode_errors_name_file_and_line_and_keep_old_output(self):
    sidecar, _ = self._run()
    out = os.path.join(self.tmp, "out")
    before = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    bad = testutil.write_text(os.path.join(self.tmp, "bad.txt"),
                              b"good line one\ncaf\xe9 in latin-1\n\nanother good line\n", "wb")
    with self.assertRaisesRegex(corpus_lib.CorpusError, r"bad.txt:2: invalid UTF-8"):
      pretraining_data.create_pretraining_data(
          self._config(input_files=(self.corpus, bad), num_shards=3, overwrite=True),
          log=lambda _: None)
    after = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    self.assertEqual(before, after)  # nothing added, removed or changed; no temp dir left
    skipped, rows = self._run(input_files=(self.corpus, bad), on_decode_error="skip",
                              output_dir=os.path.join(self.tmp, "skip"))
    self.assertEqual(skipped["counts"]["lines_skipped"], 1)
    self.assertEqual(skipped["counts"]["documents"], 4)
    self.assertGreater(skipped["counts"]["tokens"], sidecar["counts"]["tokens"])

  def test_rerun_replaces_stale_shards(self):
    self._run(num_shards=3)
    sidecar, _ = self._run(num_shards=2, overwrite=True)
    out = os.path.join(self.tmp, "out")
    self.assertCountEqual(os.listdir(out), sidecar["shards"] + [records.SIDECAR_NAME])
    with open(os.path.join(out, records.SIDECAR_NAME)) as f:
      self.assertEqual(json.load(f)["flags"]["num_shards"], 2)


  def test_records_of_other_settings_are_not_replaced_without_overwrite(self):
    self._run(num_shards=2)
    out = os.path.join(self.tmp, "out")
    before = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    with self.assertRaisesRegex(
        ValueError, r"--output_dir=.*/out holds records made with other settings \(--max_seq_length "
        r"64 → 32\): nothing was written; give a new --output_dir, or --overwrite to replace them"):
      self._run(num_shards=2, max_seq_length=32)
    other_vocab = testutil.write_text(os.path.join(self.tmp, "vocab.txt"), "".join(
        f"{t}\n" for t in self.vocab.tokens[:-1]))  # the same tokens but the last
    with self.assertRaisesRegex(ValueError, r"\(--vocab_file .* → .*vocab.txt'; the vocabulary "):
      self._run(num_shards=2, vocab_file=other_vocab)
    after = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    self.assertEqual(before, after)
    self._run(num_shards=2, num_workers=2)  # the same records (spread otherwise): redone
    sidecar, _ = self._run(num_shards=2, max_seq_length=32, overwrite=True)
    self.assertEqual(sidecar["max_seq_length"], 32)


if __name__ == "__main__":
  tf.test.main()
