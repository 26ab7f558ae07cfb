r"""Does ELECTRA collapse here because of the scale or because of our code? (issue 72, item 1)

Our ELECTRA (`run_pretraining`'s trainer, model, input pipeline and optimizer) beside an
independent one in PyTorch (`electra_torch.py`: Hugging Face's `ElectraForMaskedLM` and
`ElectraForPreTraining`, written from the paper), on the same batches: our input pipeline's
first `num_train_steps` batches (the trainer's seeded, deterministic order) written once as numpy
arrays, which both train on, and the same held-out batches. The configuration is the one-machine
recipe in a form both can express: absolute position embeddings instead of the recipe's T5
relative biases (no counterpart in Hugging Face's ELECTRA); `ours_t5` adds ours with the recipe's
own relative biases. Same vocabulary, sizes, batch, sequence length, steps (the FLOPs budget
counted by our model), learning-rate schedule, λ, clipping and initialiser scale.

  python benchmarks/electra_crosscheck.py --work_dir=/tmp/xc --records=/tmp/pv/records \
      --heldout=/tmp/pv/heldout --budgets=1.4e13,1e14 --implementations=ours,huggingface

Per budget and seed, `<work_dir>/b<budget>_s<seed>/` holds `config.json`, `batches.npz`,
`heldout.npz` (with a fixed noise: 15% of the tokens replaced uniformly) and one folder per
implementation with `curve.jsonl`: every `--log_every` steps the training means (generator MLM
accuracy, replaced fraction, the discriminator's accuracy on original and on replaced tokens, RTD
AUC) and every `--eval_every` steps the held-out figures (RTD AUC with the run's own generator,
uniform-noise AUC, the same accuracies), all computed by `rtd_figures.py` for both. A finished
implementation is skipped on a re-run (a killed one starts again; each takes minutes);
`--report_only` prints the table. The PyTorch side needs the `benchmark` extra (`pip install -e
'.[benchmark]'`) and runs in its own process with `USE_TF=0`.
"""
import dataclasses
import json
import os
import subprocess
import sys

from absl import app
from absl import flags
import numpy as np

import common
import rtd_figures

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# huggingface_relative_key: the PyTorch side with a relative prior in every attention layer and
# no absolute position embeddings (`electra_torch.py --position_embedding_type=relative_key`), the
# nearest Hugging Face has to the recipe's T5 relative biases (ours_t5).
IMPLEMENTATIONS = ("ours", "huggingface", "ours_t5", "huggingface_relative_key")
flags.DEFINE_string("work_dir", None, "Where each budget's and seed's folder goes.")
flags.DEFINE_string("records", None, "Training records (create_pretraining_data, the recipe's).")
flags.DEFINE_string("heldout", None, "Held-out masked records.")
flags.DEFINE_list("budgets", ["1.4e13", "1e14"], "Train FLOPs budgets (our model's count).")
flags.DEFINE_list("seeds", ["0"], "Seeds (TrainConfig.seed: the batches' order; the models' init).")
flags.DEFINE_list("implementations", ["ours", "huggingface"], f"Of {', '.join(IMPLEMENTATIONS)}.")
flags.DEFINE_list("gin_files", ["gin/models/one_machine.gin", "gin/tasks/electra.gin",
                                "gin/recipes/one_machine_sentences.gin"],
                  "The recipe (relative to the repository).")
flags.DEFINE_multi_string("gin_param", [], "Extra bindings, for every implementation (a screen).")
flags.DEFINE_integer("log_every", 100, "Steps per training row.")
flags.DEFINE_integer("eval_every", 250, "Steps per held-out evaluation.")
flags.DEFINE_integer("heldout_batches", 64, "Held-out batches of the run's batch size.")
flags.DEFINE_integer("threads", 1, "Threads per implementation.")
flags.DEFINE_bool("report_only", False, "Print the table of what has finished.")
FLAGS = flags.FLAGS

ABSOLUTE = "EncoderConfig.position_embedding = 'absolute'"
HELDOUT_SEED = 1234  # the held-out generator samples (ours: stateless; PyTorch: its generator)


def run_dir(budget: str, seed: str) -> str:
  return os.path.join(FLAGS.work_dir, f"b{budget}_s{seed}")


