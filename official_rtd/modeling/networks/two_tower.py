"""Two-tower cloze model (Baevski et al., 2019), Electric's noise distribution q.

Two Transformers over the same embeddings, one attending only leftwards (T_LTR, causal mask) and one
only rightwards (T_RTL); for every position t

  q(x_t | x∖t) = softmax(W [h→_{t−1}; h←_{t+1}])_{x_t}                  (dissertation §5.1.5)

from the *previous* states, so position t never sees its own token. All n distributions come from
one pass. The output layer ties to the token embeddings like a masked LM's. With T5 relative
positions each tower has its own position biases; with pre-LayerNorm blocks each tower ends in a
LayerNorm, as `TransformerEncoder` does.
"""
from official.nlp.modeling import layers
import tensorflow as tf
import tf_keras

from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.layers.embeddings import Embeddings
from official_rtd.modeling.layers.layer_norm import LayerNorm
from official_rtd.modeling.networks import transformer_encoder


def directional_attention_mask(input_mask: tf.Tensor, left_to_right: bool) -> tf.Tensor:
  """`[batch, seq_len, seq_len]` 1 where query t may attend key s: s ≤ t (LTR) or s ≥ t (RTL),
  and s is not padding."""
  seq_len = tf.shape(input_mask)[1]
  ones = tf.ones([seq_len, seq_len], tf.int32)
  direction = (tf.linalg.band_part(ones, -1, 0) if left_to_right
               else tf.linalg.band_part(ones, 0, -1))
  return direction[tf.newaxis] * tf.cast(input_mask, tf.int32)[:, tf.newaxis, :]


class TwoTowerClozeModel(tf_keras.layers.Layer):
  """`call(inputs)` -> `{"logits": [batch, seq_len, vocab]}` of q(· | x∖t) at every position."""

  def __init__(self, config: EncoderConfig, embeddings: Embeddings = None, **kwargs):
    super().__init__(**kwargs)
    transformer_encoder.check_position_embedding(config)
    self.config = config
    self.embeddings = embeddings or transformer_encoder.build_embeddings(config)
    self.embedding_projection = None
    if config.embedding_size != config.hidden_size:
      self.embedding_projection = transformer_encoder.embedding_projection_layer(config)

    def tower(name):
      bias = (transformer_encoder.relative_position_bias(config, f"{name}/relative_position_bias")
              if config.position_embedding == "t5_relative" else None)
      final_norm = (LayerNorm(epsilon=1e-12, name=f"{name}/final_layer_norm")
                    if config.norm_first else None)
      return [transformer_encoder.transformer_block(config, f"{name}/layer_{i}", bias)
              for i in range(config.num_layers)], final_norm

    self.ltr_layers, self.ltr_final_norm = tower("left_to_right")
    self.rtl_layers, self.rtl_final_norm = tower("right_to_left")
    self.output_layer = layers.MaskedLM(
        embedding_table=self.embeddings.embedding_table, activation=transformer_encoder.gelu,
        initializer=transformer_encoder.initializer(config), output="logits", name="cloze_output")

  def get_embedding_table(self):
    return self.embeddings.embedding_table

  def call(self, inputs, training=None):
    x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
    if self.embedding_projection is not None:
      x = self.embedding_projection(x)
    forward, backward = x, x
    ltr_mask = directional_attention_mask(inputs["input_mask"], left_to_right=True)
    rtl_mask = directional_attention_mask(inputs["input_mask"], left_to_right=False)
    for layer in self.ltr_layers:
      forward = layer([forward, ltr_mask], training=training)
    for layer in self.rtl_layers:
      backward = layer([backward, rtl_mask], training=training)
    if self.ltr_final_norm is not None:  # pre-LayerNorm blocks
      forward, backward = self.ltr_final_norm(forward), self.rtl_final_norm(backward)
    # h→_{t−1} and h←_{t+1}: shift the towers by one position, with zeros past the ends and at
    # padding (a padding query attends uniformly to every key, its state must not be used).
    real = tf.cast(inputs["input_mask"], forward.dtype)[..., tf.newaxis]
    previous = tf.pad((forward * real)[:, :-1], [[0, 0], [1, 0], [0, 0]])
    following = tf.pad((backward * real)[:, 1:], [[0, 0], [0, 1], [0, 0]])
    states = tf.concat([previous, following], axis=-1)
    seq_len = tf.shape(states)[1]
    positions = tf.tile(tf.range(seq_len)[tf.newaxis], [tf.shape(states)[0], 1])
    return {"logits": tf.cast(self.output_layer(states, positions), tf.float32)}
