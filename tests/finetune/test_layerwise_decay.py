"""Layer-wise LR decay: the multipliers of both conventions, and the rates an Adam step applies."""
import numpy as np
import tensorflow as tf

from official_rtd.finetune import layerwise_decay
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from tests.finetune import toy_classifier


def _model():
  encoder = TransformerEncoder(EncoderConfig(
      vocab_size=30, hidden_size=8, num_layers=3, num_attention_heads=2, intermediate_size=16,
      embedding_size=4, max_position_embeddings=8, dropout_rate=0.0, attention_dropout_rate=0.0),
      name="encoder")
  model = toy_classifier.Classifier(encoder, 2, dropout_rate=0.0)
  ids = tf.constant([[2, 5, 6, 7, 3]])
  inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)}
  model(inputs)
  return model, encoder, inputs


def _by_part(model, encoder, multipliers):
  """{part: set of multipliers}, parts = embeddings, projection, layer_i, head."""
  parts = {"embeddings": encoder.embeddings, "projection": encoder.embedding_projection,
           "head": model.head}
  parts.update({f"layer_{i}": l for i, l in enumerate(encoder.transformer_layers)})
  return {name: {round(multipliers[v.name], 10) for v in layer.trainable_variables}
          for name, layer in parts.items()}


class LayerwiseDecayTest(tf.test.TestCase):

  def test_multipliers_both_conventions(self):
    model, encoder, _ = _model()
    d, L = 0.8, 3
    electra = _by_part(model, encoder,
                       layerwise_decay.learning_rate_multipliers(model, encoder, d, "electra"))
    self.assertEqual(electra["head"], {1.0})
    self.assertEqual(electra["layer_2"], {round(d ** 2, 10)})           # top layer: lr·d²
    self.assertEqual(electra["layer_0"], {round(d ** (L + 1), 10)})      # layer i: lr·d^(L+1−i)
    self.assertEqual(electra["embeddings"], {round(d ** (L + 2), 10)})   # embeddings: lr·d^(L+2)
    self.assertEqual(electra["projection"], {round(d ** (L + 2), 10)})
    corrected = _by_part(model, encoder,
                         layerwise_decay.learning_rate_multipliers(model, encoder, d, "corrected"))
    self.assertEqual(corrected["head"], {1.0})
    self.assertEqual(corrected["layer_2"], {round(d, 10)})
    self.assertEqual(corrected["embeddings"], {round(d ** (L + 1), 10)})
    with self.assertRaisesRegex(ValueError, "convention"):
      layerwise_decay.learning_rate_multipliers(model, encoder, d, "bert")

  def test_first_adam_step_moves_each_variable_by_its_rate(self):
    """Adam's first update is lr_eff · g/(|g| + ε') ≈ lr_eff · sign(g) per element."""
    model, encoder, inputs = _model()
    multipliers = layerwise_decay.learning_rate_multipliers(model, encoder, 0.5, "corrected")
    lr = 1e-2
    optimizer = layerwise_decay.LayerwiseAdamWeightDecay(multipliers, learning_rate=lr,
                                                         epsilon=1e-12, gradient_clip_norm=0.0)
    before = [v.numpy() for v in model.trainable_variables]
    with tf.GradientTape() as tape:
      loss = toy_classifier.loss(model(inputs), tf.constant([1]))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    checked = 0
    for variable, old, grad in zip(model.trainable_variables, before, grads):
      grad = tf.convert_to_tensor(grad).numpy()
      moved = np.abs(variable.numpy() - old)[np.abs(grad) > 1e-6]
      if moved.size:
        self.assertAllClose(moved, np.full_like(moved, lr * multipliers[variable.name]),
                            rtol=1e-3, msg=variable.name)
        checked += 1
    self.assertGreater(checked, 20)


if __name__ == "__main__":
  tf.test.main()
