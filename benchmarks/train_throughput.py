r"""Pre-training throughput: our ELECTRA vs Model Garden's, full training steps, one machine.

  python benchmarks/train_throughput.py --batch_sizes=32,128 --steps=8
  python benchmarks/train_throughput.py --configs=model_garden/float32/32,ours/float32/32 \
      --repeats=3 --steps=4 --warmup=2 --noinput_pipeline --breakdown_precision=float32

ELECTRA-Small (dissertation Table 5.1: hidden 256, 12 layers, 4 heads, FFN 1024, embeddings 128,
generator 1/4, vocab 30522, sequence length 128, 19 predictions) on one in-memory batch of random
token ids; `--model=one_machine`: gin/models/one_machine.gin's shapes (hidden 128, 4 layers, vocab
16000, 20 predictions); `--model=recipe`: the ELECTRA recipe's step as the family's runs take it
(those shapes with T5 relative positions, no dropout, batch 16 x 64, vocab 8000; its plain-ELECTRA
phase; ours and baseline only). Each configuration runs in its own process (clean peak memory, no
shared state):

  ours/float32, ours/bfloat16 (and ours/float16 with --precisions), ours with --jit_compile
  (`/jit`: the whole step one XLA cluster) or with each encoder block compiled (`/jitblock`),
  ours accumulating a batch in k micro-batches (`--configs=ours/float32/256/acc8`),
  baseline: ours as another checkout's code has it (`--baseline_checkout`, e.g. before a change),
  model_garden/float32: `networks.BertEncoder(dict_outputs=True)` generator and discriminator with
  tied token embeddings, `models.ElectraPretrainer`, `ElectraPretrainTask.train_step` (its loss
  and metrics) and Model Garden's AdamW (clip 1.0);
  huggingface/float32, huggingface/bfloat16 (autocast), each also `/compile` (`torch.compile`):
  `ElectraForMaskedLM` + `ElectraForPreTraining` in PyTorch, trained as ELECTRA is (shared
  embeddings, the generator's output layer tied to them: our trainable parameter count, asserted;
  the MLM head on the masked positions only), if the optional `benchmark` extra is installed
  (`pip install -e '.[benchmark]'`: torch and transformers; skipped with a message otherwise).

A step is forward + backward + optimizer update (+ metric updates, as each trainer does). The
script prints tokens/s, the ratio to Model Garden, peak RSS, and model FLOP utilisation: section
5.2.2 train FLOPs per second over the machine's peak matmul FLOP/s in the same precision, measured
in the same process. The breakdown also runs the step's matmuls alone (its shapes and kernels,
every other op removed): no step on those kernels is faster, so Model Garden's and the PyTorch
steps' times over theirs bound our ratios. It also times our input pipeline: training steps on
real records vs the same steps on one cached batch.
"""
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile

from absl import app
from absl import flags

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
flags.DEFINE_list("batch_sizes", ["32", "128"], "Global batch sizes.")
flags.DEFINE_list("precisions", ["float32", "bfloat16"], "Our precisions to time.")
flags.DEFINE_integer("steps", 8, "Timed steps per configuration (after warm-up).")
flags.DEFINE_integer("warmup", 3, "Untimed steps first (tracing, allocation).")
flags.DEFINE_bool("input_pipeline", True, "Also time real records vs a cached batch.")
flags.DEFINE_bool("breakdown", True, "Also split one step of ours (batch 32; 16 with "
                  "--model=recipe), and of the baseline with --baseline_checkout, into forward, "
                  "backward and optimizer, its op time "
                  "by kind and by op type, and its FLOPs by kind; time its matmuls alone "
                  "(benchmarks/matmul_floor.py) and print the bound they put on each ratio.")
flags.DEFINE_enum("breakdown_precision", "float32", ["float32", "bfloat16"],
                  "Precision of the --breakdown step.")
flags.DEFINE_list("configs", None, "Configurations to time (impl/precision/batch[/jit], e.g. "
                  "ours/bfloat16/32; ours/float32/32/jitblock: each encoder block compiled by XLA; "
                  "ours/float32/256/acc8: a batch of 256 as 8 accumulated "
                  "micro-batches of 32); default: all of them for --batch_sizes and --precisions.")
flags.DEFINE_integer("repeats", 1, "Runs of each configuration, interleaved (the table shows the "
                     "median step time and the tokens/s range): this shared machine's speed "
                     "drifts by ±10% between runs.", lower_bound=1)
flags.DEFINE_string("one", None, "Internal: run one configuration (impl/precision/batch[/jit]).")
flags.DEFINE_string("baseline_checkout", None, "A checkout of this repository (e.g. a git worktree "
                    "of an earlier commit) whose code the `baseline` configurations run, "
                    "interleaved with ours: e.g. --configs=baseline/float32/32,ours/float32/32.")
