"""Held-out evaluation: figures vs direct computations, determinism, modes, run comparison."""
import dataclasses
import functools
import json
import os

import numpy as np
import tensorflow as tf

from official_rtd import runs
from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import run_dir
from official_rtd.methods import electra
from official_rtd.methods import teams
from official_rtd.probes import probe
from official_rtd.training import evaluation
from official_rtd.training import optimization
from official_rtd.training import trainer as trainer_lib
from tests import testutil
from tests.training.test_trainer import make_records
from tests.training.test_trainer import RecordsTestCase
from tests.training.test_trainer import TINY

GLUE = os.path.join(testutil.REPO, "..", "shared", "data", "glue")


class EvaluatorTest(RecordsTestCase):
  PARAGRAPHS = 150

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.heldout = make_records(os.path.join(cls.tmp, "heldout"), paragraphs=40, dupe_factor=1,
                               seed=99)

  def _trainer(self, model_dir, steps=20):
    return runs.build_trainer(
        model_dir, self.records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(
            train_batch_size=8, num_train_steps=steps, max_seq_length=64,
            max_predictions_per_seq=10, save_checkpoints_steps=10, log_every_steps=10),
        optimizer_config=optimization.OptimizerConfig(learning_rate=1e-3, warmup_steps=5),
        encoder_config=TINY,
        model_fn=functools.partial(electra.build_electra_pretrainer, generator_size=0.5),
        log=lambda _: None)

  def _eval_config(self, **kwargs):
    values = dict(eval_batch_size=16, pll_sentences=6, pll_max_tokens=12, eval_every_steps=10)
    if os.path.isdir(GLUE):
      values.update(probe_data_dir=os.path.join(GLUE, "SST-2"), probe_max_train_examples=64)
    values.update(kwargs)
    return evaluation.EvalConfig(**values)

  def test_train_and_eval_rows_and_determinism(self):
    model_dir = os.path.join(self.tmp, "run")
    trainer = self._trainer(model_dir)
    config = self._eval_config()
    evaluator = evaluation.Evaluator(
        trainer.model, trainer.vocab, trainer.input_config, self.heldout, config,
        probe=probe.from_eval_config(config, trainer.vocab, trainer.do_lower_case))
    trainer.train(evaluator, eval_every_steps=10)
    rows = run_dir.read_results(model_dir)
    self.assertEqual([r["step"] for r in rows], [10, 20])
    per_example = trainer.model.train_flops_per_example(64, 10)
    self.assertAllClose([r["train_flops"] for r in rows], [80 * per_example, 160 * per_example])
    for name in ("mlm_loss", "mlm_accuracy", "mlm_perplexity", "rtd_loss", "rtd_auc",
                 "rtd_precision", "rtd_recall", "replaced_fraction", "fixed_noise_auc",
                 "fixed_noise_accuracy", "pll_swap_accuracy"):
      self.assertIn(name, rows[-1])
    self.assertAllClose(rows[-1]["mlm_perplexity"], np.exp(rows[-1]["mlm_loss"]))
    self.assertAllClose(rows[-1]["fixed_noise_replaced_fraction"], 0.15, atol=0.03)
    if os.path.isdir(GLUE):
      self.assertBetween(rows[-1]["probe_sst-2_accuracy"], 0.3, 1.0)
    # Same weights, evaluated twice: identical figures.
    first, second = evaluator.evaluate(), evaluator.evaluate()
    self.assertEqual(first, second)
    self.assertAllClose(first["mlm_loss"], rows[-1]["mlm_loss"])
    # --mode=eval over every kept checkpoint gives one row per checkpoint, in step order (without
    # the probe, checked above: these evaluations compare the losses).
    evaluator = evaluation.Evaluator(trainer.model, trainer.vocab, trainer.input_config,
                                     self.heldout, config)
    eval_rows = trainer.evaluate_checkpoints(evaluator, all_checkpoints=True)
    self.assertEqual([r["step"] for r in eval_rows], [10, 20])
    self.assertAllClose(eval_rows[1]["mlm_loss"], rows[1]["mlm_loss"])
    # A milestone the manager no longer lists is evaluated too, in step order, each step once.
    trainer_lib.keep_milestone(os.path.join(model_dir, "ckpt-10"),
                               os.path.join(model_dir, trainer_lib.MILESTONES))
    trainer_lib.keep_milestone(os.path.join(model_dir, "ckpt-20"),
                               os.path.join(model_dir, trainer_lib.MILESTONES))
    tf.compat.v1.train.update_checkpoint_state(model_dir, os.path.join(model_dir, "ckpt-20"),
                                               [os.path.join(model_dir, "ckpt-20")])
    eval_rows = trainer.evaluate_checkpoints(evaluator, all_checkpoints=True)
    self.assertEqual([r["step"] for r in eval_rows], [10, 20])
    self.assertAllClose(eval_rows[0]["mlm_loss"], rows[0]["mlm_loss"])
    self.assertTrue(tf.io.gfile.glob(os.path.join(model_dir, "eval", "events.out.*")))
    # A checkpoint the state file lists but whose index is gone (an interrupted save of older
    # code) is named and skipped; the intact ones are evaluated.
    tf.compat.v1.train.update_checkpoint_state(
        model_dir, os.path.join(model_dir, "ckpt-30"),
        [os.path.join(model_dir, "ckpt-20"), os.path.join(model_dir, "ckpt-30")])
    testutil.write_text(os.path.join(model_dir, "ckpt-30.data-00000-of-00001"), "orphan")
    logs = []
    trainer.log = logs.append
    eval_rows = trainer.evaluate_checkpoints(evaluator, all_checkpoints=True)
    self.assertEqual([r["step"] for r in eval_rows], [10, 20])
    self.assertIn(f"skipped checkpoint {os.path.join(model_dir, 'ckpt-30')}: ckpt-30.index is "
                  "missing", logs)

  def test_each_loss_is_averaged_over_its_own_count(self):
    """Every loss of the held-out set is the mean over what it counts (TEAMS' mws_loss: masked
    positions), whatever the batching: batches of 16 give the figures of one batch holding the
    whole set. (Weighting by loss names gave mws_loss per row.)"""
    vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    trainer = runs.build_trainer(
        os.path.join(self.tmp, "teams"), self.records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(train_batch_size=8, num_train_steps=1,
                                             max_seq_length=64, max_predictions_per_seq=10),
        encoder_config=dataclasses.replace(TINY, num_layers=2),  # TEAMS shares the lower layers
        log=lambda _: None, model_fn=functools.partial(teams.build_teams_pretrainer, vocab=vocab,
                                   candidate_mode="hardest", temperature=0.0))  # deterministic
    config = self._eval_config(probe_data_dir="", pll_sentences=0)
    parts = (trainer.model, trainer.vocab, trainer.input_config, self.heldout)
    figures = evaluation.Evaluator(*parts, config)._method_figures()
    whole = evaluation.Evaluator(*parts, dataclasses.replace(config, eval_batch_size=10_000))
    batches = list(whole._batches())
    self.assertLen(batches, 1)
    model = trainer.model
    losses = model.compute_losses(batches[0], model(batches[0], training=False))
    for name in ("mws_loss", "mlm_loss", "rtd_loss"):
      self.assertAllClose(figures[name], losses[name].value, rtol=1e-5, msg=name)
    weights = batches[0]["masked_lm_weights"].numpy()
    self.assertEqual(float(losses["mws_loss"].weight), weights.sum())

  def test_a_run_resumed_after_a_hard_kill_writes_each_evaluation_once(self):
    # Evaluated at step 15, killed before the step-20 save: the resumed run re-trains steps
    # 10-15 from ckpt-10 (bit for bit) and must not write step 15's row again.
    model_dir = os.path.join(self.tmp, "hard_kill")
    trainer = self._trainer(model_dir)
    config = self._eval_config(probe_data_dir="", pll_sentences=0)
    evaluator = evaluation.Evaluator(trainer.model, trainer.vocab, trainer.input_config,
                                     self.heldout, config)
    trainer.train(evaluator, eval_every_steps=15)
    rows = run_dir.read_results(model_dir)
    self.assertEqual([r["step"] for r in rows], [15, 20])
    for name in tf.io.gfile.glob(os.path.join(model_dir, "ckpt-20.*")):
      os.remove(name)
    tf.compat.v1.train.update_checkpoint_state(model_dir, os.path.join(model_dir, "ckpt-10"))
    testutil.write_text(os.path.join(model_dir, run_dir.RESULTS_NAME),
                        json.dumps(rows[0], sort_keys=True) + "\n")
    resumed = self._trainer(model_dir)
    resumed.train(evaluation.Evaluator(resumed.model, resumed.vocab, resumed.input_config,
                                       self.heldout, config), eval_every_steps=15)
    again = run_dir.read_results(model_dir)
    self.assertEqual([r["step"] for r in again], [15, 20])
    self.assertAllClose(again[1]["mlm_loss"], rows[1]["mlm_loss"])  # the same weights at 20

  def test_eval_without_checkpoint_fails(self):
    trainer = self._trainer(os.path.join(self.tmp, "empty_run"))
    evaluator = evaluation.Evaluator(trainer.model, trainer.vocab, trainer.input_config,
                                     self.heldout, self._eval_config(probe_data_dir=""))
    with self.assertRaisesRegex(trainer_lib.TrainingSetupError, "no checkpoint to evaluate in"):
      trainer.evaluate_checkpoints(evaluator)

  def test_pll_equals_one_position_at_a_time(self):
    trainer = self._trainer(os.path.join(self.tmp, "pll"))
    model, vocab = trainer.model, trainer.vocab
    ids = np.array([[vocab.cls_id, 50, 60, 70, vocab.sep_id, vocab.pad_id]], np.int32)
    mask = (ids != vocab.pad_id).astype(np.int32)
    pll = model.pseudo_log_likelihood(tf.constant(ids), tf.constant(mask),
                                      tf.zeros_like(tf.constant(ids)), vocab.mask_id)
    expected = 0.0
    for t in (1, 2, 3):
      masked = ids.copy()
      masked[0, t] = vocab.mask_id
      sequence = model.generator({"input_word_ids": tf.constant(masked),
                                  "input_mask": tf.constant(mask),
                                  "input_type_ids": tf.zeros_like(tf.constant(ids))},
                                 training=False)["sequence_output"]
      logits = model.masked_lm(sequence, tf.constant([[t]]))
      expected += float(tf.nn.log_softmax(logits[0, 0])[ids[0, t]])
    self.assertAllClose(pll[0], expected, rtol=1e-5)


if __name__ == "__main__":
  tf.test.main()
