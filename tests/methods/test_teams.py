"""TEAMS: candidate sets, layer sharing, the MWS loss by hand, export branch, learning."""
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import export
from official_rtd.methods import teams
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.ops import sampling
from tests import testutil
from tests.methods.test_electra import forcing_noise
from tests.methods.test_electra import toy_batch
from tests.training.test_trainer import make_records
from tests.training.test_trainer import text_trainer

VOCAB = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
CONFIG = EncoderConfig(vocab_size=VOCAB.size, hidden_size=16, num_layers=4, num_attention_heads=2,
                       intermediate_size=32, embedding_size=8, max_position_embeddings=16,
                       dropout_rate=0.0, attention_dropout_rate=0.0)


class CandidateTest(tf.test.TestCase):

  def test_sampled_candidates_follow_the_generator_without_replacement(self):
    """K = 2 of 6 allowed tokens: P(i in S) = p_i + Σ_{j≠i} p_j p_i / (1 − p_j) for successive
    sampling without replacement from p = softmax over the allowed (non-original, non-special)."""
    vocab, rows = 9, 40000
    logits = np.array([0.0, 2.0, 1.5, 1.0, 0.5, 0.0, -0.5, 3.0, -1.0], np.float32)
    excluded = np.zeros(vocab, bool)
    excluded[[0, 7]] = True  # special tokens (7 is the most likely: must never appear)
    original = 3
    allowed = [i for i in range(vocab) if not excluded[i] and i != original]
    p = np.exp(logits[allowed]) / np.exp(logits[allowed]).sum()
    inclusion = np.array([p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(len(p)) if j != i)
                          for i in range(len(p))])
    sets = sampling.candidate_sets(
        tf.constant(np.tile(logits, [rows, 1, 1])), tf.fill([rows, 1], original), 2,
        tf.constant(excluded), "sampled").numpy()[:, 0, 1:]
    observed = np.array([(sets == token).any(-1).mean() for token in allowed])
    self.assertAllClose(observed, inclusion, atol=0.01)
    self.assertAllClose(inclusion.sum(), 2.0)
    self.assertFalse(np.isin(sets, [0, 7, original]).any())

  def test_sets(self):
    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=[4, 3, VOCAB.size]) * 3, tf.float32)
    logits = tf.tensor_scatter_nd_update(  # make a special token the most likely everywhere
        logits, [[b, p, VOCAB.mask_id] for b in range(4) for p in range(3)], [50.0] * 12)
    original = tf.constant(rng.integers(5, VOCAB.size, [4, 3]), tf.int32)
    special = VOCAB.is_special()
    for mode in ("sampled", "hardest"):
      sets = sampling.candidate_sets(logits, original, 5, special, mode).numpy()
      self.assertEqual(sets.shape, (4, 3, 6))
      self.assertAllEqual(sets[..., 0], original)
      for row in sets.reshape(-1, 6):
        self.assertEqual(list(row).count(row[0]), 1)   # the original exactly once
        self.assertLen(set(row[1:]), 5)                 # K distinct others
        self.assertFalse(special[row].any())            # no special token
    hardest = sampling.candidate_sets(logits, original, 5, special, "hardest").numpy()
    masked = logits.numpy().copy()
    masked[..., special] = -np.inf
    for b in range(4):
      for p in range(3):
        masked[b, p, original[b, p]] = -np.inf
        top = set(np.argsort(-masked[b, p])[:5])
        self.assertEqual(set(hardest[b, p, 1:]), top)


def _batch():
  batch = toy_batch()  # ids < 50, so valid in the sample vocab
  batch["gumbel_noise"] = forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]]))
  batch["gumbel_noise"] = tf.pad(batch["gumbel_noise"], [[0, 0], [0, 0], [0, VOCAB.size - 50]])
  return batch


