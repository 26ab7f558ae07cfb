"""Every gin task file composes with a model file and builds a working model, and every value a
paper's table states is that table's value."""
import glob
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from official_rtd import runs
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import base
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import optimization
from official_rtd.training import precision
from official_rtd.training import trainer as trainer_lib
from tests import testutil

pytest_approx = pytest.approx
TASKS = sorted(glob.glob(os.path.join(testutil.REPO, "gin", "tasks", "*.gin")))
MODELS = sorted(glob.glob(os.path.join(testutil.REPO, "gin", "models", "*.gin")))


class GinFilesTest(tf.test.TestCase):

  def test_every_task_builds_and_runs(self):
    self.assertGreaterEqual(len(TASKS), 9)
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    for task in TASKS:
      if task.endswith("electra_two_stage.gin"):
        continue  # needs a stage-1 run: tests/modeling/test_training_algorithms.py
      gin.clear_config()
      runs.parse_gin(["gin/models/tiny.gin", task],
                                ["EncoderConfig.num_layers = 2", "EncoderConfig.hidden_size = 32",
                                 "EncoderConfig.intermediate_size = 64"])
      for mixed_precision in ("float32", "bfloat16"):
        with precision.policy(mixed_precision):
          model = registry.pretraining_model(EncoderConfig(vocab_size=vocab.size),
                                                vocab=vocab,
                                                token_counts=lambda: np.arange(vocab.size))
          ids = tf.constant([[vocab.cls_id, 10, 11, 12, 13, 14, vocab.sep_id, vocab.pad_id]])
          batch = {"input_word_ids": ids, "input_mask": tf.cast(ids != vocab.pad_id, tf.int32),
                   "input_type_ids": tf.zeros_like(ids),
                   "masked_lm_positions": tf.constant([[2, 4]]),
                   "masked_lm_ids": tf.constant([[11, 13]]),
                   "masked_lm_weights": tf.constant([[1.0, 1.0]])}
          with tf.GradientTape() as tape:
            losses = model.compute_losses(batch, model(batch, training=True))
          grads = tape.gradient(losses["total_loss"].value, model.trainable_variables)
        where = f"{task} ({mixed_precision})"
        self.assertTrue(bool(tf.math.is_finite(losses["total_loss"].value)), where)
        self.assertEqual(losses["total_loss"].value.dtype, tf.float32, where)
        self.assertTrue(all(bool(tf.reduce_all(tf.math.is_finite(g)))
                            for g in grads if g is not None and not isinstance(g, tf.IndexedSlices)),
                        where)
      self.assertGreater(model.train_flops_per_example(8, 2), 0, task)
      self.assertIsNotNone(model.exported_encoder, task)

  def test_the_one_machine_electra_recipe_parses_and_builds_with_its_values(self):
    """`gin/recipes/electra_one_machine.gin` as the README composes it: ELECTRA whose
    discriminator is a BERT on the masked input until step 3,000, with its masked LM's weight
    falling from 1 at step 0 to 0 at step 6,000, on the data recipe's T5 relative positions."""
    runs.parse_gin(["gin/models/one_machine.gin", "gin/recipes/electra_one_machine.gin",
                    "gin/recipes/one_machine_sentences.gin"], [])
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    model = registry.pretraining_model(EncoderConfig(vocab_size=vocab.size), vocab=vocab)
    self.assertEqual(type(model).__name__, "ElectraPretrainer")
    self.assertEqual((model.rtd_start_step, model.discriminator_mlm_steps,
                      model.discriminator_mlm_weight, model.masked_warmup, model.rtd_weight),
                     (3000, 6000, 1.0, True, 50.0))
    self.assertEqual(model.detection_start_step(), 3000)
    self.assertEqual(model.flops_change_steps(), (6000,))
    self.assertEqual(model.discriminator.config.position_embedding, "t5_relative")
    self.assertEqual((model.discriminator.config.num_layers, model.discriminator.config.hidden_size),
                     (4, 128))
    train = trainer_lib.TrainConfig()
    self.assertEqual((train.train_batch_size, train.max_seq_length), (16, 64))
    outputs = model(base.dummy_inputs(64, 20), training=False)
    self.assertEqual(outputs["discriminator_mlm_logits"].shape, [1, 20, vocab.size])

  def test_the_warmup_composes_after_an_electra_variant_keeping_its_settings(self):
    """`gin/recipes/masked_lm_warmup.gin` after ALE or GDES: the variant's own values stay
    (the full recipe, which includes `tasks/electra.gin`, would reset them) and the warm-up's
    four values are bound."""
    for task, key, value in (("ale", "temperature", 0.8), ("electra_gdes", "embedding_sharing",
                                                           "gdes")):
      gin.clear_config()
      runs.parse_gin(["gin/models/one_machine.gin", f"gin/tasks/{task}.gin",
                      "gin/recipes/masked_lm_warmup.gin",
                      "gin/recipes/one_machine_sentences.gin"], [], log=lambda _: None)
      self.assertEqual(gin.query_parameter(f"build_electra_pretrainer.{key}"), value, task)
      self.assertEqual([gin.query_parameter(f"masked_lm_warmup.{name}") for name in (
          "rtd_start_step", "discriminator_mlm_steps", "discriminator_mlm_weight",
          "masked_warmup")], [3000, 6000, 1.0, True], task)
    gin.clear_config()
    with self.assertRaisesRegex(ValueError, "re-binds build_electra_pretrainer.temperature = 0.8, "
                                            "which the recipe"):
      runs.parse_gin(["gin/models/one_machine.gin", "gin/recipes/electra_one_machine.gin",
                      "gin/tasks/ale.gin"], [], log=lambda _: None)
    gin.clear_config()

  def test_electra_tt_without_its_detector_loss(self):
    """`gin/recipes/no_detector.gin` after ELECTRA-TT and the warm-up: at step 3,500 (detection
    on, the discriminator's masked LM still weighted) the detector head gets no gradient, which
    it gets without the file; the discriminator still learns from its masked LM, the generator
    from its cloze loss."""
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    ids = tf.constant([[vocab.cls_id, 10, 11, 12, 13, 14, 15, vocab.sep_id]])
    batch = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
             "input_type_ids": tf.zeros_like(ids), "masked_lm_positions": tf.constant([[2, 4]]),
             "masked_lm_ids": tf.constant([[11, 13]]), "masked_lm_weights": tf.ones([1, 2])}
    for control in (True, False):
      gin.clear_config()
      runs.parse_gin(["gin/models/one_machine.gin", "gin/tasks/electra_tt.gin",
                      "gin/recipes/masked_lm_warmup.gin"]
                     + ["gin/recipes/no_detector.gin"] * control
                     + ["gin/recipes/one_machine_sentences.gin"], [], log=lambda _: None)
      model = registry.pretraining_model(EncoderConfig(vocab_size=vocab.size), vocab=vocab)
      self.assertEqual(model.rtd_weight, 0.0 if control else 50.0)
      model.bind_step(lambda: tf.constant(3500, tf.int64))
      with tf.GradientTape() as tape:
        losses = model.compute_losses(batch, model(batch, training=True))
      grads = dict(zip([v.name for v in model.trainable_variables],
                       tape.gradient(losses["total_loss"].value, model.trainable_variables)))
      norm = lambda part: sum(float(tf.norm(tf.convert_to_tensor(g))) for name, g in grads.items()
                              if part in name and g is not None)  # pylint: disable=cell-var-from-loop
      self.assertEqual(norm("rtd_head") == 0.0, control)
      self.assertGreater(norm("discriminator/transformer"), 0.0)  # its masked LM
      self.assertGreater(norm("two_tower"), 0.0)
    gin.clear_config()

  def test_amos_on_the_four_layer_model_with_the_warmup(self):
    """`gin/recipes/amos_four_layers.gin` after `tasks/amos.gin` on the one-machine model: a
    3-layer generator (heads after its layers 1, 2, 3) and the warm-up's values."""
    runs.parse_gin(["gin/models/one_machine.gin", "gin/tasks/amos.gin",
                    "gin/recipes/amos_four_layers.gin", "gin/recipes/masked_lm_warmup.gin",
                    "gin/recipes/one_machine_sentences.gin"], [], log=lambda _: None)
    model = registry.pretraining_model(EncoderConfig(vocab_size=64))
    self.assertEqual(model.mlm_layers, (1, 2, 3))
    self.assertLen(model.generator.transformer_layers, 3)
    self.assertLen(model.discriminator.transformer_layers, 4)
    self.assertEqual((model.rtd_start_step, model.discriminator_mlm_steps, model.masked_warmup),
                     (3000, 6000, True))

  def test_script_with_its_warmup_on_the_sentences_recipe(self):
    runs.parse_gin(["gin/models/one_machine.gin", "gin/tasks/script.gin",
                    "gin/recipes/script_warmup.gin", "gin/recipes/one_machine_sentences.gin"], [],
                   log=lambda _: None)
    model = registry.pretraining_model(EncoderConfig(vocab_size=64))
    self.assertEqual((model.critic_start_step, model.detection_start_step()), (3000, 3000))

  def test_every_model_file_parses(self):
    for model_file in MODELS:
      gin.clear_config()
      runs.parse_gin([model_file, "gin/tasks/electra.gin"], [])
      self.assertGreater(trainer_lib.TrainConfig().train_batch_size, 0, model_file)


