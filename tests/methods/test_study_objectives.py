"""The ELECTRA study's objectives (dissertation §5.4.3) on a hand-checkable batch: BERT MLM,
ELECTRA 15%, Replace MLM, All-Tokens MLM; BERT MLM and Replace MLM also against Model Garden."""
import numpy as np
from official.nlp.configs import bert as mg_bert_config
from official.nlp.data import pretrain_dataloader as mg_pretrain_dataloader
from official.nlp.modeling import models as mg_models
from official.nlp.modeling import networks as mg_networks
from official.nlp.tasks import masked_lm as mg_masked_lm
import tensorflow as tf

from official_rtd.methods import electra
from official_rtd.methods import mlm
from official_rtd.methods import replace_mlm
from official_rtd.modeling.networks import transformer_encoder
from tests.methods.test_electra import CONFIG
from tests.methods.test_electra import copy_encoder_to_model_garden
from tests.methods.test_electra import forcing_noise
from tests.methods.test_electra import toy_batch
from tests.methods.test_electra import VOCAB


def log_softmax(x):
  x = np.asarray(x, np.float64)
  return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(
      -1, keepdims=True)


def masked_mean_nll(logits, batch):
  """−log softmax at (row, slot) of the 3 real masked positions of toy_batch."""
  lp = log_softmax(logits)
  ids = batch["masked_lm_ids"].numpy()
  return -(lp[0, 0, ids[0, 0]] + lp[0, 1, ids[0, 1]] + lp[1, 0, ids[1, 0]]) / 3


def model_garden_bert(encoder_config, ours_encoder, ours_masked_lm):
  """Model Garden's `BertPretrainerV2` over a `BertEncoder` holding our encoder's and MLM head's
  weights."""
  mg_encoder = mg_networks.BertEncoder(
      vocab_size=VOCAB, hidden_size=encoder_config.hidden_size,
      num_layers=encoder_config.num_layers, num_attention_heads=encoder_config.num_attention_heads,
      max_sequence_length=16, type_vocab_size=2, inner_dim=encoder_config.intermediate_size,
      inner_activation=transformer_encoder.gelu, output_dropout=0.0, attention_dropout=0.0,
      embedding_width=encoder_config.embedding_size, dict_outputs=True)
  mg_model = mg_models.BertPretrainerV2(mg_encoder, mlm_activation=transformer_encoder.gelu)
  mg_model(dict(toy_batch()))  # builds every layer
  copy_encoder_to_model_garden(mg_encoder, ours_encoder)
  mg_model.masked_lm.set_weights(ours_masked_lm.get_weights())
  return mg_model


def model_garden_mlm_loss(batch, mg_model):
  """Model Garden's MaskedLMTask loss on `batch`."""
  task = mg_masked_lm.MaskedLMTask(mg_masked_lm.MaskedLMConfig(
      model=mg_bert_config.PretrainerConfig(cls_heads=[]),
      train_data=mg_pretrain_dataloader.BertPretrainDataConfig(use_next_sentence_label=False)))
  metrics = task.build_metrics()
  return task.build_losses(batch, mg_model(batch), metrics)


class ModelGardenParityTest(tf.test.TestCase):
  """BERT MLM and Replace MLM against Model Garden's BertPretrainerV2 + MaskedLMTask on the same
  weights."""

  def test_bert_mlm(self):
    model = mlm.build_mlm_pretrainer(CONFIG)
    batch = toy_batch()
    losses = model.compute_losses(batch, model(batch, training=False))
    mg_model = model_garden_bert(CONFIG, model.encoder, model.masked_lm)
    self.assertAllClose(losses["mlm_loss"].value, model_garden_mlm_loss(batch, mg_model),
                        rtol=1e-5)

  def test_replace_mlm(self):
    """The model's loss is Model Garden's masked-LM loss with the generator's samples as the
    input (instead of [MASK])."""
    model = replace_mlm.build_replace_mlm_pretrainer(CONFIG, generator_size=0.5)
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    mg_model = model_garden_bert(CONFIG, model.discriminator, model.model_lm)
    replaced = {k: v for k, v in batch.items() if k != "gumbel_noise"}
    replaced["input_word_ids"] = out["corrupted_ids"]
    self.assertAllClose(losses["model_loss"].value, model_garden_mlm_loss(replaced, mg_model),
                        rtol=1e-5)


class StudyObjectivesTest(tf.test.TestCase):

  def test_bert_mlm(self):
    model = mlm.build_mlm_pretrainer(CONFIG)
    batch = toy_batch()
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    self.assertAllClose(losses["total_loss"].value, masked_mean_nll(out["mlm_logits"], batch), rtol=1e-5)
    self.assertIs(model.exported_encoder, model.encoder)

  def test_electra_15_uses_only_masked_positions(self):
    model = electra.build_electra_pretrainer(CONFIG, generator_size=0.5, rtd_positions="masked")
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    z = out["rtd_logits"].numpy().astype(np.float64)
    y = out["rtd_labels"].numpy()
    bce = -(y * np.log(1 / (1 + np.exp(-z))) + (1 - y) * np.log(1 - 1 / (1 + np.exp(-z))))
    expected = (bce[0, 2] + bce[0, 5] + bce[1, 3]) / 3  # the three masked positions only
    self.assertAllClose(losses["rtd_loss"].value, expected, rtol=1e-5)
    with self.assertRaisesRegex(ValueError, "rtd_positions"):
      electra.build_electra_pretrainer(CONFIG, rtd_positions="some")

  def test_replace_mlm(self):
    model = replace_mlm.build_replace_mlm_pretrainer(CONFIG, generator_size=0.5)
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    corrupted = out["corrupted_ids"].numpy()
    self.assertEqual((corrupted[0, 5], corrupted[1, 3]), (30, 40))  # samples, not [MASK] (4)
    self.assertNotIn(4, corrupted)
    losses = model.compute_losses(batch, out)
    self.assertAllClose(losses["model_loss"].value, masked_mean_nll(out["replace_mlm_logits"], batch),
                        rtol=1e-5)
    self.assertAllClose(losses["total_loss"].value, losses["mlm_loss"].value + losses["model_loss"].value, rtol=1e-6)

  def test_all_tokens_mlm_copy_mechanism(self):
    model = replace_mlm.build_replace_mlm_pretrainer(CONFIG, generator_size=0.5, all_tokens=True)
    batch = dict(toy_batch(), gumbel_noise=forcing_noise(tf.constant([[11, 30, 0], [40, 0, 0]])))
    out = model(batch, training=False)
    losses = model.compute_losses(batch, out)
    # Recompute p(x_t) = D·1[x_t = input_t] + (1 − D)·softmax(W h_t)[x_t] by hand.
    sequence = model.discriminator(dict(batch, input_word_ids=out["corrupted_ids"]),
                                   training=False)["sequence_output"]
    positions = tf.tile(tf.range(8)[tf.newaxis], [2, 1])
    probs = np.exp(log_softmax(model.model_lm(sequence, positions)))
    d = 1 / (1 + np.exp(-out["copy_logits"].numpy().astype(np.float64)))
    original, corrupted = out["original_ids"].numpy(), out["corrupted_ids"].numpy()
    mask = batch["input_mask"].numpy()
    nll = []
    for b in range(2):
      for t in range(8):
        if mask[b, t]:
          p = (d[b, t] * (corrupted[b, t] == original[b, t])
               + (1 - d[b, t]) * probs[b, t, original[b, t]])
          nll.append(-np.log(p))
    self.assertAllClose(losses["model_loss"].value, np.mean(nll), rtol=1e-5)


if __name__ == "__main__":
  tf.test.main()
