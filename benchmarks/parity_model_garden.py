r"""Learning parity with Model Garden at equal FLOPs: the same records, sizes, batch, schedule and
budget, trained once with ours (`run_pretraining`) and once with Model Garden's `ElectraPretrainer`
+ `ElectraPretrainTask` (its model, losses, optimizer and train step, driven by a small loop here).

  python benchmarks/parity_model_garden.py --work_dir=/tmp/parity --train_flops_budget=1e14 \
      --seeds=1,2 --eval_every=500

Tiny ELECTRA, 4 layers (hidden 128, 2 heads, FFN 512, embeddings 128; generator 1/4 width), batch
32 × 64 tokens, learning rate 1e-3 with 100 warmup steps then linear decay to 0 over the run,
AdamW (decay 0.01 except LayerNorm/bias, ε 1e-6), gradient clipping at global norm 1.0, dropout 0.1,
λ = 50. Records: the shipped corpus (vocab 8,000 learned from it, dupe 10); both implementations
read the very same batches in the same order (our input pipeline, the run's seed). The step count
is what the budget buys under our section 5.2.2 count; Model Garden trains the same steps. Both are
evaluated by the same code every `--eval_every` steps on a book not in the training text (fixed
masks, dupe 1): the generator's MLM loss and accuracy over the masked positions, the
discriminator's RTD loss and AUC over the non-pad positions (replacements drawn with a fixed seed).
The same figures on the first 1,024 training records (`train_` columns) show the fit itself: the
shipped corpus is small (1,608 distinct sequences), so held-out figures turn once both overfit.
`--implementations=ours_tokens` trains ours sharing only the token table between generator and
discriminator, as Model Garden does (ours' default shares ELECTRA's whole embedding layer).
Results (a table, and a PNG of the curves): benchmarks/RESULTS.md.
"""
import json
import os

from absl import app
from absl import flags
from absl import logging
import numpy as np

import common
import heldout  # pylint: disable=g-bad-import-order

flags.DEFINE_string("work_dir", "/tmp/parity_model_garden", "Records, runs and curves.")
flags.DEFINE_float("train_flops_budget", 1e14, "Train FLOPs per run (section 5.2.2 count).")
flags.DEFINE_list("seeds", ["1", "2"], "Seeds (data order and initialisation) per implementation.")
flags.DEFINE_integer("eval_every", 500, "Steps between held-out evaluations.")
flags.DEFINE_list("implementations", ["ours", "model_garden"],
                  "What to train: model_garden, ours, or ours_tokens (ours tying only the token "
                  "table, as Model Garden does).")
flags.DEFINE_string("heldout_book", "The Wonderful Wizard of Oz", "Held-out ../shared book.")
flags.DEFINE_string("plot", "", "Write the curves to this PNG.")
FLAGS = flags.FLAGS
SIZES = dict(hidden_size=128, num_layers=4, num_attention_heads=2, intermediate_size=512,
             embedding_size=128, max_position_embeddings=128)
BATCH, SEQ, PREDICTIONS = 32, 64, 10
EVAL_BATCH, TRAIN_EVAL_BATCHES = 64, 16
LEARNING_RATE, WARMUP = 1e-3, 100
GIN = ["gin/models/tiny.gin", "gin/tasks/electra.gin"]
PARAMS = [f"EncoderConfig.{k} = {v}" for k, v in SIZES.items()] + [
    f"TrainConfig.train_batch_size = {BATCH}", f"TrainConfig.max_seq_length = {SEQ}",
    f"TrainConfig.max_predictions_per_seq = {PREDICTIONS}",
    f"OptimizerConfig.learning_rate = {LEARNING_RATE}", f"OptimizerConfig.warmup_steps = {WARMUP}",
    "OptimizerConfig.clip_norm = 1.0", "build_electra_pretrainer.generator_size = 0.25"]
OURS = {"ours": "shared", "ours_tokens": "tokens"}  # implementation: embedding_sharing
flags.register_validator(
    "implementations", lambda names: set(names) <= {*OURS, "model_garden"},
    f"--implementations takes {', '.join([*OURS, 'model_garden'])}")


def evaluate(call, eval_sets):
  """`figures` of every {prefix: batches} set, in one dict with prefixed names."""
  return {prefix + name: value for prefix, batches in eval_sets.items()
          for name, value in figures(call, batches).items()}