def gin_params(budget: str, seed: str, implementation: str):
  params = [f"TrainConfig.train_flops_budget = {float(budget)}", f"TrainConfig.seed = {seed}",
            "TrainConfig.save_checkpoints_steps = 100000",
            f"TrainConfig.log_every_steps = {FLAGS.log_every}", *FLAGS.gin_param]
  return params if implementation == "ours_t5" else params + [ABSOLUTE]


def build_trainer(model_dir: str, budget: str, seed: str, implementation: str):
  """Our trainer exactly as `run_pretraining` builds it for these gin files and bindings."""
  import gin  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  runs.parse_gin([os.path.join(REPO, f) for f in FLAGS.gin_files],
                 gin_params(budget, seed, implementation), log=lambda _: None)
  return runs.build_trainer(model_dir, FLAGS.records, tf.distribute.OneDeviceStrategy("/cpu:0"),
                            log=print)


def prepare(budget: str, seed: str) -> None:
  """Writes `config.json`, `batches.npz` (the trainer's own first batches) and `heldout.npz`."""
  from official_rtd.data import pretrain_dataloader  # pylint: disable=g-import-not-at-top
  from official_rtd.training import train_step  # pylint: disable=g-import-not-at-top
  directory = run_dir(budget, seed)
  if os.path.isfile(os.path.join(directory, "heldout.npz")):
    return
  os.makedirs(directory, exist_ok=True)
  trainer = build_trainer(os.path.join(directory, "prepare_model"), budget, seed, "ours")
  model, train = trainer.model, trainer.train_config
  steps = train.num_train_steps
  keys = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions",
          "masked_lm_ids", "masked_lm_weights")

  def take(iterator, count):
    rows = {k: [] for k in keys}
    for _ in range(count):
      batch = next(iterator)
      for k in keys:
        rows[k].append(batch[k].numpy())
    return {k: np.stack(v) for k, v in rows.items()}

  batches = take(trainer.input_iterator(0), steps)
  again = take(trainer.input_iterator(0), 2)  # the order is the trainer's: deterministic
  for k in keys:
    assert np.array_equal(again[k], batches[k][:2]), f"the input order is not deterministic ({k})"
  assert not set(batches) - set(keys) and train_step.SAMPLING_SEED not in batches
  heldout_config = dataclasses.replace(trainer.input_config, input_path=FLAGS.heldout,
                                       is_training=False, skip_batches=0, seed=0)
  heldout = take(iter(pretrain_dataloader.load_pretraining_dataset(heldout_config)),
                 FLAGS.heldout_batches)
  heldout.update(fixed_noise(heldout, trainer.vocab))
  gen, disc = model.generator.config, model.discriminator.config
  optimizer = trainer.optimizer_config
  if disc.position_embedding != "absolute" or disc.norm_first or disc.share_layers:
    raise ValueError("the cross-check needs absolute positions, post-LayerNorm, unshared layers")
  if model.generator.get_embedding_table() is not model.discriminator.get_embedding_table():
    raise ValueError("the cross-check needs ELECTRA's shared embeddings")
  config = {
      "vocab_size": disc.vocab_size, "hidden_size": disc.hidden_size,
      "num_layers": disc.num_layers, "num_attention_heads": disc.num_attention_heads,
      "intermediate_size": disc.intermediate_size, "embedding_size": disc.embedding_size,
      "max_position_embeddings": disc.max_position_embeddings,
      "type_vocab_size": disc.type_vocab_size, "dropout_rate": disc.dropout_rate,
      "attention_dropout_rate": disc.attention_dropout_rate,
      "initializer_range": disc.initializer_range,
      "generator": {"hidden_size": gen.hidden_size, "num_layers": gen.num_layers,
                    "num_attention_heads": gen.num_attention_heads,
                    "intermediate_size": gen.intermediate_size},
      "rtd_weight": model.rtd_weight, "temperature": model.temperature,
      # the one-machine recipe's remedy (gin/recipes/electra_one_machine.gin); 0 / False: none
      "rtd_start_step": model.rtd_start_step,
      "discriminator_mlm_weight": model.discriminator_mlm_weight,
      "discriminator_mlm_steps": model.discriminator_mlm_steps,
      "masked_warmup": model.masked_warmup,
      "learning_rate": optimizer.learning_rate, "warmup_steps": optimizer.warmup_steps,
      "weight_decay_rate": optimizer.weight_decay_rate, "clip_norm": optimizer.clip_norm,
      "num_train_steps": steps, "batch_size": train.train_batch_size,
      "seq_length": train.max_seq_length, "train_flops": trainer.train_flops(steps),
      "log_every": FLAGS.log_every, "eval_every": FLAGS.eval_every,
      "gin_params": gin_params(budget, seed, "ours")}
  if model.temperature != 1.0 or optimizer.optimizer != "adamw" or optimizer.decay != "linear":
    raise ValueError("the PyTorch side samples at temperature 1 with AdamW and linear decay")
  if model.rtd_positions != "all" or model.disallow_correct:
    raise ValueError("the PyTorch side detects replacements at every position, samples allowed "
                     "to equal the original")
  np.savez(os.path.join(directory, "batches.npz"), **batches)
  with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
    json.dump(config, f, indent=1)
  np.savez(os.path.join(directory, "heldout.npz"), **heldout)  # last: marks the folder complete
  print(f"{directory}: {steps} steps of {config['batch_size']} x {config['seq_length']}, "
        f"{config['train_flops']:.3g} train FLOPs", flush=True)


