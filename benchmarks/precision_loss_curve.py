r"""bfloat16 (and float16) mixed precision vs float32: the same 300 steps on real text.

  python benchmarks/precision_loss_curve.py --steps=300 --precisions=float32,bfloat16

Tiny ELECTRA (hidden 128, 2 layers, generator 1/4) on the shipped Gutenberg sample (vocab learned
from it), batch 32 × 64 tokens, same seed and data order; prints the losses every 50 steps per
precision and the largest difference from float32.
"""
import os
import tempfile

from absl import app
from absl import flags
import tensorflow as tf

import common
from official_rtd import runs
from official_rtd.data import pretraining_data
from official_rtd.methods import electra
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import optimization
from official_rtd.training import trainer as trainer_lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_integer("steps", 300, "Training steps per precision.")
flags.DEFINE_list("precisions", ["float32", "bfloat16"], "Precisions to compare.")
FLAGS = flags.FLAGS


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  tmp = tempfile.mkdtemp()
  records = pretraining_data.vocab_and_records(
      tmp, [os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt")], 8000,
      log=lambda _: None)
  curves = {}
  for precision in FLAGS.precisions:
    logged = []
    trainer = runs.build_trainer(
        os.path.join(tmp, precision), records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(train_batch_size=32, num_train_steps=FLAGS.steps,
                                             max_seq_length=64, max_predictions_per_seq=10,
                                             log_every_steps=50, save_checkpoints_steps=FLAGS.steps,
                                             mixed_precision=precision),
        optimizer_config=optimization.OptimizerConfig(learning_rate=1e-3, warmup_steps=30),
        encoder_config=EncoderConfig(hidden_size=128, num_layers=2, num_attention_heads=2,
                                     intermediate_size=512, embedding_size=128,
                                     max_position_embeddings=128),
        model_fn=electra.build_electra_pretrainer, log=lambda _: None)
    trainer.reporter.add_listener(  # the trainer's reporting hook: every training row
        lambda kind, row, logged=logged: logged.append(row) if kind == "train" else None)
    trainer.train()
    curves[precision] = logged
  table = common.TableWriter(["step", *[f"{p} mlm / rtd" for p in FLAGS.precisions]])
  for rows in zip(*curves.values()):
    table.row(rows[0]["step"], *[f"{r['mlm_loss']:.3f} / {r['rtd_loss']:.4f}" for r in rows])
  reference = curves[FLAGS.precisions[0]]
  for precision in FLAGS.precisions[1:]:
    for name in ("mlm_loss", "rtd_loss"):
      worst = max(abs(a[name] - b[name]) / abs(a[name])
                  for a, b in zip(reference, curves[precision]))
      print(f"{precision} vs {FLAGS.precisions[0]}: largest relative {name} difference "
            f"{worst:.2%}")


if __name__ == "__main__":
  app.run(main)