def _sizes(layers, hidden, ffn, heads, embedding):
  return {"num_layers": layers, "hidden_size": hidden, "intermediate_size": ffn,
          "num_attention_heads": heads, "embedding_size": embedding}


_ADAM = {"epsilon": 1e-6, "beta_1": 0.9, "beta_2": 0.999, "weight_decay_rate": 0.01,
         "warmup_steps": 10000}
_DROPOUT = {"dropout_rate": 0.1, "attention_dropout_rate": 0.1}

# (model file, task file, where the values are stated, {name: value}). Names are fields of
# EncoderConfig / TrainConfig / OptimizerConfig, or gin bindings `configurable.parameter`.
PAPER_TABLES = [
    ("small.gin", "electra.gin", "dissertation Table 5.1, Small", {
        **_sizes(12, 256, 1024, 4, 128), **_ADAM, **_DROPOUT,
        "build_electra_pretrainer.generator_size": 0.25, "dynamic_masking.mask_prob": 0.15,
        "learning_rate": 5e-4, "train_batch_size": 128, "num_train_steps": 1_000_000}),
    ("base.gin", "electra.gin", "dissertation Table 5.1, Base", {
        **_sizes(12, 768, 3072, 12, 768), **_ADAM, **_DROPOUT,
        "build_electra_pretrainer.generator_size": pytest_approx(1 / 3),
        "dynamic_masking.mask_prob": 0.15, "learning_rate": 2e-4, "train_batch_size": 256,
        "num_train_steps": 766_000}),
    ("large.gin", "electra.gin", "dissertation Table 5.1, Large", {
        **_sizes(24, 1024, 4096, 16, 1024), **_ADAM, **_DROPOUT,
        "build_electra_pretrainer.generator_size": 0.25, "dynamic_masking.mask_prob": 0.25,
        "learning_rate": 2e-4, "train_batch_size": 2048, "num_train_steps": 400_000}),
    ("small.gin", "script.gin", "SCRIPT Table 4, Small", {
        **_sizes(12, 256, 1024, 4, 128), **_ADAM, **_DROPOUT, "dynamic_masking.mask_prob": 0.15,
        "learning_rate": 5e-4, "train_batch_size": 128, "build_script_pretrainer.disc_weight": 50.0}),
    ("base.gin", "script.gin", "SCRIPT Table 4, Base", {
        **_sizes(12, 768, 3072, 12, 768), **_ADAM, **_DROPOUT, "dynamic_masking.mask_prob": 0.15,
        "learning_rate": 2e-4, "train_batch_size": 256}),
    ("teams_small.gin", "teams.gin", "TEAMS Table 5, Small (and §4.1: sequence length 512)", {
        **_sizes(12, 256, 1024, 4, 128), **_ADAM, **_DROPOUT,
        "build_teams_pretrainer.generator_layers": 0.5, "dynamic_masking.mask_prob": 0.15,
        "learning_rate": 5e-4, "train_batch_size": 256, "num_train_steps": 500_000,
        "max_seq_length": 512, "build_teams_pretrainer.rtd_weight": 5.0,
        "build_teams_pretrainer.mws_weight": 2.0}),
    ("teams_small.gin", "teams_only_mws.gin", "TEAMS Table 2, Only MWS", {
        "build_teams_pretrainer.rtd_weight": 0.0, "build_teams_pretrainer.mws_weight": 2.0}),
    ("amos_base.gin", "amos.gin", "AMOS Table 3, base", {
        **_sizes(12, 768, 3072, 12, 768), **_DROPOUT, "num_train_steps": 125_000,
        "learning_rate": 5e-4, "train_batch_size": 2048, "warmup_steps": 10000,
        "max_seq_length": 512, "epsilon": 1e-6, "beta_1": 0.9, "beta_2": 0.98, "clip_norm": 2.0,
        "build_amos_pretrainer.temperature": 0.3, "build_amos_pretrainer.rtd_weight": 50.0}),
    ("ale_small.gin", "ale.gin", "Shao Table V, ALE_small (and §IV.B: T = 0.8)", {
        **_sizes(12, 256, 1024, 4, 128), **_ADAM, **_DROPOUT, "share_layers": True,
        "optimizer": "lamb", "build_electra_pretrainer.generator_size": 0.25,
        "dynamic_masking.mask_prob": 0.15, "max_seq_length": 128, "learning_rate": 5e-4,
        "train_batch_size": 1024, "num_train_steps": 162_000,
        "build_electra_pretrainer.temperature": 0.8}),
    ("shao_electra_small.gin", "electra.gin", "Shao Table V, ELECTRA_small", {
        **_sizes(12, 256, 1024, 4, 128), **_ADAM, **_DROPOUT, "share_layers": False,
        "optimizer": "lamb", "build_electra_pretrainer.generator_size": 0.25,
        "dynamic_masking.mask_prob": 0.15, "max_seq_length": 128, "learning_rate": 5e-4,
        "train_batch_size": 1024, "num_train_steps": 125_000}),
    ("shao_bert_small.gin", "mlm.gin", "Shao Table V, BERT_small", {
        **_sizes(12, 256, 1024, 4, 128), **_ADAM, **_DROPOUT, "share_layers": False,
        "optimizer": "lamb", "dynamic_masking.mask_prob": 0.15, "max_seq_length": 128,
        "learning_rate": 5e-4, "train_batch_size": 1024, "num_train_steps": 163_000}),
]


