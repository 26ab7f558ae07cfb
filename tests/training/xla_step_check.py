"""Run as a script, `xla_step_check.py TASK` (a process of its own, so that XLA reads the
`XLA_FLAGS` its test gives): a fresh model of `gin/tasks/TASK` and its whole replica step, traced
with static shapes, once compiled by XLA and once not, on the same weights and batch. Prints JSON:
each one's losses, whether both started from the same weights, how many weights the compiled step
moved, and the cosine between the two updates."""
import json
import sys

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd import runs
from official_rtd.data import vocab as vocab_lib
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import optimization
from official_rtd.training import train_step
from tests import testutil

SIZES = ["EncoderConfig.hidden_size = 16", "EncoderConfig.num_layers = 1",
         "EncoderConfig.intermediate_size = 32", "EncoderConfig.num_attention_heads = 2",
         "EncoderConfig.embedding_size = 16", "EncoderConfig.dropout_rate = 0.0",
         "EncoderConfig.attention_dropout_rate = 0.0"]
# One layer compiles the same ops as more in less time, except where a method needs more: AMOS's
# generator is as deep as its last MLM head (8 layers in its gin file; two heads on two layers
# compile the same ops in a third of the time), TEAMS' discriminator shares layers below its top.
TASK_SIZES = {"amos.gin": ["build_amos_pretrainer.mlm_layers = (1, 2)"],
              "teams.gin": ["EncoderConfig.num_layers = 2"]}
BATCH, LENGTH, POSITIONS = 4, 16, (2, 5, 7)


def batch_of(vocab):
  ids = np.random.default_rng(0).integers(5, vocab.size, size=[BATCH, LENGTH]).astype(np.int32)
  ids[:, 0], ids[:, -1] = vocab.cls_id, vocab.sep_id
  positions = np.tile([POSITIONS], [BATCH, 1]).astype(np.int32)
  return {"input_word_ids": tf.constant(ids), "input_mask": tf.ones([BATCH, LENGTH], tf.int32),
          "input_type_ids": tf.zeros([BATCH, LENGTH], tf.int32),
          "masked_lm_positions": tf.constant(positions),
          "masked_lm_ids": tf.constant(np.take_along_axis(ids, positions, 1)),
          "masked_lm_weights": tf.ones([BATCH, len(POSITIONS)]),
          train_step.SAMPLING_SEED: tf.constant([7, 1], tf.int64)}


def built_step(task: str, vocab, batch, jit: bool):
  """A fresh model of `task` (seeded: the same initial weights each time) and its replica step."""
  gin.clear_config()
  runs.parse_gin(["gin/models/tiny.gin", f"gin/tasks/{task}"], SIZES + TASK_SIZES.get(task, []),
                log=lambda _: None)
  tf_keras.utils.set_random_seed(0)
  model = registry.pretraining_model(EncoderConfig(vocab_size=vocab.size), vocab=vocab,
                                        token_counts=lambda: np.arange(vocab.size))
  model(batch, training=False)
  # ε = 1: AdamW's first update is ≈ −lr·g (with the default 1e-6 it is ±lr wherever g is not
  # ~0, and float noise flips the sign of near-zero gradients), so updates compare by direction.
  optimizer = optimization.build_optimizer(
      optimization.OptimizerConfig(warmup_steps=0, epsilon=1.0), 10)
  optimizer._create_all_weights(model.trainable_variables)  # pylint: disable=protected-access
  step = train_step.TrainStep(model, optimizer, 1.0, model.build_metrics())
  return model, tf.function(step, jit_compile=jit)


def main(task):
  vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
  batch = batch_of(vocab)
  results = {}
  for jit in (True, False):
    model, step = built_step(task, vocab, batch, jit)
    initial = [v.numpy() for v in model.trainable_variables]
    losses = {name: float(loss.value) for name, loss in step(batch).items()}
    results[jit] = losses, initial, [v.numpy() for v in model.trainable_variables]
  (jit_losses, jit_initial, jit_weights), (losses, initial, weights) = results[True], results[False]
  # The same update, compared by direction over all weights (a wrong gradient or a part left
  # out would not align).
  jit_update = np.concatenate([(b - a).ravel() for a, b in zip(jit_initial, jit_weights)])
  update = np.concatenate([(b - a).ravel() for a, b in zip(initial, weights)])
  print(json.dumps({
      "jit_losses": jit_losses, "losses": losses,
      "same_start": all(np.array_equal(a, b) for a, b in zip(jit_initial, initial)),
      "moved": sum(not np.array_equal(a, b) for a, b in zip(jit_initial, jit_weights)),
      "weights": len(jit_weights),
      "cosine": float(jit_update @ update / (np.linalg.norm(jit_update) * np.linalg.norm(update)))}))


if __name__ == "__main__":
  main(sys.argv[1])
