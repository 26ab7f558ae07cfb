"""ELECTRA's question-answering head (the XLNet-style module of ELECTRA's `qa_tasks.py`).

Start logits from a linear layer; end logits conditioned on the start: a 512-unit GELU layer over
`[h_start; h_end]` then a linear layer (teacher-forced on the gold start in training, beam search
over the top `beam_size` starts at inference); for SQuAD 2.0 an answerability classifier over
`[h_CLS; Σ_i softmax(start)_i h_i]` whose logit is the *unanswerable* score. `joint=False` gives
BERT's independent start/end head for comparison. Positions outside the context (except `[CLS]`)
get -1000 added to their logits, as in ELECTRA.
"""
from typing import Dict

import tensorflow as tf
import tf_keras

from official_rtd.modeling.networks import transformer_encoder

HIDDEN_UNITS = 512  # ELECTRA's `qa_hidden` and answerability layer width


class SpanQuestionAnswerer(tf_keras.Model):
  """`call(inputs, start_positions=None)` returns a dict of named outputs:

  - `start_logits`: `[batch, seq_len]`.
  - `end_logits`: `[batch, seq_len]` (joint head: conditioned on `start_positions`; given only
    when they are, or when `joint=False`).
  - `answerable_logit`: `[batch]` logit that the question is *unanswerable* (with `version_2`).
  - joint head without `start_positions`: `start_top_log_probs`/`start_top_index` `[batch, beam]`
    and `end_top_log_probs`/`end_top_index` `[batch, beam, beam]`.
  """

  def __init__(self, encoder, joint: bool = True, version_2: bool = True, beam_size: int = 20,
               **kwargs):
    super().__init__(autocast=False, **kwargs)
    self.encoder = encoder
    self.joint = joint
    self.version_2 = version_2
    self.beam_size = beam_size
    init = transformer_encoder.initializer(encoder.config)
    # The head is small: it computes in float32 under any mixed-precision policy.
    dense = lambda units, name, **kw: tf_keras.layers.Dense(  # pylint: disable=g-long-lambda
        units, kernel_initializer=init, name=name, dtype="float32", **kw)
    self.start_dense = dense(1, "start_logits")
    if joint:
      # One Dense over [h_start; h_end], split into its two halves so inference never
      # materialises a [batch, beam, seq_len, 2·hidden] concatenation.
      self.end_hidden_start = dense(HIDDEN_UNITS, "qa_hidden_start", use_bias=False)
      self.end_hidden_end = dense(HIDDEN_UNITS, "qa_hidden_end")
    self.end_dense = dense(1, "end_logits")
    if version_2:
      self.answerable_hidden = dense(HIDDEN_UNITS, "answerable_hidden",
                                     activation=transformer_encoder.gelu)
      self.answerable_dense = dense(1, "answerable_logit")

  def call(self, inputs, start_positions=None, training=None) -> Dict[str, tf.Tensor]:
    hidden = tf.cast(self.encoder(inputs, training=training)["sequence_output"], tf.float32)
    seq_len = tf.shape(hidden)[1]
    # 1 on context tokens and [CLS], 0 elsewhere: [batch, seq_len]
    answer_mask = tf.cast(inputs["input_mask"] * inputs["input_type_ids"], tf.float32)
    answer_mask = tf.maximum(answer_mask, tf.one_hot(0, seq_len)[None])
    penalty = 1000.0 * (answer_mask - 1.0)
    start_logits = tf.squeeze(self.start_dense(hidden), -1) + penalty
    outputs = {"start_logits": start_logits}
    if not self.joint:
      outputs["end_logits"] = tf.squeeze(self.end_dense(hidden), -1) + penalty
    elif start_positions is not None:
      h_start = tf.gather(hidden, start_positions, batch_dims=1)  # [batch, hidden]
      outputs["end_logits"] = self._end_logits(h_start[:, None], hidden) + penalty
    else:
      start_log_probs = tf.nn.log_softmax(start_logits)
      top_log_probs, top_index = tf.math.top_k(start_log_probs, k=self.beam_size)
      h_start = tf.gather(hidden, top_index, batch_dims=1)  # [batch, beam, hidden]
      end_logits = self._end_logits(h_start[:, :, None], hidden[:, None]) + penalty[:, None]
      end_top_log_probs, end_top_index = tf.math.top_k(tf.nn.log_softmax(end_logits),
                                                       k=self.beam_size)
      outputs.update(start_top_log_probs=top_log_probs, start_top_index=top_index,
                     end_top_log_probs=end_top_log_probs, end_top_index=end_top_index)
    if self.version_2:
      start_p = tf.nn.softmax(start_logits)
      start_feature = tf.einsum("bs,bsh->bh", start_p, hidden)
      features = self.answerable_hidden(tf.concat([hidden[:, 0], start_feature], -1))
      outputs["answerable_logit"] = tf.squeeze(self.answerable_dense(features), -1)
    return outputs

  def _end_logits(self, h_start, h_end):
    """`gelu(W [h_start; h_end] + b)` then linear; broadcasts over leading dims."""
    return tf.squeeze(self.end_dense(transformer_encoder.gelu(
        self.end_hidden_start(h_start) + self.end_hidden_end(h_end))), -1)


def loss(outputs, start_positions, end_positions, is_impossible,
         answerable_weight: float = 0.5) -> tf.Tensor:
  """ELECTRA's loss: mean over the batch of (CE(start) + CE(end)) / 2 + w · BCE(unanswerable)."""
  start = tf.nn.sparse_softmax_cross_entropy_with_logits(start_positions,
                                                         outputs["start_logits"])
  end = tf.nn.sparse_softmax_cross_entropy_with_logits(end_positions, outputs["end_logits"])
  per_example = (start + end) / 2.0
  if "answerable_logit" in outputs:
    per_example += answerable_weight * tf.nn.sigmoid_cross_entropy_with_logits(
        tf.cast(is_impossible, tf.float32), outputs["answerable_logit"])
  return tf.reduce_mean(per_example)