def query(binding):
  """A gin binding's value, with a macro (`%MASK_PROB`) resolved."""
  value = gin.query_parameter(binding)
  if isinstance(value, gin.config.ConfigurableReference) and value.scoped_selector.endswith(
      "/gin.macro"):
    return gin.query_parameter(value.scoped_selector.split("/")[0] + "/macro.value")
  return value


class PaperTablesTest(tf.test.TestCase):
  """Each shipped gin value that a paper's table states equals that table's value."""

  def resolved(self, name):
    if "." in name:
      return query(name)
    for config in (EncoderConfig(), trainer_lib.TrainConfig(), optimization.OptimizerConfig()):
      if hasattr(config, name):
        return getattr(config, name)
    raise KeyError(name)

  def test_gin_files_match_the_papers(self):
    for model_file, task_file, source, values in PAPER_TABLES:
      gin.clear_config()
      runs.parse_gin([f"gin/models/{model_file}", f"gin/tasks/{task_file}"], [])
      for name, expected in values.items():
        self.assertEqual(self.resolved(name), expected,
                         f"{model_file} + {task_file}: {name} differs from {source}")

  def test_predictions_per_sequence_follow_electra(self):
    for model_file in MODELS:
      gin.clear_config()
      runs.parse_gin([model_file, "gin/tasks/electra.gin"], [])
      config = trainer_lib.TrainConfig()
      mask_prob = query("dynamic_masking.mask_prob")
      if not model_file.endswith(("tiny.gin", "one_machine.gin")):  # ours: 10 of 64, 20 of 128
        self.assertEqual(config.max_predictions_per_seq,
                         int((mask_prob + 0.005) * config.max_seq_length), model_file)