def figures(call, batches):
  """MLM loss/accuracy and RTD loss/AUC of `call(batch) -> (mlm_logits [B, P, V], rtd_logits
  [B, S], rtd_labels [B, S])` over the evaluation batches (the same code for both models)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd.utils import detection  # pylint: disable=g-import-not-at-top
  tf.random.set_seed(1234)  # Model Garden samples replacements from the global generator
  nll, correct, weight, rtd_loss, tokens = 0.0, 0.0, 0.0, 0.0, 0.0
  labels, logits = [], []
  for batch in batches:
    mlm_logits, rtd_logits, rtd_labels = (np.asarray(t, np.float64) for t in call(batch))
    ids, w = batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy()
    log_p = mlm_logits - np.logaddexp.reduce(mlm_logits, axis=-1, keepdims=True)
    nll -= float((np.take_along_axis(log_p, ids[..., None], -1)[..., 0] * w).sum())
    correct += float(((mlm_logits.argmax(-1) == ids) * w).sum())
    weight += float(w.sum())
    mask = batch["input_mask"].numpy() > 0
    z, y = rtd_logits[mask], rtd_labels[mask]
    rtd_loss += float((np.logaddexp(0, z) - y * z).sum())
    tokens += float(mask.sum())
    labels.append(y)
    logits.append(z)
  return {"mlm_loss": nll / weight, "mlm_accuracy": correct / weight,
          "rtd_loss": rtd_loss / tokens,
          "rtd_auc": detection.roc_auc(np.concatenate(labels), np.concatenate(logits))}


def input_batches(records_dir, seed, is_training):
  from official_rtd.data import pretrain_dataloader  # pylint: disable=g-import-not-at-top
  config = pretrain_dataloader.PretrainInputConfig(
      input_path=records_dir, global_batch_size=BATCH if is_training else EVAL_BATCH,
      seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, is_training=is_training, seed=seed)
  return pretrain_dataloader.load_pretraining_dataset(config)


def train_ours(seed, sharing, records_dir, eval_sets, out):
  """run_pretraining (`embedding_sharing = sharing`) with a checkpoint every `eval_every` steps,
  then every checkpoint evaluated."""
  import gin  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(out, "model")
  gin.clear_config()
  watch = common.Stopwatch()
  trainer, _ = runs.run_pretraining(
      GIN, PARAMS + [f"TrainConfig.train_flops_budget = {FLAGS.train_flops_budget}",
                     f"TrainConfig.seed = {seed}",
                     f"TrainConfig.save_checkpoints_steps = {FLAGS.eval_every}",
                     "TrainConfig.keep_checkpoint_max = 1000",
                     f"build_electra_pretrainer.embedding_sharing = {sharing!r}"],
      records_dir, model_dir, log=logging.info)
  seconds = watch.seconds
  steps = trainer.train_config.num_train_steps
  model, _ = runs.load_model(model_dir)
  curve = []
  for path in tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths:
    tf.train.Checkpoint(model=model).restore(path).expect_partial()

    def call(batch, model=model):
      outputs = model(dict(batch, sampling_seed=tf.constant([7, 0], tf.int64)), training=False)
      return outputs["mlm_logits"], outputs["rtd_logits"], outputs["rtd_labels"]

    curve.append(dict(evaluate(call, eval_sets), step=int(path.rsplit("-", 1)[1])))
  return steps, seconds, curve


def train_model_garden(seed, steps, records_dir, eval_sets):
  """Model Garden's ElectraPretrainTask model, losses, optimizer and train_step."""
  from official.modeling import optimization  # pylint: disable=g-import-not-at-top
  from official.nlp.configs import electra as electra_config  # pylint: disable=g-import-not-at-top
  from official.nlp.configs import encoders  # pylint: disable=g-import-not-at-top
  from official.nlp.data import pretrain_dataloader  # pylint: disable=g-import-not-at-top
  from official.nlp.tasks import electra_task  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top

  from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  tf_keras.utils.set_random_seed(seed)
  vocab_size = vocab_lib.load_vocab(os.path.join(FLAGS.work_dir, "vocab.txt")).size

  def encoder(width):
    return encoders.EncoderConfig(type="bert", bert=encoders.BertEncoderConfig(
        vocab_size=vocab_size, hidden_size=int(SIZES["hidden_size"] * width),
        num_layers=SIZES["num_layers"],
        num_attention_heads=max(1, int(SIZES["num_attention_heads"] * width)),
        intermediate_size=int(SIZES["intermediate_size"] * width),
        embedding_size=SIZES["embedding_size"], hidden_activation="gelu",
        max_position_embeddings=SIZES["max_position_embeddings"], dropout_rate=0.1,
        attention_dropout_rate=0.1))

  task = electra_task.ElectraPretrainTask(electra_task.ElectraPretrainConfig(
      model=electra_config.ElectraPretrainerConfig(
          num_masked_tokens=PREDICTIONS, sequence_length=SEQ, num_classes=2,
          discriminator_loss_weight=50.0, tie_embeddings=True, disallow_correct=False,
          generator_encoder=encoder(0.25), discriminator_encoder=encoder(1.0)),
      train_data=pretrain_dataloader.BertPretrainDataConfig(use_next_sentence_label=False)))
  model = task.build_model()
  factory = optimization.OptimizerFactory(optimization.OptimizationConfig({
      "optimizer": {"type": "adamw", "adamw": {
          "weight_decay_rate": 0.01, "epsilon": 1e-6, "gradient_clip_norm": 1.0,
          "exclude_from_weight_decay": ["LayerNorm", "layer_norm", "bias"]}},
      "learning_rate": {"type": "polynomial", "polynomial": {
          "initial_learning_rate": LEARNING_RATE, "decay_steps": steps,
          "end_learning_rate": 0.0}},
      "warmup": {"type": "linear", "linear": {"warmup_steps": WARMUP}}}))
  optimizer = factory.build_optimizer(factory.build_learning_rate())
  metrics = task.build_metrics()
  train_step = tf.function(lambda batch: task.train_step(batch, model, optimizer, metrics))

  def call(batch):
    outputs = model(batch, training=False)
    return outputs["lm_outputs"], outputs["disc_logits"], outputs["disc_label"]

  curve, seconds = [], 0.0
  iterator = iter(input_batches(os.path.join(FLAGS.work_dir, "records"), seed, True))
  for step in range(1, steps + 1):
    with common.Stopwatch() as watch:
      train_step(next(iterator))
    seconds += watch.seconds
    if step % FLAGS.eval_every == 0 or step == steps:
      curve.append(dict(evaluate(call, eval_sets), step=step))
      logging.info("model_garden seed %s step %d: %s", seed, step, curve[-1])
  return seconds, curve


