"""The section 5.2.2 FLOPs counter against the matrix products TensorFlow actually traces."""
import tensorflow as tf

from official_rtd.methods import electra
from official_rtd.methods import mlm
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder

SEQ = 32
PREDICTIONS = 5
SPEC = {"input_word_ids": tf.TensorSpec([1, SEQ], tf.int32),
        "input_mask": tf.TensorSpec([1, SEQ], tf.int32),
        "input_type_ids": tf.TensorSpec([1, SEQ], tf.int32),
        "masked_lm_positions": tf.TensorSpec([1, PREDICTIONS], tf.int32),
        "masked_lm_ids": tf.TensorSpec([1, PREDICTIONS], tf.int32),
        "masked_lm_weights": tf.TensorSpec([1, PREDICTIONS], tf.float32)}


def lookups(config, seq_len=SEQ):
  """The dense-look-up FLOPs the analytic count adds for token and position embeddings, which
  the graph does as gathers (segment embeddings are a one-hot matmul in Model Garden)."""
  return seq_len * 2 * config.embedding_size * (config.vocab_size + config.max_position_embeddings)


class FlopsCrossCheckTest(tf.test.TestCase):

  def test_encoder_forward_matches_the_traced_graph(self):
    for embedding_size in (32, 64):  # with and without the E→H projection
      config = EncoderConfig(vocab_size=500, hidden_size=64, num_layers=2, num_attention_heads=2,
                             intermediate_size=128, embedding_size=embedding_size,
                             max_position_embeddings=SEQ)
      encoder = TransformerEncoder(config)
      traced = tf.function(lambda ids, encoder=encoder: encoder(
          {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
           "input_type_ids": tf.zeros_like(ids)}, training=False)["sequence_output"])
      graph = flops.graph_matmul_flops(
          traced.get_concrete_function(tf.TensorSpec([1, SEQ], tf.int32)))
      analytic = flops.encoder_forward_flops(config, SEQ) - lookups(config)
      self.assertAllClose(graph, analytic, rtol=1e-9)

  def test_electra_training_flops_match_the_traced_forward(self):
    """train FLOPs / 2 (backward = forward) = the traced forward of generator, MLM head,
    discriminator and RTD head, plus the look-ups."""
    config = EncoderConfig(vocab_size=500, hidden_size=64, num_layers=2, num_attention_heads=2,
                           intermediate_size=128, embedding_size=32, max_position_embeddings=SEQ)
    model = electra.build_electra_pretrainer(config, generator_size=0.5)
    traced = tf.function(lambda batch: model(batch, training=False)["rtd_logits"])
    graph = flops.graph_matmul_flops(traced.get_concrete_function(SPEC))
    analytic = (model.train_flops_per_example(SEQ, PREDICTIONS) / 2
                - lookups(model.generator.config) - lookups(config))
    self.assertAllClose(graph, analytic, rtol=1e-9)

  def test_the_discriminators_masked_lm_term_matches_the_traced_graph(self):
    """With L_DMLM (μ decaying to 0 at step 10) the count adds the discriminator's masked-LM head
    until step 10, which the traced forward holds (in the branch of the tf.cond that runs it),
    and drops it from step 10, when the branch is skipped."""
    config = EncoderConfig(vocab_size=500, hidden_size=64, num_layers=2, num_attention_heads=2,
                           intermediate_size=128, embedding_size=32, max_position_embeddings=SEQ)
    model = electra.build_electra_pretrainer(config, generator_size=0.5,
                                             discriminator_mlm_weight=1.0,
                                             discriminator_mlm_steps=10)
    traced = tf.function(lambda batch: {name: tensor for name, tensor in model(
        batch, training=False).items() if name in ("rtd_logits", "discriminator_mlm_logits")})
    graph = flops.graph_matmul_flops(traced.get_concrete_function(SPEC))
    lookup = lookups(model.generator.config) + lookups(config)
    self.assertAllClose(graph, model.train_flops_per_example_at(9, SEQ, PREDICTIONS) / 2 - lookup,
                        rtol=1e-9)
    head = tf.function(lambda sequence, positions: model.discriminator_lm(sequence, positions))
    head_graph = flops.graph_matmul_flops(head.get_concrete_function(
        tf.TensorSpec([1, SEQ, 64], tf.float32), tf.TensorSpec([1, PREDICTIONS], tf.int32)))
    self.assertGreater(head_graph, 0)
    self.assertAllClose(model.train_flops_per_example_at(10, SEQ, PREDICTIONS) / 2,
                        model.train_flops_per_example_at(9, SEQ, PREDICTIONS) / 2 - head_graph,
                        rtol=1e-9)
    self.assertEqual(model.flops_change_steps(), (10,))