flags.DEFINE_integer("reference_parameters", 0, "Internal: our trainable parameter count, which "
                     "a PyTorch configuration must match (computed by the parent).")
flags.DEFINE_float("reference_flops", 0.0, "Internal: our train FLOPs of one batch (the parent's).")
FLAGS = flags.FLAGS

# --model: (encoder sizes, vocabulary size, masked positions per sequence, sequence length, the
# --breakdown step's batch).
MODELS = {
    "small": (dict(hidden_size=256, num_layers=12, num_attention_heads=4, intermediate_size=1024,
                   embedding_size=128, max_position_embeddings=512), 30522, 19, 128, 32),
    # gin/models/one_machine.gin with its 16k wiki vocabulary (README "Pre-training on one machine")
    "one_machine": (dict(hidden_size=128, num_layers=4, num_attention_heads=2,
                         intermediate_size=512, embedding_size=128, max_position_embeddings=128),
                    16000, 20, 128, 32),
    # The ELECTRA recipe's step as the family's runs take it (gin/models/one_machine.gin +
    # gin/recipes/one_machine_sentences.gin: T5 relative positions, no dropout, batch 16 x 64, the
    # records' 20 masked slots; pretraining_value.py's 8k vocabulary), plain ELECTRA: its phase
    # after the masked warm-up.
    "recipe": (dict(hidden_size=128, num_layers=4, num_attention_heads=2, intermediate_size=512,
                    embedding_size=128, max_position_embeddings=64, position_embedding="t5_relative",
                    dropout_rate=0.0, attention_dropout_rate=0.0), 8000, 20, 64, 16),
}
flags.DEFINE_enum("model", "small", list(MODELS), "Model shapes: ELECTRA-Small (dissertation "
                  "Table 5.1), gin/models/one_machine.gin's, or the ELECTRA recipe's step "
                  "(one_machine.gin + one_machine_sentences.gin: batch 16 x 64, T5 relative "
                  "positions, no dropout; ours and baseline only).")


def vocab_size():
  return MODELS[FLAGS.model][1]


def predictions():
  return MODELS[FLAGS.model][2]


def seq_length():
  return MODELS[FLAGS.model][3]


def breakdown_batch():
  return MODELS[FLAGS.model][4]


def small_config():
  """The --model's discriminator config (generator 1/4 of it)."""
  from official_rtd.modeling.encoder_config import \
      EncoderConfig  # pylint: disable=g-import-not-at-top
  return EncoderConfig(vocab_size=vocab_size(), **MODELS[FLAGS.model][0])


def synthetic_arrays(batch_size):
  """One batch of random token ids with `predictions()` masked positions each, as numpy arrays
  (the PyTorch configurations read these and never import TensorFlow)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  seq = seq_length()
  ids = rng.integers(1000, vocab_size(), size=[batch_size, seq]).astype(np.int32)
  positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), predictions(), replace=False)
                                for _ in range(batch_size)]), -1).astype(np.int32)
  originals = np.take_along_axis(ids, positions, 1)
  masked = ids.copy()
  np.put_along_axis(masked, positions, 103, 1)
  return {"input_word_ids": masked, "input_mask": np.ones_like(masked),
          "input_type_ids": np.zeros_like(masked), "masked_lm_positions": positions,
          "masked_lm_ids": originals,
          "masked_lm_weights": np.ones([batch_size, predictions()], np.float32)}


def synthetic_batch(batch_size):
  """`synthetic_arrays` as TensorFlow tensors."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {k: tf.constant(v) for k, v in synthetic_arrays(batch_size).items()}


def reference_counts(batch_size):
  """(our trainable parameters, our train FLOPs of one batch) of the --model's ELECTRA, which
  the PyTorch configurations are checked and measured against (computed in the parent: the
  PyTorch process never imports TensorFlow; torch and TensorFlow in one process crash on some
  CPUs here)."""
  from official_rtd.methods import electra  # pylint: disable=g-import-not-at-top
  model = electra.build_electra_pretrainer(small_config(), generator_size=0.25)
  model(synthetic_batch(2), training=False)
  return (trainable_parameters(model),
          model.train_flops_per_example(seq_length(), predictions()) * batch_size)