class TeamsModelTest(tf.test.TestCase):

  def test_seeded_draws_use_distinct_streams(self):
    model = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB)
    batch = dict(toy_batch(), sampling_seed=tf.constant([7, 0], tf.int64))
    with testutil.record_stateless_seeds() as seeds:
      first = model(batch, training=False)
    self.assertLen(seeds, 2)  # the replacement sample and the candidates' Gumbel noise
    self.assertLen(set(seeds), 2, seeds)
    again = model(batch, training=False)  # still reproducible
    self.assertAllEqual(first["candidates"], again["candidates"])
    self.assertAllEqual(first["sampled_ids"], again["sampled_ids"])

  def test_shared_layers_are_the_same_variables(self):
    model = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB)  # generator: 2 layers, 1 shared
    model(_batch())
    gen, disc = model.generator, model.discriminator
    self.assertLen(gen.transformer_layers, 2)
    self.assertIs(gen.transformer_layers[0], disc.transformer_layers[0])
    self.assertIsNot(gen.transformer_layers[1], disc.transformer_layers[1])
    self.assertIs(gen.embeddings, disc.embeddings)
    # One update of a shared variable moves both networks.
    shared = gen.transformer_layers[0].trainable_variables[0]
    self.assertIn(id(shared), {id(v) for v in disc.trainable_variables})
    full = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, num_shared_generator_layers=2)
    self.assertIs(full.generator.transformer_layers[1], full.discriminator.transformer_layers[1])
    none = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, num_shared_generator_layers=0)
    self.assertIsNot(none.generator.transformer_layers[0], none.discriminator.transformer_layers[0])

  def test_mws_loss_equals_eq_7_8(self):
    model = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, rtd_weight=5.0, mws_weight=2.0)
    batch = _batch()
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    logits = out["mws_logits"].numpy().astype(np.float64)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    weights = batch["masked_lm_weights"].numpy()
    mws = -(log_p[..., 0] * weights).sum() / weights.sum()
    self.assertAllClose(losses["mws_loss"].value, mws, rtol=1e-5)
    self.assertAllClose(losses["total_loss"].value, losses["mlm_loss"].value + 5 * losses["rtd_loss"].value + 2 * mws,
                        rtol=1e-5)
    # The MWS logit is e(c)ᵀ f(h) + b_c: recompute for one candidate by hand.
    sequence = model.discriminator(dict(batch, input_word_ids=out["corrupted_ids"]),
                                   training=False)["encoder_outputs"][-2]
    mask = model.discriminator.attention_mask_layer(sequence, batch["input_mask"])
    h = model.mws_layer([sequence, mask]).numpy()[0, 2]
    head = model.mws_head
    f = head.layer_norm(head.dense(h[np.newaxis, np.newaxis])).numpy()[0, 0]
    c = out["candidates"].numpy()[0, 0, 3]
    expected = f @ head.embedding_table.numpy()[c] + head.bias.numpy()[c]
    self.assertAllClose(out["mws_logits"].numpy()[0, 0, 3], expected, rtol=1e-4, atol=1e-5)

  def test_export_is_the_mws_branch(self):
    model = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB)
    batch = _batch()
    out = model(batch, training=False)
    branch = model.exported_encoder
    self.assertIs(branch.transformer_layers[-1], model.mws_layer)
    self.assertIs(branch.transformer_layers[0], model.discriminator.transformer_layers[0])
    inputs = dict(batch, input_word_ids=out["corrupted_ids"])
    sequence = model.discriminator(inputs, training=False)["encoder_outputs"][-2]
    mask = model.discriminator.attention_mask_layer(sequence, batch["input_mask"])
    self.assertAllClose(branch(inputs, training=False)["sequence_output"],
                        model.mws_layer([sequence, mask]), atol=1e-5)
    rtd = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, export_branch="rtd")
    self.assertIs(rtd.exported_encoder, rtd.discriminator)