def fixed_noise(heldout, vocab) -> dict:
  """The held-out text with 15% of its real, non-special tokens replaced by uniformly drawn
  other non-special tokens (seed 0): `noise_ids` and `noise_labels` (1 where replaced)."""
  rng = np.random.default_rng(0)
  ids = heldout["input_word_ids"].copy()
  batches, rows, predictions = heldout["masked_lm_positions"].shape
  for b in range(batches):
    for r in range(rows):
      for p in range(predictions):
        if heldout["masked_lm_weights"][b, r, p] > 0:
          ids[b, r, heldout["masked_lm_positions"][b, r, p]] = heldout["masked_lm_ids"][b, r, p]
  special = set(vocab.special_ids)
  allowed = np.array(sorted(set(range(vocab.size)) - special))
  candidates = (heldout["input_mask"] > 0) & ~np.isin(ids, list(special))
  labels = candidates & (rng.random(ids.shape) < 0.15)
  noise = ids.copy()
  draws = allowed[rng.integers(len(allowed), size=int(labels.sum()))]
  same = draws == ids[labels]
  while same.any():
    draws[same] = allowed[rng.integers(len(allowed), size=int(same.sum()))]
    same = draws == ids[labels]
  noise[labels] = draws
  return {"noise_ids": noise, "noise_labels": labels.astype(np.int32)}


