"""create_pretraining_data on Apache Beam's DirectRunner, and TFDS input, against the local tool."""
import os
import tempfile
from unittest import mock

import tensorflow as tf
import tensorflow_datasets as tfds

from official_rtd.data import beam_pipeline
from official_rtd.data import corpus as corpus_lib
from official_rtd.data import pretraining_data
from official_rtd.data import records
from official_rtd.data import tfds_corpus
from tests import testutil


def read_shards(output_dir):
  """The sidecar and each shard's serialized records, in file order."""
  sidecar = records.read_sidecar(output_dir)
  return sidecar, [[r.numpy() for r in tf.data.TFRecordDataset(p, sidecar["compression"])]
                   for p in records.shard_paths(output_dir, sidecar)]


class TinyCorpus(tfds.core.GeneratorBasedBuilder):
  """Articles of real paragraphs (one example per document), as TFDS's wikipedia lays them out."""
  VERSION = tfds.core.Version("1.0.0")

  def _info(self):
    return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict(
        {"title": tfds.features.Text(), "text": tfds.features.Text()}))

  def _split_generators(self, dl_manager):
    del dl_manager  # nothing to download
    return {"train": self._generate_examples()}

  def _generate_examples(self):
    paragraphs = testutil.sample_paragraphs(120)
    for i in range(30):
      yield i, {"title": f"article {i}", "text": "\n\n".join(paragraphs[4 * i:4 * i + 4])}
    yield 30, {"title": "empty", "text": "  \n"}


class BeamPipelineTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp(dir=self.get_temp_dir())

  def _config(self, **kwargs):
    values = dict(input_files=(testutil.SAMPLE_CORPUS,), vocab_file=testutil.SAMPLE_VOCAB,
                  output_dir=os.path.join(self.tmp, "local"), max_seq_length=64,
                  max_predictions_per_seq=10, dupe_factor=2, num_shards=3, chunk_bytes=50000,
                  num_workers=1)
    values.update(kwargs)
    return pretraining_data.DataConfig(**values)

  def _run(self, **kwargs):
    config = self._config(**kwargs)
    pretraining_data.create_pretraining_data(config, log=lambda _: None)
    return read_shards(config.output_dir)

  def assert_same_output(self, local, beam):
    (local_sidecar, local_shards), (beam_sidecar, beam_shards) = local, beam
    local_records = sorted(r for shard in local_shards for r in shard)
    self.assertNotEmpty(local_records)
    self.assertEqual(sorted(r for shard in beam_shards for r in shard), local_records)
    self.assertEqual(beam_sidecar["counts"], local_sidecar["counts"])
    self.assertEqual(beam_sidecar["vocab"], local_sidecar["vocab"])

  def test_multi_process_direct_runner_writes_the_local_records(self):
    config = self._config()
    local = self._run()
    beam_dir = os.path.join(self.tmp, "beam")
    temp = tempfile.mkdtemp()  # what the run puts in the temp directory, seen alone
    with mock.patch.object(tempfile, "tempdir", temp):
      beam = self._run(runner="DirectRunner", num_workers=2, gzip=True, output_dir=beam_dir)
    self.assertEqual(os.listdir(temp), [])  # no beam-temp* folder, no workers' log left behind
    self.assert_same_output(local, beam)
    self.assertEqual(beam[0]["flags"]["runner"], "DirectRunner")
    self.assertEqual(beam[0]["counts"]["chunks"], 9)  # 409 kB / 50 kB
    # Shard i holds units i, i+3, i+6 in order (as the module's docstring says).
    processor = pretraining_data.ChunkProcessor(config)
    units = pretraining_data.plan_input(config).units
    expected = [[r for unit in units[i::3] for r in processor.process_unit(unit).records]
                for i in range(3)]
    self.assertEqual(beam[1], expected)
    self.assertCountEqual(os.listdir(beam_dir), beam[0]["shards"] + [records.SIDECAR_NAME])

  def test_failed_pipeline_keeps_the_previous_output(self):
    beam_dir = os.path.join(self.tmp, "beam")
    temp = tempfile.mkdtemp()
    with mock.patch.object(tempfile, "tempdir", temp):
      self._run(runner="DirectRunner", output_dir=beam_dir)  # in one process
    self.assertEqual(os.listdir(temp), [])  # no beam-temp* folder left here either
    before = {n: open(os.path.join(beam_dir, n), "rb").read() for n in os.listdir(beam_dir)}
    bad = testutil.write_text(os.path.join(self.tmp, "bad.txt"),
                              b"good line one\ncaf\xe9 in latin-1\n\nanother good line\n", "wb")
    with mock.patch.object(tempfile, "tempdir", temp):
      with self.assertRaisesRegex(corpus_lib.CorpusError, r"bad.txt:2: invalid UTF-8 .*\(a Beam "
                                  r"worker; its output: .*create_pretraining_data_workers_"):
        self._run(runner="DirectRunner", output_dir=beam_dir, num_workers=2,
                  input_files=(testutil.SAMPLE_CORPUS, bad), overwrite=True)
    [kept] = os.listdir(temp)  # the workers' log, named in the line; nothing else
    self.assertTrue(kept.startswith("create_pretraining_data_workers_"), kept)
    # In one process nothing is redirected: the tool's own warnings print as they come.
    self.assertFalse(beam_pipeline.worker_processes(beam_pipeline.pipeline_options(
        self._config(runner="DirectRunner"))))
    self.assertTrue(beam_pipeline.worker_processes(beam_pipeline.pipeline_options(
        self._config(runner="DirectRunner", num_workers=2))))
    after = {n: open(os.path.join(beam_dir, n), "rb").read() for n in os.listdir(beam_dir)}
    self.assertEqual(before, after)  # nothing added, removed or changed; no staging left

  def test_configuration_errors(self):
    def fails(regex, **kwargs):
      with self.assertRaisesRegex(pretraining_data.ConfigError, regex):
        self._run(**kwargs)

    fails("exactly one of --input_files and --input_tfds", input_tfds="tiny_corpus")
    fails("exactly one of --input_files and --input_tfds", input_files=())
    fails("--beam_pipeline_options needs a Beam --runner", beam_pipeline_options="--x=1")
    fails("give the runner with --runner", runner="DirectRunner",
          beam_pipeline_options="--runner=DataflowRunner")
    # Beam only logs and drops an option it does not know; we refuse it, leaving nothing behind.
    with self.assertRaisesRegex(beam_pipeline.BeamOptionsError,
                                "--beam_pipeline_options: Beam has no option --direct_num_workrs"):
      self._run(runner="DirectRunner", beam_pipeline_options="--direct_num_workrs=2")
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "local")))


class TfdsInputTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.data_dir = tempfile.mkdtemp()
    TinyCorpus(data_dir=cls.data_dir).download_and_prepare()

  def test_local_and_beam_read_the_prepared_dataset(self):
    tmp = self.get_temp_dir()
    base = dict(input_files=(), input_tfds="tiny_corpus", tfds_data_dir=self.data_dir,
                vocab_file=testutil.SAMPLE_VOCAB, max_seq_length=64, max_predictions_per_seq=10,
                dupe_factor=2, num_shards=2, chunk_bytes=4000, num_workers=1)
    outputs = []
    for runner in ("local", "DirectRunner"):
      config = pretraining_data.DataConfig(output_dir=os.path.join(tmp, runner), runner=runner,
                                           **base)
      pretraining_data.create_pretraining_data(config, log=lambda _: None)
      outputs.append(read_shards(config.output_dir))
    BeamPipelineTest.assert_same_output(self, *outputs)
    counts = outputs[0][0]["counts"]
    self.assertEqual(counts["documents"], 30)  # the blank article is no document
    self.assertGreater(counts["chunks"], 3)
    # Every article's paragraphs, in order, are the text of the unmasked records' sources.
    units = tfds_corpus.plan_units("tiny_corpus", self.data_dir, "train", "text", 4000)
    self.assertEqual([(u.start, u.stop) for u in units][0][0], 0)
    self.assertEqual(units[-1].stop, 31)
    lines = [line for unit in units for line in unit.read().lines if line]
    self.assertCountEqual(lines, testutil.sample_paragraphs(120))

  def test_missing_or_wrong_dataset_fails_clearly(self):
    def fails(regex, name="tiny_corpus", **kwargs):
      with self.assertRaisesRegex(corpus_lib.CorpusError, regex):
        tfds_corpus.plan_units(name, kwargs.pop("data_dir", self.data_dir),
                               kwargs.pop("split", "train"), kwargs.pop("text_key", "text"), 1000)

    fails(r"--input_tfds=no_such_corpus: not found in", name="no_such_corpus")
    fails(r"has no split 'validation' \(--tfds_split\); it has train", split="validation")
    fails(r"has no feature 'body' \(--tfds_text_key\); it has text, title", text_key="body")
    # A registered dataset that was never prepared here is not downloaded.
    with self.assertRaisesRegex(corpus_lib.CorpusError, "is not prepared in .* never downloads"):
      tfds_corpus.load_builder("tiny_corpus", tempfile.mkdtemp())


if __name__ == "__main__":
  tf.test.main()