class TaskHeadVariantsTest(tf.test.TestCase):
  """TEAMS Table 3's variants, each against the layers it must read."""

  def _layers(self, model, batch, out):
    inputs = dict(batch, input_word_ids=out["corrupted_ids"])
    return inputs, model.discriminator(inputs, training=False)["encoder_outputs"]

  def _mws_logit(self, model, out, h, slot=(0, 0), candidate=3):
    head = model.mws_head
    f = head.layer_norm(head.dense(h[np.newaxis, np.newaxis])).numpy()[0, 0]
    c = out["candidates"].numpy()[slot + (candidate,)]
    return f @ head.embedding_table.numpy()[c] + head.bias.numpy()[c]

  def test_attention_last_two_separate_layers_on_layer_l(self):
    model = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, task_heads="attention_last")
    batch = _batch()
    out = model(batch, training=False)
    self.assertIsNotNone(model.rtd_layer)
    self.assertIsNot(model.rtd_layer, model.mws_layer)
    inputs, layers = self._layers(model, batch, out)
    top = layers[-1]  # layer L feeds both task layers
    mask = model.discriminator.attention_mask_layer(top, batch["input_mask"])
    rtd_h = model.rtd_layer([top, mask])
    self.assertAllClose(out["rtd_logits"], model.rtd_head(rtd_h), atol=1e-5)
    self.assertNotAllClose(rtd_h, top, atol=1e-3)  # a real layer between L and the head
    mws_h = model.mws_layer([top, mask]).numpy()[0, 2]  # row 0's first masked position
    self.assertAllClose(out["mws_logits"].numpy()[0, 0, 3], self._mws_logit(model, out, mws_h),
                        rtol=1e-4, atol=1e-5)
    # Fixed-noise detection reads the same RTD branch.
    self.assertAllClose(model.replaced_token_logits(inputs), out["rtd_logits"], atol=1e-5)
    # Exports: L layers + the task layer of the branch (an effectively L+1-layer encoder).
    branch = model.exported_encoder
    self.assertLen(branch.transformer_layers, CONFIG.num_layers + 1)
    self.assertIs(branch.transformer_layers[-1], model.mws_layer)
    self.assertAllClose(branch(inputs, training=False)["sequence_output"],
                        model.mws_layer([top, mask]), atol=1e-5)
    rtd = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, task_heads="attention_last",
                                       export_branch="rtd")
    self.assertIs(rtd.exported_encoder.transformer_layers[-1], rtd.rtd_layer)
    # Two task layers cost two layers' FLOPs over the one of "attention".
    single = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB)
    layer_flops = 2 * 8 * (8 * 16 ** 2 + 4 * 16 * 32 + 4 * 8 * 16)  # train = 2 × forward
    self.assertAllClose(model.train_flops_per_example(8, 3) - single.train_flops_per_example(8, 3),
                        layer_flops)

  def test_ffn_heads_read_layer_l_directly(self):
    model = teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, task_heads="ffn")
    batch = _batch()
    out = model(batch, training=False)
    self.assertIsNone(model.mws_layer)
    self.assertIsNone(model.rtd_layer)
    _, layers = self._layers(model, batch, out)
    self.assertAllClose(out["rtd_logits"], model.rtd_head(layers[-1]), atol=1e-5)
    h = layers[-1].numpy()[0, 2]
    self.assertAllClose(out["mws_logits"].numpy()[0, 0, 3], self._mws_logit(model, out, h),
                        rtol=1e-4, atol=1e-5)
    self.assertIs(model.exported_encoder, model.discriminator)
    with self.assertRaisesRegex(ValueError, "task_heads must be one of"):
      teams.build_teams_pretrainer(CONFIG, vocab=VOCAB, task_heads="mlp")


class TeamsTrainingTest(tf.test.TestCase):

  def test_three_losses_fall_and_export_loads(self):
    tmp = tempfile.mkdtemp()
    records = make_records(os.path.join(tmp, "records"), paragraphs=300)
    config = EncoderConfig(hidden_size=64, num_layers=4, num_attention_heads=2,
                           intermediate_size=128, embedding_size=32, max_position_embeddings=64)
    trainer, logged = text_trainer(
        os.path.join(tmp, "teams"), records,
        lambda encoder_config: teams.build_teams_pretrainer(encoder_config, vocab=VOCAB),
        encoder_config=config)
    trainer.train()
    for name in ("mlm_loss", "rtd_loss", "mws_loss"):
      self.assertLess(logged[-1][name], logged[0][name], (name, logged))
    encoder = export.load_encoder(os.path.join(tmp, "teams", "export"))
    self.assertLen(encoder.transformer_layers, 4)
    for a, b in zip(encoder.weights, trainer.model.exported_encoder.weights):
      self.assertAllEqual(a, b)


if __name__ == "__main__":
  tf.test.main()
