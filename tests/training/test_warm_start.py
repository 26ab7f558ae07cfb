"""Warm start (`--warm_start_from`): weights restored, optimizer/step fresh, own checkpoints first,
shared → GDES, TEAMS from ELECTRA with allowed fresh heads, and every mismatch named."""
import dataclasses
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import electra
from official_rtd.methods import teams
from official_rtd.training import warm_start
from tests import testutil
from tests.training.test_trainer import make_records
from tests.training.test_trainer import text_trainer
from tests.training.test_trainer import TINY

VOCAB = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
ENCODER = dataclasses.replace(TINY, num_layers=2)  # TEAMS, warm-started here, shares lower layers


class WarmStartTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    cls.records = make_records(os.path.join(cls.root, "records"), paragraphs=100)
    cls.source_dir = os.path.join(cls.root, "source")
    cls.source, _ = text_trainer(cls.source_dir, cls.records, electra.build_electra_pretrainer,
                                 steps=3, log_every_steps=3, encoder_config=ENCODER)
    cls.source.train()
    shutil.copyfile(VOCAB.path, os.path.join(cls.source_dir, "vocab.txt"))  # as run_pretraining

  def target(self, name, model_fn=electra.build_electra_pretrainer, **train_config):
    model_dir = os.path.join(self.root, name)
    trainer, _ = text_trainer(model_dir, self.records, model_fn, steps=2, log_every_steps=2,
                              encoder_config=ENCODER,
                              **dict({"warm_start_from": self.source_dir}, **train_config))
    lines = []
    trainer.log = lines.append
    return trainer, lines

  def test_weights_restored_optimizer_and_step_fresh_own_checkpoint_first(self):
    trainer, lines = self.target("warm")
    self.assertEqual(trainer.restore(), 0)
    source = {v.name: v for v in self.source.model.weights}
    for v in trainer.model.weights:
      self.assertAllEqual(v, source[v.name], msg=v.name)
    self.assertEqual(int(trainer.optimizer.iterations), 0)
    slots = [s for s in trainer.optimizer.variables() if "/m:" in s.name or "/v:" in s.name]
    self.assertNotEmpty(slots)
    self.assertTrue(all(not np.any(s.numpy()) for s in slots))
    self.assertRegex(lines[0], r"warm start from .*ckpt-3: \d+ variables restored")
    self.assertNotIn("unused in the checkpoint", lines[0])  # same model: every tensor used
    trainer.train()
    # Resuming the warm-started run reads its own checkpoint, never the (now bogus) init one.
    again, lines = self.target("warm", warm_start_from=os.path.join(self.root, "nowhere"))
    self.assertEqual(again.restore(), 2)
    self.assertIn("warm_start_from is not read again", lines[0])

  def test_shared_source_into_gdes(self):
    trainer, lines = self.target(
        "gdes", lambda encoder_config: electra.build_electra_pretrainer(
            encoder_config, embedding_sharing="gdes"))
    trainer.restore()
    embeddings = trainer.model.discriminator.embeddings
    source = self.source.model.discriminator.embeddings.tables()
    for role, table in embeddings.source.tables().items():
      self.assertAllEqual(table, source[role], msg=role)
    for role, delta in embeddings.delta.tables().items():
      self.assertFalse(np.any(delta.numpy()), msg=role)
    self.assertIn("fresh (allowed): discriminator/embeddings/delta/", lines[0])

  def test_gdes_source_into_shared_is_refused_unless_delta_is_dropped_knowingly(self):
    gdes = lambda encoder_config: electra.build_electra_pretrainer(encoder_config,
                                                                     embedding_sharing="gdes")
    source_dir = os.path.join(self.root, "gdes_source")
    source, _ = text_trainer(source_dir, self.records, gdes, steps=2, log_every_steps=2,
                             encoder_config=ENCODER)
    source.train()
    shutil.copyfile(VOCAB.path, os.path.join(source_dir, "vocab.txt"))
    trainer, _ = self.target("shared_from_gdes", warm_start_from=source_dir)
    before = [v.numpy() for v in trainer.model.weights]
    with self.assertRaisesRegex(warm_start.WarmStartError,
                                r"embedding_sharing = 'gdes'.*E_G \+ E_Δ .*delta"):
      trainer.restore()
    for v, b in zip(trainer.model.weights, before):  # nothing was assigned
      self.assertAllEqual(v, b)
    trainer, lines = self.target("shared_from_gdes_2", warm_start_from=source_dir,
                                 warm_start_allow_missing=("delta",))
    trainer.restore()
    self.assertAllEqual(trainer.model.discriminator.get_embedding_table(),
                        source.model.generator.get_embedding_table())  # E_G, as asked
    self.assertIn("unused in the checkpoint", lines[0])

  def test_teams_from_electra_with_fresh_heads(self):
    build = lambda encoder_config: teams.build_teams_pretrainer(encoder_config, vocab=VOCAB)
    with self.assertRaises(warm_start.WarmStartError) as error:
      self.target("teams_strict", build)[0].restore()
    message = str(error.exception)
    for part in ("mws_head/", "mws_layer/", "missing", "the checkpoint has generator/"):
      self.assertIn(part, message)
    allowed = ("mws_head", "mws_layer", "generator", "masked_lm")
    trainer, lines = self.target("teams", build, warm_start_allow_missing=allowed)
    trainer.restore()
    ours, theirs = trainer.model.discriminator.weights, self.source.model.discriminator.weights
    self.assertLen(ours, len(theirs))
    for v, w in zip(ours, theirs):  # incl. the layers the generator shares
      self.assertAllEqual(v, w, msg=v.name)
    self.assertAllEqual(trainer.model.rtd_head.weights[0], self.source.model.rtd_head.weights[0])
    self.assertIn("fresh (allowed): ", lines[0])
    self.assertIn("mws_head/", lines[0])
    self.assertIn("unused in the checkpoint", lines[0])

  def test_errors_name_the_problem(self):
    wider = dataclasses.replace(ENCODER, hidden_size=32)
    trainer, _ = text_trainer(os.path.join(self.root, "wider"), self.records,
                              electra.build_electra_pretrainer, steps=2, encoder_config=wider,
                              warm_start_from=self.source_dir)
    with self.assertRaisesRegex(warm_start.WarmStartError,
                                r"variable\(s\) cannot be restored: .*\[.*32.*\]: the checkpoint "
                                r"has .*\[.*64.*\]"):
      trainer.restore()
    with self.assertRaisesRegex(warm_start.WarmStartError, "no checkpoint there"):
      self.target("nothing", warm_start_from=os.path.join(self.root, "nowhere"))[0].restore()
    other = os.path.join(self.root, "other_vocab")
    shutil.copytree(self.source_dir, other)
    with open(os.path.join(other, "vocab.txt"), "a", encoding="utf-8") as f:
      f.write("[unused_extra_token]\n")
    with self.assertRaisesRegex(warm_start.WarmStartError,
                                "records were built with .* rebuild the records"):
      self.target("vocab", warm_start_from=other)[0].restore()
    self.assertFalse(os.path.exists(os.path.join(self.root, "vocab", "checkpoint")))
    # A component name that matches nothing (a typo) is refused, the real names listed.
    with self.assertRaisesRegex(warm_start.WarmStartError,
                                r"--warm_start_allow_missing: mws_heda names no component of "
                                r"this model's or the checkpoint's variables; the names are: "
                                r".*discriminator"):
      self.target("typo", warm_start_allow_missing=("mws_heda",))[0].restore()
    # A truncated copy: one line naming the checkpoint and what is wrong, not an IndexError.
    truncated = os.path.join(self.root, "truncated")
    shutil.copytree(self.source_dir, truncated)
    data = [n for n in os.listdir(truncated) if n.startswith("ckpt-3.data")][0]
    with open(os.path.join(truncated, data), "r+b") as f:
      f.truncate(os.path.getsize(os.path.join(truncated, data)) // 10)
    with self.assertRaisesRegex(warm_start.WarmStartError,
                                r"--warm_start_from=.*truncated/ckpt-3: checkpoint .*ckpt-3 "
                                r"does not read back: its files are truncated or corrupt"):
      self.target("from_truncated", warm_start_from=os.path.join(truncated, "ckpt-3"))[0].restore()


if __name__ == "__main__":
  tf.test.main()


class DeprecatedNameTest(tf.test.TestCase):

  def test_old_gin_names_still_set_the_warm_start_with_a_deprecation_line(self):
    import gin  # pylint: disable=g-import-not-at-top

    from official_rtd.training import train_config  # pylint: disable=g-import-not-at-top
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    gin.parse_config(["TrainConfig.init_checkpoint = '/runs/a'",
                      "TrainConfig.init_checkpoint_allow_missing = ['delta']"])
    with self.assertLogs(level="WARNING") as logs:
      config = train_config.TrainConfig()
    self.assertEqual(config.warm_start_from, "/runs/a")
    self.assertEqual(config.warm_start_allow_missing, ("delta",))
    self.assertNotIn("init_checkpoint", [f.name for f in dataclasses.fields(config)])
    self.assertIn("TrainConfig.init_checkpoint is deprecated: it is now "
                  "TrainConfig.warm_start_from", "\n".join(logs.output))
    with self.assertRaisesRegex(ValueError, "disagree"):
      train_config.TrainConfig(warm_start_from="/runs/b", init_checkpoint="/runs/a")
