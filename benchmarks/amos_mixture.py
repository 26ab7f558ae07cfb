r"""AMOS on real text: how the learned mixture over the generator's heads moves during training
(the paper's Figure 5a), against the uniform-average ablation, at tiny scale.

  python benchmarks/amos_mixture.py --steps=300

A 2-layer, hidden-64 discriminator; a 3-layer generator of its width with heads after layers 1, 2, 3;
300 real paragraphs of the shipped Gutenberg sample, batch 16 × 64 tokens. Prints the first and last
logged per-head MLM losses, RTD loss/accuracy and mean mixture weight per head.
"""
import functools
import os
import tempfile

from absl import app
from absl import flags
import tensorflow as tf

import common
from official_rtd import runs
from official_rtd.data import pretraining_data
from official_rtd.methods import amos
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import optimization
from official_rtd.training import trainer as trainer_lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_integer("steps", 300, "Training steps per mixture.")
FLAGS = flags.FLAGS
KEYS = ["mlm_loss_layer_1", "mlm_loss_layer_2", "mlm_loss_layer_3", "rtd_loss", "rtd_accuracy",
        "mixture_weight_layer_1", "mixture_weight_layer_2", "mixture_weight_layer_3"]


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  tmp = tempfile.mkdtemp()
  with open(os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt"),
            encoding="utf-8") as f:
    paragraphs = [line.strip() for line in f if line.strip()][4:304]
  corpus = os.path.join(tmp, "corpus.txt")
  with open(corpus, "w", encoding="utf-8") as f:
    f.write("\n".join(paragraphs) + "\n")
  records = os.path.join(tmp, "records")
  pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
      input_files=(corpus,), vocab_file=os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"),
      output_dir=records, max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2,
      num_shards=2, num_workers=1), log=lambda _: None)
  for mixture in ("adversarial", "average"):
    logged = []
    trainer = runs.build_trainer(
        os.path.join(tmp, mixture), records, tf.distribute.get_strategy(),
        train_config=trainer_lib.TrainConfig(train_batch_size=16, num_train_steps=FLAGS.steps,
                                             max_seq_length=64, max_predictions_per_seq=10,
                                             log_every_steps=50, save_checkpoints_steps=FLAGS.steps),
        optimizer_config=optimization.OptimizerConfig(learning_rate=2e-3, warmup_steps=10),
        encoder_config=EncoderConfig(hidden_size=64, num_layers=2, num_attention_heads=2,
                                     intermediate_size=128, embedding_size=64,
                                     max_position_embeddings=64),
        model_fn=functools.partial(amos.build_amos_pretrainer, mlm_layers=(1, 2, 3),
                                   mixture=mixture), log=lambda _: None)
    trainer.reporter.add_listener(  # the trainer's reporting hook: every training row
        lambda kind, row, logged=logged: logged.append(row) if kind == "train" else None)
    trainer.train()
    for row in (logged[0], logged[-1]):
      print(mixture, f"step {row['step']}", {k: round(float(row[k]), 3) for k in KEYS})


if __name__ == "__main__":
  app.run(main)