def torch_peak_matmul_flops(dtype_name):
  """Best FLOP/s of a 2048³ matmul in `dtype_name` with torch, over a few repetitions."""
  import torch  # pylint: disable=g-import-not-at-top
  a = torch.randn(2048, 2048).to({"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype_name])
  return 2 * 2048 ** 3 / common.timed(lambda: torch.matmul(a, a), warmup=0, repeats=5).min


def peak_matmul_flops(dtype_name):
  """Best FLOP/s of a 2048³ matmul in `dtype_name` over a few repetitions."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  dtype = {"float32": tf.float32, "bfloat16": tf.bfloat16, "float16": tf.float16}[dtype_name]
  a = tf.cast(tf.random.normal([2048, 2048]), dtype)
  matmul = tf.function(lambda x: tf.matmul(x, x))
  return 2 * 2048 ** 3 / common.timed(lambda: matmul(a), warmup=1, repeats=5,
                                     finish=lambda r: r.numpy()).min


def time_steps(step, batch):
  return common.timed(lambda: step(batch), warmup=FLAGS.warmup, repeats=FLAGS.steps,
                      finish=float).mean


def ours(precision_name, batch_size, jit, accumulation_steps=1, jit_blocks=False):
  """With `jit_blocks`, each Transformer block's call (matmuls included) is one XLA cluster and
  the rest of the step runs as usual: XLA per block, measured against XLA for the whole step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd.methods import electra  # pylint: disable=g-import-not-at-top
  from official_rtd.modeling.layers import transformer_block  # pylint: disable=g-import-not-at-top
  from official_rtd.training import optimization  # pylint: disable=g-import-not-at-top
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  from official_rtd.training import train_step  # pylint: disable=g-import-not-at-top
  batch = synthetic_batch(batch_size)
  if jit_blocks:
    block = transformer_block.TransformerBlock
    block.call = tf.function(block.call, jit_compile=True)
  with precision.policy(precision_name):
    model = electra.build_electra_pretrainer(small_config(), generator_size=0.25)
    model(batch, training=False)
  optimizer = precision.wrap_optimizer(
      optimization.build_optimizer(optimization.OptimizerConfig(), 1_000_000), precision_name)
  # The trainer's own step (its all-reduce is the identity on one device).
  train_step_fn = train_step.TrainStep(model, optimizer, clip_norm=1.0,
                                       metrics=model.build_metrics(), jit_compile=jit,
                                       accumulation_steps=accumulation_steps)
  step = tf.function(lambda inputs: train_step_fn(inputs)["total_loss"].value)

  seconds = time_steps(step, batch)
  return seconds, model.train_flops_per_example(seq_length(), predictions()) * batch_size


def model_garden(precision_name, batch_size):
  """Model Garden's ELECTRA step; under bfloat16 its layers are built with the mixed policy, as a
  Model Garden user would (its ElectraPretrainer fails there: the message is the row's result)."""
  from official.modeling.optimization import legacy_adamw  # pylint: disable=g-import-not-at-top
  from official.nlp.configs import \
      electra as mg_electra_config  # pylint: disable=g-import-not-at-top
  from official.nlp.data import \
      pretrain_dataloader as mg_dataloader  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import models as mg_models  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import networks as mg_networks  # pylint: disable=g-import-not-at-top
  from official.nlp.tasks import \
      electra_task as mg_electra_task  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top

  from official_rtd.methods import electra  # pylint: disable=g-import-not-at-top
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  config = small_config()
  generator_config = config.scaled(0.25)
  gelu = lambda x: tf_keras.activations.gelu(x, approximate=True)  # Model Garden's default

  def encoder(c, embedding_layer=None):
    return mg_networks.BertEncoder(
        vocab_size=vocab_size(), hidden_size=c.hidden_size, num_layers=c.num_layers,
        num_attention_heads=c.num_attention_heads, max_sequence_length=c.max_position_embeddings,
        type_vocab_size=2,
        inner_dim=c.intermediate_size, inner_activation=gelu,
        embedding_width=c.embedding_size, embedding_layer=embedding_layer, dict_outputs=True)

  batch = synthetic_batch(batch_size)
  with precision.policy(precision_name):
    discriminator = encoder(config)
    generator = encoder(generator_config, embedding_layer=discriminator.get_embedding_layer())
    model = mg_models.ElectraPretrainer(
        generator_network=generator, discriminator_network=discriminator,
        vocab_size=vocab_size(), num_classes=2, num_token_predictions=predictions(),
        mlm_activation=gelu,
        mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
    try:
      model(batch)
    except (TypeError, ValueError, tf.errors.OpError) as e:
      message = " ".join(str(e).split("Call arguments")[0].split())
      return (f"failed: Model Garden's ElectraPretrainer under {precision_name}: "
              f"{type(e).__name__}: {message}")
  task = mg_electra_task.ElectraPretrainTask(mg_electra_task.ElectraPretrainConfig(
      model=mg_electra_config.ElectraPretrainerConfig(discriminator_loss_weight=50.0),
      train_data=mg_dataloader.BertPretrainDataConfig(use_next_sentence_label=False)))
  metrics = task.build_metrics()
  optimizer = legacy_adamw.AdamWeightDecay(
      learning_rate=5e-4, weight_decay_rate=0.01, epsilon=1e-6,
      exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"], gradient_clip_norm=1.0)
  step = tf.function(lambda inputs: task.train_step(inputs, model, optimizer, metrics)["loss"])
  seconds = time_steps(step, batch)
  # The same math as ours: count FLOPs with our counter for the same shapes.
  ours_model = electra.build_electra_pretrainer(config, generator_size=0.25)
  return seconds, ours_model.train_flops_per_example(seq_length(), predictions()) * batch_size


def trainable_parameters(model) -> int:
  return int(sum(v.shape.num_elements() for v in model.trainable_variables))


def huggingface(precision_name, batch_size, compiled=False):
  """ELECTRA's step in PyTorch with Hugging Face's modules, as ELECTRA trains: generator and
  discriminator share the token embeddings and the generator's output layer is tied to them (the
  same trainable parameters as ours, asserted), the MLM head runs on the masked positions only,
  the replacements are sampled from it, loss = L_MLM + 50·L_Disc; AdamW with clipping 1.0.
  bfloat16: `torch.autocast` (weights and optimizer in float32, as ours); `compiled`:
  `torch.compile` of the forward and loss (the backward follows the compiled graph)."""
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    return (f"skipped: {e.name} is not installed (pip install -e '.[benchmark]': torch and "
            "transformers)")
  assert "tensorflow" not in sys.modules, "a PyTorch configuration must not import TensorFlow"
  sizes = MODELS[FLAGS.model][0]
  shared_sizes = dict(vocab_size=vocab_size(), embedding_size=sizes["embedding_size"],
                max_position_embeddings=sizes["max_position_embeddings"])
  generator_sizes = {k: max(1, int(round(sizes[k] * 0.25)))
                     for k in ("hidden_size", "num_attention_heads", "intermediate_size")}
  gen, disc = (model_class(transformers.ElectraConfig(
      hidden_size=c["hidden_size"], num_hidden_layers=sizes["num_layers"],
      num_attention_heads=c["num_attention_heads"], intermediate_size=c["intermediate_size"],
      **shared_sizes)) for model_class, c in ((transformers.ElectraForMaskedLM, generator_sizes),
                                        (transformers.ElectraForPreTraining, sizes)))
  gen.electra.embeddings = disc.electra.embeddings  # shared embeddings
  gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight  # tied to them
  params = list({id(p): p for p in list(gen.parameters()) + list(disc.parameters())}.values())
  arrays = synthetic_arrays(batch_size)
  counts = sum(p.numel() for p in params), FLAGS.reference_parameters
  if counts[0] != counts[1]:
    return f"failed: {counts[0]} trainable parameters against our {counts[1]}"
  optimizer = torch.optim.AdamW(params, lr=5e-4, eps=1e-6, weight_decay=0.01)
  ids = torch.tensor(arrays["input_word_ids"], dtype=torch.long)
  positions = torch.tensor(arrays["masked_lm_positions"], dtype=torch.long)
  originals = torch.tensor(arrays["masked_lm_ids"], dtype=torch.long)
  bf16 = precision_name == "bfloat16"

  def forward_loss(ids, positions, originals):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
      hidden = gen.electra(input_ids=ids).last_hidden_state  # [batch, seq, gen hidden]
      at_masks = hidden.gather(1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
      logits = gen.generator_lm_head(gen.generator_predictions(at_masks)).float()
      mlm = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                              originals.reshape(-1))
      sampled = torch.distributions.Categorical(logits=logits.detach()).sample()
      corrupted = ids.scatter(1, positions, sampled)
      labels = (corrupted != ids.scatter(1, positions, originals)).float()
      scores = disc(input_ids=corrupted).logits.float()  # [batch, seq]
      rtd = torch.nn.functional.binary_cross_entropy_with_logits(scores, labels)
    return mlm + 50.0 * rtd

  compute = torch.compile(forward_loss) if compiled else forward_loss

  def step(_):
    optimizer.zero_grad()
    loss = compute(ids, positions, originals)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    return loss.item()

  with common.Stopwatch() as first:
    step(None)  # a compiled step's first call compiles
  print(f"first step (compilation included): {first.seconds:.1f}s; "
        f"{counts[0]} trainable parameters; torch {torch.__version__}, transformers "
        f"{transformers.__version__}, {torch.get_num_threads()} threads", flush=True)
  seconds = time_steps(step, None)
  return seconds, FLAGS.reference_flops


# Kinds of TensorFlow ops in a traced step, first match wins (op type, or name scope for the
# optimizer, whose update is made of ordinary element-wise ops).
OP_KINDS = (
    ("optimizer (clip + AdamW)", lambda name, kind: "AdamWeightDecay" in name
     or "clip_by_global_norm" in name or kind.startswith("ResourceApply")),
    ("matmuls (projections, FFN, attention, heads)",
     lambda name, kind: "MatMul" in kind or "Einsum" in kind),
    ("softmax and cross-entropy", lambda name, kind: "Softmax" in kind),
    ("random numbers (dropout masks, sampling replacements)",
     lambda name, kind: kind.startswith(("Random", "StatelessRandom", "Multinomial",
                                         "StatelessMultinomial"))),
    ("gathers and scatters (embeddings, masked positions)",
     lambda name, kind: any(k in kind for k in ("Gather", "Scatter", "SegmentSum"))),
    ("element-wise and reductions (bias, casts, residual adds: the unfused rest)",
     lambda name, kind: True),
)


FUSED = "XLA-fused passes (GELU, LayerNorm, dropout, MLM cross-entropy: ops.fused)"


def op_time_by_kind(step, batch, steps=2):
  """Traces `steps` calls of `step` with TensorFlow's profiler; returns seconds of op execution per
  step by `OP_KINDS` kind and by op type (summed over threads, so they can exceed wall time)."""
  import glob  # pylint: disable=g-import-not-at-top

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  logdir = tempfile.mkdtemp()
  tf.profiler.experimental.start(logdir)
  for _ in range(steps):
    float(step(batch))
  tf.profiler.experimental.stop()
  space = xplane_pb2.XSpace()
  with open(glob.glob(f"{logdir}/plugins/profile/*/*.xplane.pb")[0], "rb") as f:
    space.ParseFromString(f.read())
  seconds = {kind: 0.0 for kind, _ in OP_KINDS}
  seconds[FUSED] = 0.0
  by_type = collections.Counter()
  for plane in space.planes:
    if plane.name != "/host:CPU":
      continue
    for line in plane.lines:
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name  # "scope/op_name:OpType"
        if name == "ExecutorState::ProcessAsync::Start":  # an XLA cluster (an async op)
          seconds[FUSED] += event.duration_ps * 1e-12 / steps
          by_type[FUSED] += event.duration_ps * 1e-12 / steps
          continue
        if ":" not in name or "/" not in name:
          continue
        op_name, op_type = name.rsplit(":", 1)
        kind = next(k for k, matches in OP_KINDS if matches(op_name, op_type))
        seconds[kind] += event.duration_ps * 1e-12 / steps
        by_type[op_type] += event.duration_ps * 1e-12 / steps
  return seconds, by_type


def breakdown(batch_size, precision_name):
  """Where one step of ours goes: forward and backward times, op execution time by kind from a
  profiler trace, and the section 5.2.2 FLOPs by kind."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  import matmul_floor  # pylint: disable=g-import-not-at-top
  from official_rtd.methods import electra  # pylint: disable=g-import-not-at-top
  from official_rtd.modeling import flops  # pylint: disable=g-import-not-at-top
  from official_rtd.training import optimization  # pylint: disable=g-import-not-at-top
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  from official_rtd.training import train_step  # pylint: disable=g-import-not-at-top
  batch = synthetic_batch(batch_size)
  config = small_config()
  with precision.policy(precision_name):  # bfloat16 needs no loss scaling
    model = electra.build_electra_pretrainer(config, generator_size=0.25)
    model(batch, training=False)
  optimizer = optimization.build_optimizer(optimization.OptimizerConfig(), 1_000_000)
  train_step_fn = train_step.TrainStep(model, optimizer, clip_norm=1.0,
                                       metrics=model.build_metrics())

  @tf.function
  def forward(inputs):
    return model.compute_losses(inputs, model(inputs, training=True))["total_loss"].value

  @tf.function
  def forward_backward(inputs):
    _, losses, grads, _ = train_step_fn.forward_backward(inputs)
    return losses["total_loss"].value, grads

  step = tf.function(lambda inputs: train_step_fn(inputs)["total_loss"].value)

  times = {"forward": time_steps(forward, batch),
           "forward+backward": time_steps(lambda b: forward_backward(b)[0], batch),
           "step": time_steps(step, batch)}
  matmuls = matmul_floor.matmul_ops(step.get_concrete_function(batch).graph)
  floor = matmul_floor.floor_function(matmuls)
  times["matmuls alone"] = common.timed(floor, warmup=FLAGS.warmup, repeats=FLAGS.steps,
                                        finish=lambda out: out[-1].numpy()).mean
  matmul = {"ops": len(matmuls), "flops": sum(map(matmul_floor.flops, matmuls)),
            "peak_flops": peak_matmul_flops(precision_name)}
  op_seconds, type_seconds = op_time_by_kind(step, batch)
  gen = model.generator.config
  per_example = {}
  seq = seq_length()
  for name, c in (("discriminator", config), ("generator", gen)):
    h, f, e = c.hidden_size, c.intermediate_size, c.embedding_size
    per_example[f"{name} projections + FFN"] = seq * c.num_layers * (8 * h * h + 4 * h * f)
    per_example[f"{name} attention scores"] = seq * c.num_layers * 4 * seq * h
    per_example[f"{name} embeddings (dense count)"] = seq * (
        2 * e * (c.vocab_size + c.max_position_embeddings + c.type_vocab_size)
        + (2 * e * h if e != h else 0))
  per_example["MLM head"] = flops.mlm_head_flops(gen.hidden_size, gen.embedding_size,
                                                 vocab_size(), predictions())
  per_example["RTD head"] = flops.rtd_head_flops(config.hidden_size, seq)
  return times, op_seconds, type_seconds, per_example, matmul


def input_pipeline():
  """Step time of our Trainer on real records vs on one cached batch (tiny ELECTRA)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  from official_rtd.methods import electra  # pylint: disable=g-import-not-at-top
  from official_rtd.modeling.encoder_config import \
      EncoderConfig  # pylint: disable=g-import-not-at-top
  from official_rtd.training import trainer as trainer_lib  # pylint: disable=g-import-not-at-top
  tmp = tempfile.mkdtemp()
  records = os.path.join(tmp, "records")
  pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
      input_files=(os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt"),),
      vocab_file=os.path.join(REPO, "tests", "testdata", "vocab_sample.txt"), output_dir=records,
      max_seq_length=128, max_predictions_per_seq=19, dupe_factor=2, num_shards=2),
      log=lambda _: None)
  trainer = runs.build_trainer(
      os.path.join(tmp, "model"), records, tf.distribute.get_strategy(),
      train_config=trainer_lib.TrainConfig(train_batch_size=32, max_seq_length=128,
                                           max_predictions_per_seq=19),
      encoder_config=EncoderConfig(hidden_size=128, num_layers=2, num_attention_heads=2,
                                   intermediate_size=512, embedding_size=128),
      model_fn=electra.build_electra_pretrainer, log=lambda _: None)
  trainer.restore()
  train_steps = trainer.compiled_steps()
  cached = next(trainer.iterator)
  cached_iterator = iter(tf.data.Dataset.from_tensors(cached).repeat())
  results = {}
  for name, iterator in (("records", trainer.iterator), ("cached", cached_iterator)):
    train_steps(iterator, tf.constant(5))
    run = common.timed(lambda it=iterator: train_steps(it, tf.constant(40)), warmup=0, repeats=1,
                       finish=lambda _: float(trainer.optimizer.iterations))
    results[name] = run.median / 40
  return results


def run_one(spec):
  if spec.startswith("breakdown/"):
    times, op_seconds, type_seconds, per_example, matmul = breakdown(
        breakdown_batch(), FLAGS.breakdown_precision)
    print("RESULT " + json.dumps({"spec": spec, "times": times, "op_seconds": op_seconds,
                                  "type_seconds": type_seconds, "per_example": per_example,
                                  "matmul": matmul}), flush=True)
    return
  impl, precision_name, batch_size, *rest = spec.split("/")
  batch_size = int(batch_size)
  if impl in ("ours", "baseline"):  # a baseline runs with the checkout first on PYTHONPATH
    k = int(rest[0][3:]) if rest and rest[0].startswith("acc") else 1
    result = ours(precision_name, batch_size, jit=rest == ["jit"], accumulation_steps=k,
                  jit_blocks=rest == ["jitblock"])
  elif impl == "model_garden":
    result = model_garden(precision_name, batch_size)
  else:
    result = huggingface(precision_name, batch_size, compiled=rest == ["compile"])
  row = {"spec": spec, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
  if isinstance(result, str):
    row["skipped"] = result
  else:
    seconds, flops = result
    peak = (torch_peak_matmul_flops if impl == "huggingface" else peak_matmul_flops)
    row.update(seconds=seconds, tokens_per_s=batch_size * seq_length() / seconds,
               flops_per_s=flops / seconds, peak_flops=peak(precision_name))
  print("RESULT " + json.dumps(row), flush=True)


def run_child(spec, baseline: bool):
  """Runs `--one=spec` in its own process (with --baseline_checkout's code first on the path for
  a baseline); returns the dict it prints, or {"spec", "skipped": the error}."""
  env = dict(os.environ)
  extra = []
  if baseline:
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.abspath(FLAGS.baseline_checkout)] + env.get("PYTHONPATH", "").split(os.pathsep))
  if spec.startswith("huggingface/"):  # a clean process: no TensorFlow, not even transformers'
    env.update(USE_TF="0", USE_TORCH="1")
    parameters, flops = reference_counts(int(spec.split("/")[2]))
    extra = [f"--reference_parameters={parameters}", f"--reference_flops={flops}"]
  out = subprocess.run([sys.executable, __file__, f"--one={spec}", f"--steps={FLAGS.steps}",
                        f"--warmup={FLAGS.warmup}", f"--model={FLAGS.model}",
                        f"--breakdown_precision={FLAGS.breakdown_precision}", *extra],
                       capture_output=True, text=True, env=env)
  found = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
  return (json.loads(found[-1][7:]) if found else
          {"spec": spec, "skipped": "failed: " + out.stderr.strip().splitlines()[-1]})


def print_breakdown(impl, result):
  if "skipped" in result:
    print(f"breakdown of {impl}: {result['skipped']}")
    return
  times, op_seconds = result["times"], result["op_seconds"]
  forward, both = times["forward"], times["forward+backward"]
  print(f"one {impl}/{FLAGS.breakdown_precision}/{breakdown_batch()} step {times['step']:.3f}s; forward "
        f"{forward:.3f}s, forward + backward {both:.3f}s (backward "
        f"{(both - forward) / forward:.1f}x the forward)")
  total = sum(op_seconds.values())
  print("op time by kind (profiler trace, summed over threads): " + ", ".join(
      f"{name} {value / total:.1%}" for name, value in op_seconds.items() if value))
  print(f"op time by type of {impl}, top 20 (ms per step, summed over threads; share):")
  for op_type, value in sorted(result["type_seconds"].items(), key=lambda kv: -kv[1])[:20]:
    print(f"  {op_type:40s} {value * 1e3:8.1f} {value / total:6.1%}")
  total = sum(result["per_example"].values())
  print("forward FLOPs by kind: " + ", ".join(
      f"{name} {value / total:.1%}" for name, value in result["per_example"].items()))
  matmul, alone = result["matmul"], times["matmuls alone"]
  print(f"the step's {matmul['ops']} matmuls alone (its shapes and kernels, every other op "
        f"removed: benchmarks/matmul_floor.py): {alone:.3f}s, {alone / times['step']:.1%} of the "
        f"step; {matmul['flops']:.3g} FLOPs at {matmul['flops'] / alone:.3g} FLOP/s, "
        f"{matmul['flops'] / alone / matmul['peak_flops']:.1%} of the 2048³ matmul's "
        f"{matmul['peak_flops']:.3g}")


def print_bounds(rows, result):
  """What the matmuls alone allow: the step's ratio to Model Garden's fp32 and to the PyTorch
  steps if every other op took no time."""
  if "skipped" in result:
    return
  alone = result["times"]["matmuls alone"]
  for row in rows:
    if "seconds" in row and row["spec"].split("/")[2] == str(breakdown_batch()) and (
        row["spec"].startswith(("model_garden/float32/", "huggingface/"))):
      print(f"bound: our {FLAGS.breakdown_precision} matmuls alone take {alone:.3f}s against "
            f"{row['seconds']:.3f}s for a {row['spec']} step: on these kernels our step can be "
            f"at most {row['seconds'] / alone:.2f}x it")


def _median_row(results):
  """One configuration's runs as one row: the run with the median step time, plus the range."""
  timed = sorted((r for r in results if "seconds" in r), key=lambda r: r["seconds"])
  if not timed:
    return results[-1]
  row = dict(timed[(len(timed) - 1) // 2])
  rates = [r["tokens_per_s"] for r in timed]
  row["range"] = f"{min(rates):.0f}–{max(rates):.0f}" if len(rates) > 1 else "-"
  return row


def main(_):
  if FLAGS.one:  # a child process (a PyTorch one imports no TensorFlow)
    run_one(FLAGS.one)
    return
  specs = FLAGS.configs or []
  for spec in specs:
    parts = spec.split("/")
    if (len(parts) not in (3, 4)
        or parts[0] not in ("ours", "baseline", "model_garden", "huggingface")
        or parts[1] not in ("float32", "bfloat16", "float16") or not parts[2].isdigit()
        or parts[0] == "huggingface" and parts[1] not in ("float32", "bfloat16")
        or not (parts[3:] == [] or (
            parts[0] in ("ours", "baseline") and parts[3:] in (["jit"], ["jitblock"])) or (
            parts[0] == "huggingface" and parts[3:] == ["compile"]) or (
            parts[0] == "ours" and len(parts) == 4 and parts[3].startswith("acc")
            and parts[3][3:].isdigit() and int(parts[2]) % int(parts[3][3:]) == 0))):
      raise app.UsageError(f"--configs: {spec!r} is not impl/precision/batch[/jit|/jitblock|/accK|"
                           "/compile] with impl ours|baseline|model_garden|huggingface, precision "
                           "float32|bfloat16|float16 (huggingface: float32|bfloat16), /jit and "
                           "/jitblock only for ours or baseline, /compile only for huggingface, "
                           "and K micro-batches (ours only) dividing the batch")
    if FLAGS.model == "recipe" and parts[0] not in ("ours", "baseline"):
      # Model Garden's and Hugging Face's encoders have no T5 relative positions.
      raise app.UsageError(f"--configs: {spec!r}: --model=recipe times ours and baseline only")
    if parts[0] == "baseline" and not FLAGS.baseline_checkout:
      raise app.UsageError(f"--configs: {spec!r} needs --baseline_checkout")
  if FLAGS.baseline_checkout and not os.path.isfile(
      os.path.join(FLAGS.baseline_checkout, "official_rtd", "__init__.py")):
    # Otherwise the `baseline` processes would import the installed package: ours, unnoticed.
    raise app.UsageError(f"--baseline_checkout: {FLAGS.baseline_checkout} is not a checkout of "
                         "this repository (no official_rtd/__init__.py there)")
  if FLAGS.model == "recipe" and not FLAGS.configs:
    raise app.UsageError("--model=recipe needs --configs (ours and baseline only), e.g. "
                         "--configs=ours/float32/16,ours/bfloat16/16")
  for batch in [] if FLAGS.configs else FLAGS.batch_sizes:
    specs += [f"model_garden/{p}/{batch}" for p in FLAGS.precisions]
    specs += [f"ours/{p}/{batch}" for p in FLAGS.precisions]
    specs += [f"ours/float32/{batch}/jit"]
    specs += [f"huggingface/{p}/{batch}{c}" for p in ("float32", "bfloat16")
              for c in ("", "/compile")]
  from official_rtd.training import precision  # pylint: disable=g-import-not-at-top
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  runs = {spec: [] for spec in specs}
  for repeat in range(FLAGS.repeats):
    for spec in specs:
      result = run_child(spec, spec.startswith("baseline/"))
      runs[spec].append(result)
      shown = (f"{result['tokens_per_s']:.0f} tokens/s" if "tokens_per_s" in result
               else result.get("skipped", ""))
      print(f"run {repeat + 1}/{FLAGS.repeats} {spec}: {shown}", flush=True)
  rows = [_median_row(results) for results in runs.values()]
  for name in sorted({spec.split("/")[1] for spec in specs} - {"float32"}):
    precision.warn_if_emulated(name, print)
  print(f"model {FLAGS.model}, seq {seq_length()}, vocab {vocab_size()}, {os.cpu_count()} CPUs, "
        f"{FLAGS.steps} timed "
        f"steps after {FLAGS.warmup} warm-up, median of {FLAGS.repeats} run(s)")
  table = common.TableWriter(["configuration", "step s", "tokens/s", "range", "× Model Garden",
                              "peak RSS GB", "train FLOP/s", "peak matmul FLOP/s", "MFU"])
  baseline = {}
  for row in rows:
    if row["spec"].startswith("model_garden/float32/") and "tokens_per_s" in row:
      baseline[row["spec"].split("/")[2]] = row["tokens_per_s"]
  for row in rows:
    if "skipped" in row:
      table.row(row["spec"], row["skipped"], *[""] * 7)
      continue
    base = baseline.get(row["spec"].split("/")[2])
    ratio = f"{row['tokens_per_s'] / base:.2f}" if base else "-"
    table.row(row["spec"], f"{row['seconds']:.3f}", f"{row['tokens_per_s']:.0f}", row["range"],
              ratio, f"{row['peak_rss_gb']:.2f}", f"{row['flops_per_s']:.3g}",
              f"{row['peak_flops']:.3g}", f"{row['flops_per_s'] / row['peak_flops']:.1%}")
  if FLAGS.breakdown:
    for impl in (["baseline"] if FLAGS.baseline_checkout else []) + ["ours"]:
      result = run_child(f"breakdown/{impl}", impl == "baseline")
      print_breakdown(impl, result)
    print_bounds(rows, result)
  if FLAGS.input_pipeline:
    times = input_pipeline()
    print(f"input pipeline (tiny ELECTRA, batch 32 × 128): {times['records'] * 1e3:.1f} ms/step "
          f"on records vs {times['cached'] * 1e3:.1f} ms/step on a cached batch "
          f"({times['records'] / times['cached'] - 1:+.1%})")


if __name__ == "__main__":
  app.run(main)