def heldout_figures(model, heldout) -> dict:
  """Our model's held-out figures, computed as `electra_torch.py` computes its own."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd.training import train_step  # pylint: disable=g-import-not-at-top
  batches = []
  for i in range(len(heldout["input_word_ids"])):
    inputs = {k: tf.constant(heldout[k][i]) for k in (
        "input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions", "masked_lm_ids",
        "masked_lm_weights")}
    inputs[train_step.SAMPLING_SEED] = tf.constant([HELDOUT_SEED, i], tf.int64)
    out = model(inputs, training=False)
    noise = model.replaced_token_logits(dict(inputs, input_word_ids=tf.constant(
        heldout["noise_ids"][i])))
    batches.append({"labels": out["rtd_labels"], "logits": out["rtd_logits"],
                    "mask": inputs["input_mask"], "mlm_ids": inputs["masked_lm_ids"],
                    "mlm_weights": inputs["masked_lm_weights"], "mlm_logits": out["mlm_logits"],
                    "sampled": out["sampled_ids"], "noise_logits": noise})
  return rtd_figures.heldout_figures(batches, heldout["noise_labels"])


def train_ours(budget: str, seed: str, implementation: str, output: str) -> None:
  """Our trainer on the same batches as the PyTorch side: the run's own pipeline, whose first
  batches `prepare` wrote (checked again here), with a held-out evaluation every `eval_every`."""
  from official_rtd.training import periodic  # pylint: disable=g-import-not-at-top
  directory = run_dir(budget, seed)
  with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
    config = json.load(f)
  heldout = dict(np.load(os.path.join(directory, "heldout.npz")))
  trainer = build_trainer(os.path.join(output, "model"), budget, seed, implementation)
  if trainer.train_config.num_train_steps != config["num_train_steps"]:
    raise ValueError(f"{implementation}: {trainer.train_config.num_train_steps} steps, the "
                     f"batches hold {config['num_train_steps']}")
  if implementation == "ours":
    first = next(trainer.input_iterator(0))
    written = np.load(os.path.join(directory, "batches.npz"))
    assert np.array_equal(first["input_word_ids"].numpy(), written["input_word_ids"][0])
  rows, watch = {}, common.Stopwatch()

  def listen(kind, row):
    if kind in ("train", "onset"):  # training means; the structure-onset monitor's figures
      rows.setdefault(row["step"], {"step": row["step"]}).update(
          {k: float(v) for k, v in row.items() if k != "step"})

  def evaluate(step):
    rows.setdefault(step, {"step": step}).update(heldout_figures(trainer.model, heldout))

  trainer.reporter.add_listener(listen)
  trainer.add_action(periodic.PeriodicAction("heldout", evaluate, periods=(FLAGS.eval_every,)))
  trainer.restore()
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  trainer.train(monitor=runs.build_monitor(trainer, FLAGS.heldout))
  with open(os.path.join(output, "curve.jsonl.partial"), "w", encoding="utf-8") as f:
    for step in sorted(rows):
      f.write(json.dumps(dict(rows[step], seconds=watch.seconds)) + "\n")
  os.replace(os.path.join(output, "curve.jsonl.partial"), os.path.join(output, "curve.jsonl"))


def train_huggingface(budget: str, seed: str, output: str, position_embedding_type: str) -> None:
  env = dict(os.environ, USE_TF="0", CUDA_VISIBLE_DEVICES="")
  subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "electra_torch.py"),
                  f"--run_dir={run_dir(budget, seed)}", f"--output={output}", f"--seed={seed}",
                  f"--threads={FLAGS.threads}",
                  f"--position_embedding_type={position_embedding_type}"], env=env, check=True)


def report() -> None:
  shown = ("heldout_rtd_auc", "heldout_fixed_noise_auc", "heldout_mlm_accuracy",
           "heldout_replaced_fraction", "heldout_rtd_accuracy_original",
           "heldout_rtd_accuracy_replaced", "rtd_auc", "rtd_loss", "discriminator_mlm_accuracy",
           "onset_attn_next_max",
           "onset_order_sensitivity")
  table = common.TableWriter(["budget", "seed", "implementation", "step", *shown])
  for budget in FLAGS.budgets:
    for seed in FLAGS.seeds:
      for implementation in IMPLEMENTATIONS:
        path = os.path.join(run_dir(budget, seed), implementation, "curve.jsonl")
        if not os.path.isfile(path):
          continue
        with open(path, encoding="utf-8") as f:
          curve = [json.loads(line) for line in f]
        for row in curve:
          if "heldout_rtd_auc" not in row:
            continue
          table.row(budget, seed, implementation, row["step"],
                    *[f"{row[k]:.3f}" if isinstance(row.get(k), float) else "" for k in shown])


def main(_):
  if not FLAGS.report_only:
    unknown = set(FLAGS.implementations) - set(IMPLEMENTATIONS)
    if unknown:
      raise app.UsageError(f"--implementations: unknown {sorted(unknown)}")
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    for budget in FLAGS.budgets:
      for seed in FLAGS.seeds:
        prepare(budget, seed)
        for implementation in FLAGS.implementations:
          output = os.path.join(run_dir(budget, seed), implementation)
          if os.path.isfile(os.path.join(output, "curve.jsonl")):
            continue
          watch = common.Stopwatch()
          if implementation.startswith("huggingface"):
            train_huggingface(budget, seed, output,
                              implementation.split("_", 1)[1] if "_" in implementation
                              else "absolute")
          else:
            train_ours(budget, seed, implementation, output)
          print(f"{budget} seed {seed} {implementation}: {watch.seconds:.0f} s", flush=True)
  report()


if __name__ == "__main__":
  flags.mark_flags_as_required(["work_dir", "records", "heldout"])
  app.run(main)
