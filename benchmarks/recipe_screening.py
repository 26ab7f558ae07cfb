r"""Screens pre-training recipes at a small equal budget: which escape the bag-of-words plateau?

  python benchmarks/recipe_screening.py --work_dir=/tmp/pv2 --train_flops_budget=5e13 \
      [--recipes=base,relpos,...] [--mixed_precision=float32]

Each recipe is `gin/models/one_machine.gin` + a task file + gin bindings (`RECIPES`), trained with
`run_pretraining --mode=train_and_eval` on both cores, its structure-onset monitor on the held-out
records (`onset.jsonl`: the largest head's attention on the previous/next token, attention entropy
÷ uniform, order sensitivity) and one held-out evaluation at the end (masked-LM loss). Inputs,
under --work_dir (`benchmarks/pretraining_value.py --stages=data` style, built by hand, commands in
RESULTS.md): `vocab{8000,16000}.txt`, unmasked training records `fill64_v*` (paragraph text packed
into 64 pieces) and `sent64_v*` / `sent1_64_v8000` (`--packing=sentences`), and held-out records
`heldout64_v*` (wiki_60-63, fixed masks). A finished recipe is skipped (resumable); the table
ranks recipes by the largest previous/next-token weight, then the order sensitivity.
"""
import json
import os
import time

from absl import app
from absl import flags

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The screened levers on top of the one-machine model (4 × 128, 2 heads): batch 16 × 64, no
# dropout, learning rate 1e-3 with 100 warmup steps (the probe), then one lever at a time.
BASE = ("TrainConfig.train_batch_size = 16", "TrainConfig.max_seq_length = 64",
        "TrainConfig.max_predictions_per_seq = 20", "EncoderConfig.max_position_embeddings = 64",
        "EncoderConfig.dropout_rate = 0.0", "EncoderConfig.attention_dropout_rate = 0.0",
        "OptimizerConfig.warmup_steps = 100", "TrainConfig.save_checkpoints_steps = 1000",
        "TrainConfig.log_every_steps = 200", "OnsetConfig.every_steps = 500")
RELPOS = ("EncoderConfig.position_embedding = 't5_relative'",)
MASK30 = ("dynamic_masking.strategy = 'mask_only'", "dynamic_masking.mask_prob = 0.3",
          "dynamic_masking.final_mask_prob = 0.15")
PRELN = ("EncoderConfig.norm_first = True",)
MASK30_CONSTANT = ("dynamic_masking.strategy = 'mask_only'", "dynamic_masking.mask_prob = 0.3")
LR2 = ("OptimizerConfig.learning_rate = 2e-3",)

# name: (task, records, vocab size, extra bindings)
RECIPES = {
    "base": ("mlm", "fill64", 16000, ()),
    "relpos": ("mlm", "fill64", 16000, RELPOS),
    "relpos_mask30": ("mlm", "fill64", 16000, RELPOS + MASK30),
    "relpos_mask30_sent": ("mlm", "sent64", 16000, RELPOS + MASK30),
    "relpos_mask30_sent_v8k": ("mlm", "sent64", 8000, RELPOS + MASK30),
    "relpos_mask30_sent1_v8k": ("mlm", "sent1_64", 8000, RELPOS + MASK30),
    "mask30_sent_v8k": ("mlm", "sent64", 8000, MASK30),
    "relpos_mask30_sent_v8k_preln": ("mlm", "sent64", 8000, RELPOS + MASK30 + PRELN),
    "electra_relpos_mask30_sent_v8k": ("electra", "sent64", 8000, RELPOS + MASK30[1:]),
    # One lever at a time on sentence records with the 8k vocabulary (the second round).
    "s_relpos": ("mlm", "sent64", 8000, RELPOS),
    "s_relpos_preln": ("mlm", "sent64", 8000, RELPOS + PRELN),
    "s_relpos_mask30": ("mlm", "sent64", 8000, RELPOS + MASK30_CONSTANT),
    "s_relpos_lr2": ("mlm", "sent64", 8000, RELPOS + LR2),
}


flags.DEFINE_string("work_dir", None, "Holds the vocabularies, records and the screen/ runs.")
flags.DEFINE_list("recipes", list(RECIPES), "Recipes to screen (names in RECIPES).")
flags.DEFINE_float("train_flops_budget", 5e13, "Train FLOPs per recipe.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16"], "Training precision.")
flags.DEFINE_integer("seed", 0, "TrainConfig.seed.")
flags.DEFINE_multi_string("extra", [], "Another gin binding for every recipe (repeatable).")
flags.DEFINE_string("suffix", "", "Appended to each run directory's name.")
flags.DEFINE_bool("report_only", False, "Print the table of what has finished.")
FLAGS = flags.FLAGS