class DissertationTotalsTest(tf.test.TestCase):
  """Table 5.3's FLOPs, each within 2%. Its train column prints 1.4e18 for both BERT-Small and
  ELECTRA-Small ("the same training FLOPs"): that is BERT-Small's 1.45M steps (Table 5.1). The
  authors' own counter (google-research/electra `flops_computation.py`, which also counts
  LayerNorm, softmax, GELU, dropout and biases) gives ELECTRA-Small 1M steps 1.294e18 and BERT-Small
  1.419e18, so ELECTRA-Small is checked against 1.294e18."""

  SMALL = EncoderConfig(vocab_size=30522)  # Table 5.1 Small: 12 × 256, FFN 1024, 4 heads, E 128
  BASE = EncoderConfig(vocab_size=30522, hidden_size=768, num_attention_heads=12,
                       intermediate_size=3072, embedding_size=768)

  def test_inference_per_128_tokens(self):
    for config, table in ((self.SMALL, 3.7e9), (self.BASE, 2.9e10)):
      inference = (flops.encoder_forward_flops(config, 128)
                   + flops.rtd_head_flops(config.hidden_size, 128))
      self.assertAllClose(inference, table, rtol=0.02)

  def test_training_totals(self):
    electra_small = electra.build_electra_pretrainer(self.SMALL, generator_size=0.25)
    self.assertAllClose(1e6 * 128 * electra_small.train_flops_per_example(128, 19), 1.294e18,
                        rtol=0.02)
    bert_small = mlm.build_mlm_pretrainer(self.SMALL)
    self.assertAllClose(1.45e6 * 128 * bert_small.train_flops_per_example(128, 19), 1.4e18,
                        rtol=0.02)
    electra_base = electra.build_electra_pretrainer(self.BASE, generator_size=1 / 3)
    self.assertAllClose(766e3 * 256 * electra_base.train_flops_per_example(512, 79), 6.4e19,
                        rtol=0.02)


class TrainingGraphTensorSizeTest(tf.test.TestCase):
  """What an ELECTRA training step's forward + backward graph materializes."""

  def setUp(self):
    super().setUp()
    self.batch, self.vocab = 3, 500
    self.config = EncoderConfig(
        vocab_size=self.vocab, hidden_size=64, num_layers=2, num_attention_heads=2,
        intermediate_size=128, embedding_size=32, max_position_embeddings=SEQ)
    self.graph = self.training_graph()

  def training_graph(self):
    batch, config = self.batch, self.config
    model = electra.build_electra_pretrainer(config, generator_size=0.5)
    spec = {"input_word_ids": tf.TensorSpec([batch, SEQ], tf.int32),
            "input_mask": tf.TensorSpec([batch, SEQ], tf.int32),
            "input_type_ids": tf.TensorSpec([batch, SEQ], tf.int32),
            "masked_lm_positions": tf.TensorSpec([batch, PREDICTIONS], tf.int32),
            "masked_lm_ids": tf.TensorSpec([batch, PREDICTIONS], tf.int32),
            "masked_lm_weights": tf.TensorSpec([batch, PREDICTIONS], tf.float32)}

    def step(inputs):
      with tf.GradientTape() as tape:
        loss = model.compute_losses(inputs, model(inputs, training=True))["total_loss"].value
      return tape.gradient(loss, model.trainable_variables)

    return tf.function(step).get_concrete_function(spec).graph

  def outputs(self):
    return [t for op in self.graph.get_operations() for t in op.outputs
            if t.shape.rank is not None]

  def test_never_builds_batch_by_seq_by_vocab(self):
    """The generator computes vocabulary logits only at the masked positions."""
    shapes = [tuple(t.shape.as_list()) for t in self.outputs()]
    self.assertIn((self.batch, PREDICTIONS, self.vocab), shapes)  # the logits that do exist
    self.assertNotIn((self.batch, SEQ, self.vocab), shapes)

  def test_no_tensor_larger_than_the_math_needs(self):
    """Nothing is bigger than the largest activation, attention map, masked-position logits or
    weight; an E→H projection written `...x,xy->...y` fails this (its kernel gradient is an
    [E, H, batch, seq_len] outer product)."""
    c, batch = self.config, self.batch
    bound = max(batch * SEQ * c.intermediate_size, batch * c.num_attention_heads * SEQ * SEQ,
                batch * PREDICTIONS * c.vocab_size, c.vocab_size * c.embedding_size)
    sizes = {t.name: t.shape.num_elements() for t in self.outputs()
             if t.shape.is_fully_defined()}
    largest = max(sizes, key=sizes.get)
    self.assertLessEqual(sizes[largest], bound, largest)


if __name__ == "__main__":
  tf.test.main()
