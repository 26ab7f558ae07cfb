"""export_model and import_checkpoint from the command line."""
import json
import os
import tempfile

import safetensors.numpy
import tensorflow as tf

from official_rtd.tools import export_model
from official_rtd.tools import import_checkpoint
from official_rtd import runs
from official_rtd.data import pretraining_data
from official_rtd.interop import export
from tests import testutil
from tests import tool_server
from tests.interop import test_electra_tf1
from tests.training.test_trainer import make_records


def run(tool, *args):
  return tool_server.run([tool, *args], cwd=testutil.REPO, timeout=600)


def one_error(test, result, tool):
  test.assertEqual(result.returncode, 1, result.stderr[-2000:])
  errors = [l for l in result.stderr.splitlines() if l.startswith(f"{tool}: error:")]
  test.assertLen(errors, 1, result.stderr[-2000:])
  return errors[0]


class ExportModelCliTest(tf.test.TestCase):

  def _pretrain(self, tmp, *gin_params):
    """A tiny ELECTRA run of batch 8 in `<tmp>/run`."""
    records = make_records(os.path.join(tmp, "records"), paragraphs=60)
    result = run("run_pretraining", "--gin_file=gin/models/tiny.gin",
                 "--gin_file=gin/tasks/electra.gin", f"--input_records={records}",
                 f"--model_dir={tmp}/run", "--gin_param=TrainConfig.train_batch_size = 8",
                 *gin_params)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])

  def test_huggingface_and_saved_model(self):
    tmp = tempfile.mkdtemp()
    self._pretrain(tmp, "--gin_param=TrainConfig.num_train_steps = 2",
                   "--gin_param=EncoderConfig.hidden_size = 64")
    result = run("export_model", f"--run_dir={tmp}/run", "--format=huggingface",
                 f"--output_dir={tmp}/hf")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    with open(os.path.join(tmp, "hf", "discriminator", "config.json")) as f:
      config = json.load(f)
    self.assertEqual((config["architectures"], config["hidden_size"], config["vocab_size"]),
                     (["ElectraForPreTraining"], 64, 5883))
    self.assertTrue(os.path.isfile(os.path.join(tmp, "hf", "generator", "model.safetensors")))
    result = run("export_model", f"--run_dir={tmp}/run", "--format=saved_model",
                 f"--output_dir={tmp}/saved")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    loaded = tf.saved_model.load(os.path.join(tmp, "saved"))
    out = loaded.signatures["serving_default"](tf.constant(["Down the rabbit hole."]))
    self.assertEqual(out["sequence_output"].shape[-1], 64)
    self.assertIn("is not a run_pretraining directory",
                  one_error(self, run("export_model", f"--run_dir={tmp}",
                                      f"--output_dir={tmp}/x"), "export_model"))
    # The tool's main in process: an occupied --output_dir (the SavedModel written above) is
    # refused, left as it was; --ema without a kept average is refused.
    before = sorted(os.listdir(f"{tmp}/saved"))
    with self.assertRaisesRegex(ValueError, f"--output_dir={tmp}/saved already holds files"):
      export_model.main(export_model.ExportModelConfig(run_dir=f"{tmp}/run",
                                                       output_dir=f"{tmp}/saved"))
    self.assertEqual(sorted(os.listdir(f"{tmp}/saved")), before)
    with self.assertRaisesRegex(ValueError, r"kept no weight average \(its TrainConfig.ema_decay "
                                "is 0\)"):
      export_model.main(export_model.ExportModelConfig(run_dir=f"{tmp}/run", ema=True,
                                                       output_dir=f"{tmp}/y"))

  def test_ema_exports_the_weight_average(self):
    tmp = tempfile.mkdtemp()
    self._pretrain(tmp, "--gin_param=TrainConfig.num_train_steps = 3",
                   "--gin_param=TrainConfig.ema_decay = 0.5",
                   "--gin_param=EncoderConfig.num_layers = 1")
    result = run("export_model", f"--run_dir={tmp}/run", "--ema", f"--output_dir={tmp}/hf")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    tensors = safetensors.numpy.load_file(os.path.join(tmp, "hf", "discriminator",
                                                       "model.safetensors"))
    table = next(v for k, v in tensors.items() if k.endswith("embeddings.word_embeddings.weight"))
    average = export.load_encoder(os.path.join(tmp, "run", "export_ema"))
    raw = export.load_encoder(os.path.join(tmp, "run", "export"))
    self.assertAllClose(table, average.get_embedding_table())
    self.assertNotAllClose(table, raw.get_embedding_table())