def log(message):
  print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run_dir(args, name):
  return os.path.join(args.work_dir, "screen", f"{name}{args.suffix}")


def train(args, name):
  task, records, vocab_size, extra = RECIPES[name]
  model_dir = run_dir(args, name)
  if os.path.exists(os.path.join(model_dir, "export")):
    return
  bindings = (BASE + extra + (f"TrainConfig.train_flops_budget = {args.train_flops_budget}",
                              f"TrainConfig.seed = {args.seed}",
                              "EvalConfig.eval_every_steps = 1000000",
                              "EvalConfig.max_eval_batches = 40") + tuple(args.extra))
  argv = ["run_pretraining", "--gin_file=gin/models/one_machine.gin",
          f"--gin_file=gin/tasks/{task}.gin",
          f"--input_records={os.path.join(args.work_dir, f'{records}_v{vocab_size}')}",
          f"--eval_input={os.path.join(args.work_dir, f'heldout64_v{vocab_size}')}",
          f"--model_dir={model_dir}", "--mode=train_and_eval",
          f"--mixed_precision={args.mixed_precision}"] + [f"--gin_param={b}" for b in bindings]
  os.makedirs(os.path.dirname(model_dir), exist_ok=True)
  log_path = model_dir + ".log"
  log(f"start {name} (log {log_path})")
  with common.Stopwatch() as watch:
    common.run_tool(argv, log_path=log_path)
  seconds = watch.seconds
  with open(os.path.join(model_dir, "wall_seconds.json"), "w", encoding="utf-8") as f:
    json.dump({"seconds": seconds}, f)
  log(f"done {name} in {seconds:.0f} s")


def rows(path):
  if not os.path.exists(path):
    return []
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def tokens_per_second(log_path):
  """Median tokens/s of the run's log lines (after the first)."""
  values = []
  if os.path.exists(log_path):
    with open(log_path, encoding="utf-8") as f:
      for line in f:
        if " tokens/s=" in line:
          values.append(float(line.split(" tokens/s=")[1].split()[0]))
  values = sorted(values[1:] or values)
  return values[len(values) // 2] if values else float("nan")


def report(args):
  table = []
  for name in args.recipes:
    model_dir = run_dir(args, name)
    onset, evals = rows(os.path.join(model_dir, "onset.jsonl")), rows(
        os.path.join(model_dir, "eval_results.jsonl"))
    if not onset:
      continue
    last, final = onset[-1], (evals[-1] if evals else {})
    wall = rows(os.path.join(model_dir, "wall_seconds.json"))
    table.append((max(last["onset_attn_prev_max"], last["onset_attn_next_max"]),
                  last["onset_order_sensitivity"], name, last, final,
                  wall[0]["seconds"] if wall else float("nan"),
                  tokens_per_second(model_dir + ".log")))
  table.sort(key=lambda r: (-r[0], -r[1]))
  print(common.markdown_table(
      ["recipe", "steps", "train FLOPs", "prev max", "next max", "entropy ratio", "order sens.",
       "held-out MLM loss", "MLM acc.", "RTD AUC", "tokens/s", "wall"],
      [[name, last["step"], f"{last['train_flops']:.3g}", f"{last['onset_attn_prev_max']:.3f}",
        f"{last['onset_attn_next_max']:.3f}", f"{last['onset_attn_entropy_ratio']:.3f}",
        f"{last['onset_order_sensitivity']:.2e}", f"{final.get('mlm_loss', float('nan')):.3f}",
        f"{final.get('mlm_accuracy', float('nan')):.3f}", f"{final.get('rtd_auc', float('nan')):.3f}",
        f"{speed:.0f}", f"{wall / 60:.1f} min"] for _, _, name, last, final, wall, speed in table]))


def main(_):
  unknown = [r for r in FLAGS.recipes if r not in RECIPES]
  if unknown:
    raise app.UsageError(f"--recipes: unknown {unknown} (known: {', '.join(RECIPES)})")
  if not FLAGS.report_only:
    for name in FLAGS.recipes:
      train(FLAGS, name)
  report(FLAGS)


if __name__ == "__main__":
  flags.mark_flag_as_required("work_dir")
  app.run(main)