def main(_):
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  plot = os.path.abspath(FLAGS.plot) if FLAGS.plot else ""  # before the chdir
  os.chdir(heldout.REPO)
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  records_dir = pretraining_data.vocab_and_records(FLAGS.work_dir, [heldout.SAMPLE], 8000,
                                                   logging.info)
  eval_records = heldout.book_records(FLAGS.heldout_book, os.path.join(FLAGS.work_dir, "vocab.txt"),
                                      os.path.join(FLAGS.work_dir, "heldout"), log=logging.info)
  eval_sets = {"": list(input_batches(eval_records, 0, False)),
               "train_": list(input_batches(records_dir, 0, False).take(TRAIN_EVAL_BATCHES))}
  results = {}
  for seed in FLAGS.seeds:
    for implementation in FLAGS.implementations:
      out = os.path.join(FLAGS.work_dir, f"{implementation}_seed{seed}")
      done = os.path.join(out, "curve.json")
      if not os.path.exists(done):
        os.makedirs(out, exist_ok=True)
        ours_done = os.path.join(FLAGS.work_dir, f"ours_seed{seed}", "curve.json")
        if implementation in OURS:
          steps, seconds, curve = train_ours(int(seed), OURS[implementation], records_dir,
                                             eval_sets, out)
        else:
          if os.path.exists(ours_done):
            with open(ours_done, encoding="utf-8") as f:
              steps = json.load(f)["steps"]
          else:
            raise ValueError("train ours first: Model Garden trains the steps our budget buys")
          seconds, curve = train_model_garden(int(seed), steps, records_dir, eval_sets)
        with open(done, "w", encoding="utf-8") as f:
          json.dump({"steps": steps, "train_seconds": seconds, "curve": curve}, f)
      with open(done, encoding="utf-8") as f:
        results[(implementation, seed)] = json.load(f)
  columns = ["mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_auc", "train_mlm_loss",
             "train_mlm_accuracy", "train_rtd_loss", "train_rtd_auc"]
  print(f"\n{FLAGS.train_flops_budget:.3g} train FLOPs per run; held-out: {FLAGS.heldout_book}; "
        f"train_: the first {TRAIN_EVAL_BATCHES * EVAL_BATCH} training records")
  table = common.TableWriter(["implementation", "seed", "step", *columns, "tokens/s"])
  for (implementation, seed), result in results.items():
    rate = result["steps"] * BATCH * SEQ / result["train_seconds"]
    for row in result["curve"]:
      table.row(implementation, seed, row["step"],
                *[f"{row[c]:.4f}" if c in row else "–" for c in columns], f"{rate:,.0f}")
  if plot:
    import matplotlib  # pylint: disable=g-import-not-at-top
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
    panels = ("mlm_loss", "rtd_auc", "train_mlm_loss", "train_rtd_auc")
    figure, axes = plt.subplots(2, 2, figsize=(10, 8))
    for (implementation, seed), result in results.items():
      steps = [r["step"] for r in result["curve"]]
      style = {"ours": "-", "ours_tokens": ":"}.get(implementation, "--")
      for axis, name in zip(axes.flat, panels):
        if name in result["curve"][0]:
          axis.plot(steps, [r[name] for r in result["curve"]], style,
                    label=f"{implementation} seed {seed}")
        axis.set_xlabel("step")
        axis.set_title(name if name.startswith("train_") else f"held-out {name}")
    axes.flat[0].legend()
    figure.tight_layout()
    figure.savefig(plot)
    print(f"wrote {plot}")


if __name__ == "__main__":
  app.run(main)
