r"""Fine-tuning throughput of `run_glue` and `run_squad` (training examples/s), fp32 and bf16.

  python benchmarks/finetune_throughput.py

A randomly initialised ELECTRA-Small-shaped encoder (hidden 256, 12 layers, vocab of the shipped
sample) exported as run_pretraining would; SST-2 (2,000 training examples, 128 tokens, batch 32,
one epoch) and the SQuAD v1.1 sample (384-token windows, stride 128, batch 16, one epoch). The rate
is the last progress line's examples/s (training only, after tracing).
"""
import os
import re
import tempfile
import types

from absl import app
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import glue
from official_rtd.finetune import squad
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.training import export

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")


def main(_):
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  print(precision.cpu_summary())  # figures from different CPUs are not comparable
  tmp = tempfile.mkdtemp()
  vocab = vocab_lib.load_vocab(os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"))
  config = EncoderConfig(vocab_size=vocab.size, hidden_size=256, num_layers=12,
                         num_attention_heads=4, intermediate_size=1024, embedding_size=128)
  encoder = export.build_encoder({"encoder": config.to_json()})
  export_dir = export.export_encoder(types.SimpleNamespace(exported_encoder=encoder, name="random"),
                                     vocab, tmp, max_seq_length=512)
  for precision in ("float32", "bfloat16"):
    runs = {
        "run_glue SST-2": lambda log, p=precision: glue.GlueRunner(glue.GlueConfig(
            task="sst-2", init_checkpoint=export_dir, data_dir=os.path.join(SHARED, "glue", "SST-2"),
            model_dir=os.path.join(tmp, f"glue_{p}"), max_train_examples=2000,
            num_train_epochs=1, log_every_steps=20, mixed_precision=p), log=log).run(),
        "run_squad v1.1": lambda log, p=precision: squad.SquadRunner(squad.SquadConfig(
            train_file=os.path.join(SHARED, "squad", "train-v1.1-sample.json"),
            predict_file=os.path.join(SHARED, "squad", "train-v1.1-sample.json"),
            init_checkpoint=export_dir, model_dir=os.path.join(tmp, f"squad_{p}"),
            max_seq_length=384, train_batch_size=16, num_train_epochs=1, log_every_steps=20,
            mixed_precision=p), log=log).run(),
    }
    for name, run in runs.items():
      lines = []
      run(lines.append)
      rates = [float(m.group(1)) for l in lines for m in [re.search(r"examples/s=([\d.]+)", l)] if m]
      print(f"{name} ({precision}): {rates[-1]:.1f} training examples/s")


if __name__ == "__main__":
  tf.get_logger().setLevel("ERROR")
  app.run(main)
