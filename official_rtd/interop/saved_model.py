"""A TF SavedModel of an encoder that takes raw text: the tensorflow-text tokenizer (WordPiece or
SentencePiece) runs inside the graph (TF Hub's preprocessing + encoder convention, in one model).

  model = tf.saved_model.load(path)
  out = model.signatures["serving_default"](tf.constant(["The cat sat."]))
  out["sequence_output"]  # [batch, seq_len, hidden]; also input_word_ids, input_mask,
                          # cls_output ([batch, hidden]) and, with an RTD head, rtd_logits

Each text becomes `[CLS] pieces [SEP]`, cut to `max_seq_length`, padded to the batch's longest.
"""
import os
import shutil

import tensorflow as tf

from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib


class TextEncoder(tf.Module):
  """Tokenizer + encoder (+ optional RTD head) behind a string signature."""

  def __init__(self, encoder, tokenizer: tokenizer_lib.Tokenizer, max_seq_length: int,
               rtd_head=None):
    super().__init__(name="text_encoder")
    self.encoder = encoder
    self.rtd_head = rtd_head
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length
    vocab = tokenizer.vocab
    self.cls_id, self.sep_id, self.pad_id = vocab.cls_id, vocab.sep_id, vocab.pad_id

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
  def serve(self, text):
    pieces = tf.cast(self.tokenizer.tokenize(text), tf.int32)[:, :self.max_seq_length - 2]
    batch = pieces.nrows()
    ids = tf.concat([tf.fill([batch, 1], self.cls_id), pieces,
                     tf.fill([batch, 1], self.sep_id)], axis=1).to_tensor(self.pad_id)
    mask = tf.cast(tf.not_equal(ids, self.pad_id), tf.int32)
    sequence = self.encoder({"input_word_ids": ids, "input_mask": mask,
                             "input_type_ids": tf.zeros_like(ids)},
                            training=False)["sequence_output"]
    outputs = {"input_word_ids": ids, "input_mask": mask,
               "sequence_output": tf.cast(sequence, tf.float32),
               "cls_output": tf.cast(sequence[:, 0], tf.float32)}
    if self.rtd_head is not None:
      outputs["rtd_logits"] = self.rtd_head(sequence)
    return outputs


def export_saved_model(model, vocab: vocab_lib.Vocab, output_dir: str, do_lower_case: bool = True,
                       max_seq_length: int = 512) -> str:
  """Writes the model's exported encoder (with ELECTRA's RTD head when it sits on it) as a
  SavedModel with a `serving_default` signature over raw strings; temp directory, then rename."""
  tokenizer = tokenizer_lib.for_vocab(vocab, do_lower_case)
  if not tokenizer.in_graph:
    raise ValueError(f"{vocab.path}: a {vocab.kind} tokenizer runs in Python, not inside a "
                     "TensorFlow graph, so it cannot serve raw text in a SavedModel: export "
                     "--format=huggingface (its tokenizer.json goes with it), or use a WordPiece "
                     "or SentencePiece vocabulary")
  encoder = model.exported_encoder.for_export()
  rtd_head = model.exported_heads().rtd_head
  module = TextEncoder(encoder, tokenizer,
                       min(max_seq_length, encoder.config.max_position_embeddings), rtd_head)
  tmp = f"{output_dir.rstrip('/')}.tmp-{os.getpid()}"
  shutil.rmtree(tmp, ignore_errors=True)
  tf.saved_model.save(module, tmp, signatures={"serving_default": module.serve})
  shutil.rmtree(output_dir, ignore_errors=True)
  os.replace(tmp, output_dir)
  return output_dir