if __name__ == "__main__":
  tf.test.main()


class RecipeFilesTest(tf.test.TestCase):

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  def test_a_file_that_rebinds_an_earlier_files_value_is_reported(self):
    logs = []
    runs.parse_gin(["gin/models/tiny.gin", "gin/tasks/electra.gin", "gin/models/small.gin"],
                   log=logs.append)
    self.assertLen(logs, 1)
    self.assertIn("gin: gin/models/small.gin re-binds 10 value(s) set by an earlier file: ", logs[0])
    self.assertIn("TrainConfig.train_batch_size = 128 (was 32 from gin/models/tiny.gin)", logs[0])
    self.assertEqual(trainer_lib.TrainConfig().train_batch_size, 128)  # the later file wins
    logs.clear()
    gin.clear_config()
    runs.parse_gin(["gin/models/tiny.gin", "gin/tasks/electra.gin"],
                   ["TrainConfig.train_batch_size = 8"], log=logs.append)
    self.assertEqual(logs, [])  # a --gin_param overrides the files silently, as asked

  def test_the_recipe_before_the_model_file_is_refused(self):
    with self.assertRaisesRegex(
        ValueError, r"--gin_file=gin/models/tiny.gin re-binds (\S+) = (\S+), which the recipe "
        r"gin/recipes/one_machine_sentences.gin set to \S+: give the recipe after the model and "
        r"task files"):
      runs.parse_gin(["gin/recipes/one_machine_sentences.gin", "gin/models/tiny.gin",
                      "gin/tasks/electra.gin"], log=lambda _: None)

  def test_a_file_that_changes_the_method_is_refused(self):
    """The ELECTRA recipe (which includes gin/tasks/electra.gin) after gin/tasks/mlm.gin would
    silently turn a BERT-MLM run into ELECTRA."""
    with self.assertRaisesRegex(
        ValueError, r"^--gin_file=\S+electra_one_machine.gin changes the pre-training method to "
        r"'electra', which gin/tasks/mlm.gin set to 'mlm': give one method .* drop "
        r"--gin_file=gin/tasks/mlm.gin\)$"):
      runs.parse_gin(["gin/models/one_machine.gin", "gin/tasks/mlm.gin",
                      "gin/recipes/electra_one_machine.gin"], log=lambda _: None)

  def test_another_methods_settings_are_refused(self):
    """Settings of a method the run does not use (the recipe's switches with BERT-MLM, a
    generator's size with a method without a generator) would never be read."""
    for params, name in ((["build_electra_pretrainer.rtd_start_step = 3000"],
                          "build_electra_pretrainer.rtd_start_step"),
                         (["build_electric_pretrainer.generator_size = 0.5"],
                          "build_electric_pretrainer.generator_size")):
      gin.clear_config()
      with self.assertRaisesRegex(
          ValueError, f"^--gin_param binds {name}, a setting of the method '\\w+', but the run's "
          r"method is 'mlm' \(pretraining_model.method\): it would never be read"):
        runs.parse_gin(["gin/models/one_machine.gin", "gin/tasks/mlm.gin"], params,
                       log=lambda _: None)
    gin.clear_config()
    runs.parse_gin(["gin/models/one_machine.gin", "gin/tasks/electra.gin"],
                   ["build_electra_pretrainer.rtd_start_step = 3000"], log=lambda _: None)
    for task in TASKS:  # each task file binds only its own method's settings
      gin.clear_config()
      runs.parse_gin(["gin/models/one_machine.gin", task], ["STAGE1_MODEL_DIR = '/nowhere'"],
                     log=lambda _: None)

  def test_several_bindings_in_one_gin_param(self):
    with self.assertRaisesRegex(
        ValueError, r"bad --gin_param='TrainConfig.train_batch_size=8, TrainConfig.max_seq_length"
        r"=64': it holds several bindings; give each its own --gin_param \(e.g. "
        r"--gin_param='TrainConfig.train_batch_size=8' "
        r"--gin_param='TrainConfig.max_seq_length=64'\)"):
      runs.parse_gin(["gin/models/tiny.gin", "gin/tasks/electra.gin"],
                     ["TrainConfig.train_batch_size=8, TrainConfig.max_seq_length=64"])

  def test_one_machine_recipe_composes_with_both_tasks(self):
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    for task in ("mlm", "electra"):
      gin.clear_config()
      try:
        runs.parse_gin(["gin/models/one_machine.gin", f"gin/tasks/{task}.gin",
                        "gin/recipes/one_machine_sentences.gin"])
        config = trainer_lib.TrainConfig()
        masking = trainer_lib.dynamic_masking(config.max_predictions_per_seq)
        encoder = EncoderConfig()
        model = registry.pretraining_model(EncoderConfig(vocab_size=vocab.size), vocab=vocab)
      finally:
        gin.clear_config()
      self.assertEqual((config.train_batch_size, config.max_seq_length), (16, 64))
      self.assertEqual((masking.strategy, masking.mask_prob),
                       ("bert" if task == "mlm" else "electra", 0.15))  # the task's own
      self.assertEqual((encoder.position_embedding, encoder.dropout_rate), ("t5_relative", 0.0))
      self.assertEqual(model.name, task)