class ImportCheckpointCliTest(tf.test.TestCase):

  def test_tf1_checkpoint_becomes_a_fine_tunable_export(self):
    tmp = tempfile.mkdtemp()
    path = test_electra_tf1.write_tf1_checkpoint(test_electra_tf1.tf1_tensors(),
                                                 os.path.join(tmp, "model.ckpt"))
    vocab = testutil.write_text(os.path.join(tmp, "vocab.txt"), "\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        + [f"w{i}" for i in range(test_electra_tf1.V - 5)]) + "\n")
    args = ["--source=electra_tf1", f"--checkpoint={path}", "--num_attention_heads=2",
            "--generator_num_attention_heads=1", f"--output_dir={tmp}/out"]
    result = run("import_checkpoint", *args, f"--vocab_file={vocab}")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    encoder = export.load_encoder(os.path.join(tmp, "out", "export"))
    self.assertEqual(encoder.config.hidden_size, test_electra_tf1.H)

    # Next to the export: the whole model (generator included) as a run directory ...
    tensors = test_electra_tf1.tf1_tensors()
    model, _ = runs.load_model(os.path.join(tmp, "out"))
    self.assertAllClose(model.masked_lm.bias, tensors["generator_predictions/output_bias"])
    self.assertAllClose(model.discriminator.get_embedding_table(),
                        tensors["electra/embeddings/word_embeddings"])
    self.assertIs(model.generator.embeddings, model.discriminator.embeddings)  # tied source
    self.assertEqual(model.generator.config.hidden_size, test_electra_tf1.HG)
    # ... that run_pretraining continues from (--warm_start_from; here by its deprecated name
    # --init_checkpoint, still accepted) with records in the same vocab.
    corpus = testutil.write_text(os.path.join(tmp, "corpus.txt"), "\n".join(
        " ".join(f"w{(7 * i + j) % 50}" for j in range(12)) for i in range(80)) + "\n")
    pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
        input_files=(corpus,), vocab_file=vocab, output_dir=f"{tmp}/records", max_seq_length=32,
        max_predictions_per_seq=5, dupe_factor=1, num_shards=1, num_workers=1), log=print)
    result = run("run_pretraining", f"--gin_file={tmp}/out/operative_config.gin",
                 "--gin_file=gin/tasks/electra.gin", f"--input_records={tmp}/records",
                 f"--model_dir={tmp}/continued", f"--init_checkpoint={tmp}/out",
                 "--gin_param=TrainConfig.num_train_steps = 2",
                 "--gin_param=TrainConfig.train_batch_size = 4",
                 "--gin_param=TrainConfig.max_seq_length = 32",
                 "--gin_param=TrainConfig.max_predictions_per_seq = 5")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertRegex(result.stderr, r"warm start from .*ckpt-0: \d+ variables restored")
    self.assertIn("run_pretraining: --init_checkpoint is deprecated: use --warm_start_from",
                  result.stderr)
    self.assertNotIn("fresh (allowed)", result.stderr)
    # The tool's main in process (its flags are the config's fields): bad input is refused.
    tf1 = dict(source="electra_tf1", checkpoint=path, num_attention_heads=2,
               generator_num_attention_heads=1)
    small_vocab = testutil.write_text(os.path.join(tmp, "small.txt"),
                                      "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nw0\n")
    with self.assertRaisesRegex(ValueError, "has 6 tokens but the checkpoint's embeddings have "
                                "60 rows"):
      import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
          output_dir=f"{tmp}/o2", vocab_file=small_vocab, **tf1))
    # An occupied --output_dir (here a run that continued pre-training) is never overwritten ...
    before = {os.path.join(r, n): open(os.path.join(r, n), "rb").read()
              for r, _, names in os.walk(f"{tmp}/continued") for n in names}
    with self.assertRaisesRegex(ValueError, f"--output_dir={tmp}/continued already holds files"):
      import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
          output_dir=f"{tmp}/continued", vocab_file=vocab, **tf1))
    self.assertEqual(before, {os.path.join(r, n): open(os.path.join(r, n), "rb").read()
                              for r, _, names in os.walk(f"{tmp}/continued") for n in names})
    # ... unless --overwrite, which moves it aside.
    import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
        output_dir=f"{tmp}/continued", vocab_file=vocab, overwrite=True, **tf1))
    aside = [d for d in os.listdir(tmp) if d.startswith("continued.replaced-")]
    self.assertLen(aside, 1)
    self.assertEqual(sorted(os.listdir(os.path.join(tmp, aside[0]))),
                     sorted({os.path.relpath(p, f"{tmp}/continued").split(os.sep)[0]
                             for p in before}))
    with self.assertRaisesRegex(ValueError, "--source=model_garden needs --gin_file"):
      import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
          source="model_garden", checkpoint=path, vocab_file=vocab, output_dir=f"{tmp}/mg"))

  def test_a_checkpoint_of_other_sizes_fails_in_one_line(self):
    """Model Garden's checkpoint of other sizes than the gin file's: our line is the last one,
    without TensorFlow's per-value restore warnings (243 lines, each twice, after it before)."""
    from official_rtd.interop import model_garden  # pylint: disable=g-import-not-at-top
    from tests.interop.test_model_garden import CONFIG  # pylint: disable=g-import-not-at-top
    tmp = tempfile.mkdtemp()
    mg = model_garden.model_garden_electra(CONFIG, generator_size=0.5)
    mg(model_garden._dummy_batch())  # pylint: disable=protected-access
    path = tf.train.Checkpoint(model=mg).write(os.path.join(tmp, "ckpt"))
    vocab = testutil.write_text(os.path.join(tmp, "vocab.txt"), "\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(75)]) + "\n")
    result = run("import_checkpoint", "--source=model_garden", f"--checkpoint={path}",
                 f"--vocab_file={vocab}", "--gin_file=gin/models/tiny.gin",
                 f"--output_dir={tmp}/out")
    error = one_error(self, result, "import_checkpoint")
    self.assertIn("does not fit a Model Garden ELECTRA of these sizes", error)
    self.assertEqual(result.stderr.strip().splitlines()[-1], error)
    self.assertNotIn("could not be found", result.stderr)
    self.assertFalse(os.path.exists(f"{tmp}/out"))

  def test_huggingface_directories_import(self):
    from official_rtd.data import tokenizer as tokenizer_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.interop import huggingface  # pylint: disable=g-import-not-at-top
    from tests.data import test_other_languages  # pylint: disable=g-import-not-at-top
    from tests.interop import test_huggingface  # pylint: disable=g-import-not-at-top
    tmp = tempfile.mkdtemp()
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    model = test_huggingface.tiny_electra(vocab)
    huggingface.export_huggingface(model, vocab, f"{tmp}/hf")
    result = run("import_checkpoint", "--source=huggingface", f"--checkpoint={tmp}/hf/discriminator",
                 f"--generator={tmp}/hf/generator", f"--output_dir={tmp}/out")
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    back, _ = runs.load_model(f"{tmp}/out")
    for part in ("discriminator", "generator", "masked_lm", "rtd_head"):
      for v, w in zip(getattr(model, part).weights, getattr(back, part).weights):
        self.assertAllEqual(v, w, msg=v.name)
    self.assertEqual(export.load_encoder(f"{tmp}/out/export").config, model.discriminator.config)
    # A checkpoint whose only tokenizer file is a tokenizer.json (German Unigram): the export
    # keeps it, with the same ids.
    test_other_languages.train_tokenizer_json(f"{tmp}/tokenizer.json",
                                              test_other_languages.head("de", tmp, 500),
                                              ["<pad>", "<unk>", "<s>", "</s>", "<mask>"])
    json_vocab = vocab_lib.load_vocab(f"{tmp}/tokenizer.json")
    huggingface.export_huggingface(test_huggingface.tiny_electra(json_vocab), json_vocab,
                                   f"{tmp}/hf_json", do_lower_case=False)
    import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
        source="huggingface", checkpoint=f"{tmp}/hf_json/discriminator",
        output_dir=f"{tmp}/out_json"))
    imported = vocab_lib.load_vocab(vocab_lib.find_vocab(f"{tmp}/out_json/export"))
    self.assertEqual(imported.kind, "huggingface")
    texts = test_other_languages.GERMAN
    self.assertEqual(tokenizer_lib.for_vocab(imported, False).tokenize_to_lists(texts),
                     tokenizer_lib.for_vocab(json_vocab, False).tokenize_to_lists(texts))
    self.assertFalse(export.Export(f"{tmp}/out_json/export").do_lower_case)
    with self.assertRaisesRegex(ValueError, "--generator is for --source=huggingface"):
      import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
          source="electra_tf1", checkpoint=f"{tmp}/x", generator=f"{tmp}/hf/generator",
          output_dir=f"{tmp}/y"))
    with self.assertRaisesRegex(ValueError, "cannot read " + f"{tmp}/out/config.json"):
      import_checkpoint.main(import_checkpoint.ImportCheckpointConfig(
          source="huggingface", checkpoint=f"{tmp}/out", output_dir=f"{tmp}/z"))


if __name__ == "__main__":
  tf.test.main()
