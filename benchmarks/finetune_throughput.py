r"""Fine-tuning throughput of `run_glue` and `run_squad` (training examples/s, fp32 and bf16),
and SQuAD prediction (windows/s).

  python benchmarks/finetune_throughput.py [--notrain] [--predict_batch_sizes=16,32,64,128]

Training: a randomly initialised ELECTRA-Small-shaped encoder (hidden 256, 12 layers, vocab of the
shipped sample) exported as run_pretraining would; SST-2 (2,000 training examples, 128 tokens,
batch 32, one epoch) and the SQuAD v1.1 sample (384-token windows, stride 128, batch 16, one epoch).
The rate is the last progress line's examples/s (training only, after tracing).

Prediction: `run_squad`'s joint head (beam 20, SQuAD 2.0 answerability) over random windows whose
context starts at token 20, for the tiny (hidden 128, 2 layers) and Small encoders at 128 and 512
tokens: the previous path (a plain `tf.function` per batch of 32, after one warm-up batch)
against `trial_steps.predict` (XLA, padded batches) at each batch size, whose rate excludes the first
batch (its compilation), as `run_squad`'s log line does; the two paths' beams are compared.
"""
import os
import re
import tempfile
import types

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

import common
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune.glue import task as glue
from official_rtd.finetune.squad import span_head
from official_rtd.finetune.squad import task as squad
from official_rtd.interop import export
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.trials import steps as trial_steps

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
flags.DEFINE_bool("train", True, "Time fine-tuning (run_glue, run_squad training).")
flags.DEFINE_bool("predict", True, "Time SQuAD prediction (windows/s).")
flags.DEFINE_list("predict_batch_sizes", ["16", "32", "64", "128"], "Batch sizes to time.")
flags.DEFINE_integer("predict_windows", 512, "Windows per timing.")
flags.DEFINE_list("predict_encoders", ["tiny", "Small"], "Encoders to time prediction with.")
flags.DEFINE_list("precisions", ["float32", "bfloat16"], "Precisions to time training in (bfloat16 "
                  "is emulated, and many times slower, on a CPU without AVX512_BF16/AMX).")
FLAGS = flags.FLAGS


def squad_windows(rows, seq_len, vocab_size):
  rng = np.random.default_rng(0)
  types_ = np.zeros([rows, seq_len], np.int32)
  types_[:, 20:] = 1
  return {"input_word_ids": rng.integers(5, vocab_size, [rows, seq_len]).astype(np.int32),
          "input_mask": np.ones([rows, seq_len], np.int32), "input_type_ids": types_}


def time_prediction():
  """Prints windows/s of the previous and the XLA prediction path."""
  sizes = {"tiny": EncoderConfig(vocab_size=8000, hidden_size=128, num_layers=2,
                                 num_attention_heads=2, intermediate_size=512,
                                 embedding_size=128),
           "Small": EncoderConfig(vocab_size=30522)}
  unknown = set(FLAGS.predict_encoders) - set(sizes)
  if unknown or not all(b.isdigit() and int(b) > 0 for b in FLAGS.predict_batch_sizes):
    raise app.UsageError(f"--predict_encoders takes {sorted(sizes)} (got {sorted(unknown)}); "
                         "--predict_batch_sizes takes positive integers")
  table = common.TableWriter(["encoder", "seq", "previous path, batch 32",
                              *[f"XLA, batch {b}" for b in FLAGS.predict_batch_sizes],
                              "best speed-up", "same end beams", "max Δ end log-prob"])
  for name, config in sizes.items():
    if name not in FLAGS.predict_encoders:
      continue
    for seq_len in (128, 512):
      model = span_head.SpanQuestionAnswerer(TransformerEncoder(config), beam_size=20)
      windows = squad_windows(FLAGS.predict_windows, seq_len, config.vocab_size)
      model({k: v[:1] for k, v in windows.items()}, training=False)
      plain = tf.function(lambda batch, m=model: m(batch, training=False))
      plain({k: v[:32] for k, v in windows.items()})  # warm-up
      outputs = []

      def previous_path(windows=windows, plain=plain, outputs=outputs):
        for begin in range(0, len(windows["input_word_ids"]), 32):
          out = plain({k: v[begin:begin + 32] for k, v in windows.items()})
          outputs.append({k: out[k].numpy() for k in ("end_top_index", "end_top_log_probs")})
      before = (len(windows["input_word_ids"])
                / common.timed(previous_path, warmup=0, repeats=1).median)
      reference = {k: np.concatenate([o[k] for o in outputs]) for k in outputs[0]}
      rates, same, delta = [], [], 0.0
      for batch_size in map(int, FLAGS.predict_batch_sizes):
        logs = []
        fast = trial_steps.predict(lambda batch, m=model: m(batch, training=False), windows,
                              batch_size, logs.append, "windows")
        rates.append(float(re.search(r"\((\d+)/s after compilation\)", logs[-1]).group(1)))
        # Beams of equal log-probability may come out in another order: count identical beams,
        # and compare the (sorted) log-probabilities themselves.
        same.append(float(np.mean(np.all(fast["end_top_index"] == reference["end_top_index"],
                                          axis=-1))))
        delta = max(delta, float(np.abs(fast["end_top_log_probs"]
                                        - reference["end_top_log_probs"]).max()))
      table.row(name, seq_len, f"{before:.0f}", *[f"{r:.0f}" for r in rates],
                f"{max(rates) / before:.1f}×", f"{min(same):.2%}", f"{delta:.1e}")


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  if FLAGS.predict:
    time_prediction()
  if not FLAGS.train:
    return
  tmp = tempfile.mkdtemp()
  vocab = vocab_lib.load_vocab(os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"))
  config = EncoderConfig(vocab_size=vocab.size, hidden_size=256, num_layers=12,
                         num_attention_heads=4, intermediate_size=1024, embedding_size=128)
  encoder = export.build_encoder({"encoder": config.to_json()})
  export_dir = export.export_encoder(types.SimpleNamespace(exported_encoder=encoder, name="random"),
                                     vocab, tmp, max_seq_length=512)
  for precision in FLAGS.precisions:
    runs = {
        "run_glue SST-2": lambda log, p=precision: runner_lib.Runner(glue.GlueConfig(
            task="sst-2", init_checkpoint=export_dir, data_dir=os.path.join(SHARED, "glue", "SST-2"),
            model_dir=os.path.join(tmp, f"glue_{p}"), max_train_examples=2000,
            num_train_epochs=1, log_every_steps=20, mixed_precision=p), log=log).run(),
        "run_squad v1.1": lambda log, p=precision: runner_lib.Runner(squad.SquadConfig(
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
