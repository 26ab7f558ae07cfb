r"""An independent ELECTRA in PyTorch for `electra_crosscheck.py` (issue 72): Hugging Face's
`ElectraForMaskedLM` as the generator and `ElectraForPreTraining` as the discriminator, trained as
the paper says (Clark et al. 2020 §2-3; dissertation Table 5.1), on the batches our input pipeline
wrote (`batches.npz`), never importing TensorFlow (run it with `USE_TF=0`; torch and TensorFlow in
one process crash on some CPUs here).

  USE_TF=0 python benchmarks/electra_torch.py --run_dir=/tmp/xc/e14_s0 --output=/tmp/xc/e14_s0/hf

- token, position and segment embeddings (and their LayerNorm) shared by the two networks; the
  generator's output layer tied to the token embeddings; the generator a fraction of the
  discriminator's width (`config.json`: its hidden size, heads and FFN) with its full depth;
- the generator's MLM head on the masked positions only; replacements *sampled* from its softmax
  (temperature 1), under no gradient; a sample equal to the original counts as original;
- L = L_MLM + λ·L_Disc, λ = `rtd_weight` (50); L_Disc the mean sigmoid cross-entropy over the
  non-pad positions;
- the one-machine recipe's remedy when `config.json` names it
  (`gin/recipes/electra_one_machine.gin`, written from its description, not from our code):
  λ_t = 0 before `rtd_start_step`; the discriminator's own masked LM (a head as the generator's —
  dense to the embedding width, GELU, LayerNorm, the shared token embeddings as output layer, its
  own bias) weighted μ_t = μ·max(0, 1 − t/T_μ) (`discriminator_mlm_weight`, `discriminator_mlm_steps`); with
  `masked_warmup` the discriminator reads the masked input, not the corrupted one, before
  `rtd_start_step`;
- AdamW (β 0.9/0.999, ε 1e-6, decoupled weight decay 0.01 except on LayerNorm and biases),
  global-norm clipping at 1.0, the learning rate warmed up linearly over `warmup_steps` and
  decayed linearly to 0 over the whole run; normal(0, `initializer_range`) initialisation
  (Hugging Face's); dropout as `config.json` says.
Every `log_every` steps it writes a row of training means to `<output>/curve.jsonl` (complete
when the run is: `.partial` until then), and every `eval_every` steps adds the held-out figures
(`heldout.npz`) computed by `rtd_figures`, the same numpy code our side uses.
"""
import json
import os
import sys

from absl import app
from absl import flags
import numpy as np

import common
import rtd_figures  # pylint: disable=g-bad-import-order

flags.DEFINE_string("run_dir", None, "Holds config.json, batches.npz, heldout.npz.")
flags.DEFINE_string("output", None, "Where curve.jsonl goes.")
flags.DEFINE_integer("seed", 0, "torch's seed (the models' initialisation, the generator's samples).")
flags.DEFINE_integer("threads", 1, "torch threads.", lower_bound=1)
flags.DEFINE_enum("position_embedding_type", "absolute",
                  ["absolute", "relative_key", "relative_key_query"],
                  "Hugging Face's position encoding for both networks: absolute position "
                  "embeddings (ELECTRA's), or a relative prior in every attention layer (learned "
                  "embeddings of the clipped distance in the keys' scores; Shaw et al. 2018), with "
                  "no absolute ones.")
FLAGS = flags.FLAGS


def build(config, torch, transformers, position_embedding_type="absolute"):
  """(generator, discriminator, the discriminator's masked-LM head or None, decayed parameters,
  undecayed ones) with the embeddings shared and the LM heads tied to them."""
  shared_sizes = dict(vocab_size=config["vocab_size"], embedding_size=config["embedding_size"],
                max_position_embeddings=config["max_position_embeddings"],
                type_vocab_size=config["type_vocab_size"], hidden_act="gelu",
                hidden_dropout_prob=config["dropout_rate"],
                attention_probs_dropout_prob=config["attention_dropout_rate"],
                initializer_range=config["initializer_range"], layer_norm_eps=1e-12,
                position_embedding_type=position_embedding_type)
  generator = transformers.ElectraForMaskedLM(transformers.ElectraConfig(
      hidden_size=config["generator"]["hidden_size"], num_hidden_layers=config["generator"]["num_layers"],
      num_attention_heads=config["generator"]["num_attention_heads"],
      intermediate_size=config["generator"]["intermediate_size"], **shared_sizes))
  discriminator_config = transformers.ElectraConfig(
      hidden_size=config["hidden_size"], num_hidden_layers=config["num_layers"],
      num_attention_heads=config["num_attention_heads"],
      intermediate_size=config["intermediate_size"], **shared_sizes)
  discriminator = transformers.ElectraForPreTraining(discriminator_config)
  word_embeddings = discriminator.electra.embeddings.word_embeddings.weight
  generator.electra.embeddings = discriminator.electra.embeddings  # shared embeddings
  generator.generator_lm_head.weight = word_embeddings
  modules = [generator, discriminator]
  discriminator_lm = None
  if config.get("discriminator_mlm_weight", 0.0):
    electra = transformers.models.electra.modeling_electra
    discriminator_lm = torch.nn.ModuleDict({
        "predictions": electra.ElectraGeneratorPredictions(discriminator_config),
        "output": torch.nn.Linear(config["embedding_size"], config["vocab_size"])})
    discriminator_lm["output"].weight = word_embeddings
    torch.nn.init.zeros_(discriminator_lm["output"].bias)
    discriminator_lm["predictions"].dense.weight.data.normal_(0.0, config["initializer_range"])
    torch.nn.init.zeros_(discriminator_lm["predictions"].dense.bias)
    modules.append(discriminator_lm)
  parameters = list({id(p): p for module in modules for p in module.parameters()}.values())
  names = {id(p): n for module in modules for n, p in module.named_parameters()}
  decayed = [p for p in parameters if "LayerNorm" not in names[id(p)]
             and not names[id(p)].endswith("bias")]
  undecayed = [p for p in parameters if all(p is not q for q in decayed)]
  return generator, discriminator, discriminator_lm, decayed, undecayed


def main(_):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  assert "tensorflow" not in sys.modules, "the PyTorch side must not import TensorFlow (USE_TF=0)"
  torch.set_num_threads(FLAGS.threads)
  torch.manual_seed(FLAGS.seed)
  with open(os.path.join(FLAGS.run_dir, "config.json"), encoding="utf-8") as f:
    config = json.load(f)
  batches = np.load(os.path.join(FLAGS.run_dir, "batches.npz"))
  heldout = np.load(os.path.join(FLAGS.run_dir, "heldout.npz"))
  generator, discriminator, discriminator_lm, decayed, undecayed = build(
      config, torch, transformers, FLAGS.position_embedding_type)
  rtd_start = config.get("rtd_start_step", 0)
  mu = config.get("discriminator_mlm_weight", 0.0)
  mu_steps = config.get("discriminator_mlm_steps", 0)
  lambda_at = lambda step: 0.0 if step < rtd_start else config["rtd_weight"]
  mu_at = lambda step: mu * max(0.0, 1.0 - step / mu_steps) if mu_steps else mu
  optimizer = torch.optim.AdamW(
      [{"params": decayed, "weight_decay": config["weight_decay_rate"]},
       {"params": undecayed, "weight_decay": 0.0}],
      lr=config["learning_rate"], betas=(0.9, 0.999), eps=1e-6)
  steps, warmup, peak = config["num_train_steps"], config["warmup_steps"], config["learning_rate"]
  schedule = lambda step: peak * step / warmup if step < warmup else peak * (1 - step / steps)
  long = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.long)

  def forward(step, ids, mask, types, positions, originals, weights, sample_generator=None):
    """Outputs of one batch at training step `step`: MLM logits at the masked positions,
    samples, RTD labels, RTD logits and the discriminator's MLM logits (None without its head)."""
    hidden = generator.electra(input_ids=ids, attention_mask=mask,
                               token_type_ids=types).last_hidden_state
    at_masks = hidden.gather(1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
    mlm_logits = generator.generator_lm_head(generator.generator_predictions(at_masks))
    with torch.no_grad():
      sampled = torch.multinomial(torch.softmax(mlm_logits.reshape(-1, mlm_logits.shape[-1]), -1),
                                  1, generator=sample_generator).reshape(positions.shape)
      sampled = torch.where(weights > 0, sampled, originals)
      original_ids = ids.scatter(1, positions, torch.where(weights > 0, originals,
                                                           ids.gather(1, positions)))
      corrupted = original_ids.scatter(1, positions, torch.where(weights > 0, sampled,
                                                                 original_ids.gather(1, positions)))
      labels = (corrupted != original_ids).float()
    reads = ids if config.get("masked_warmup") and step < rtd_start else corrupted
    output = discriminator(input_ids=reads, attention_mask=mask, token_type_ids=types,
                           output_hidden_states=discriminator_lm is not None)
    d_mlm_logits = None
    if discriminator_lm is not None:
      last = output.hidden_states[-1]
      at_masks = last.gather(1, positions[..., None].expand(-1, -1, last.shape[-1]))
      d_mlm_logits = discriminator_lm["output"](discriminator_lm["predictions"](at_masks))
    return mlm_logits, sampled, labels, output.logits, d_mlm_logits

  def evaluate(step):
    """Held-out figures: the run's own generator (fixed sampling seed) and the fixed noise."""
    generator.eval()
    discriminator.eval()
    batches = []
    sample_generator = torch.Generator().manual_seed(1234)
    with torch.no_grad():
      for i in range(len(heldout["input_word_ids"])):
        ids, mask = long(heldout["input_word_ids"][i]), long(heldout["input_mask"][i])
        types = long(heldout["input_type_ids"][i])
        positions, originals = long(heldout["masked_lm_positions"][i]), long(heldout["masked_lm_ids"][i])
        weights = torch.as_tensor(heldout["masked_lm_weights"][i])
        mlm_logits, sampled, labels, rtd_logits, _ = forward(
            step, ids, mask, types, positions, originals, weights, sample_generator)
        noise = discriminator(input_ids=long(heldout["noise_ids"][i]), attention_mask=mask,
                              token_type_ids=types).logits
        batches.append({k: v.numpy() for k, v in (
            ("labels", labels), ("logits", rtd_logits), ("mask", mask), ("mlm_ids", originals),
            ("mlm_weights", weights), ("mlm_logits", mlm_logits), ("sampled", sampled),
            ("noise_logits", noise))})
    generator.train()
    discriminator.train()
    return rtd_figures.heldout_figures(batches, heldout["noise_labels"])

  os.makedirs(FLAGS.output, exist_ok=True)
  curve_path = os.path.join(FLAGS.output, "curve.jsonl")
  with open(curve_path + ".partial", "w", encoding="utf-8") as curve:
    sums, watch = {}, common.Stopwatch()
    generator.train()
    discriminator.train()
    for step in range(steps):
      for group in optimizer.param_groups:
        group["lr"] = schedule(step)
      ids, mask = long(batches["input_word_ids"][step]), long(batches["input_mask"][step])
      types = long(batches["input_type_ids"][step])
      positions, originals = long(batches["masked_lm_positions"][step]), long(batches["masked_lm_ids"][step])
      weights = torch.as_tensor(batches["masked_lm_weights"][step])
      mlm_logits, sampled, labels, rtd_logits, d_mlm_logits = forward(
          step, ids, mask, types, positions, originals, weights)

      def masked_lm_loss(logits):
        per_prediction = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), originals.reshape(-1), reduction="none")
        return (per_prediction * weights.reshape(-1)).sum() / weights.sum().clamp(min=1)

      mlm = masked_lm_loss(mlm_logits)
      per_token = torch.nn.functional.binary_cross_entropy_with_logits(rtd_logits, labels,
                                                                       reduction="none")
      rtd = (per_token * mask).sum() / mask.sum().clamp(min=1)
      loss = mlm + lambda_at(step) * rtd
      extra = {}
      if d_mlm_logits is not None:
        d_mlm = masked_lm_loss(d_mlm_logits)
        loss = loss + mu_at(step) * d_mlm  # L_MLM + λ_t L_Disc + μ_t L_DMLM
        right = (d_mlm_logits.argmax(-1) == originals).float() * weights
        extra = {"discriminator_mlm_loss": d_mlm.item(),
                 "discriminator_mlm_accuracy": (right.sum() / weights.sum().clamp(min=1)).item()}
      optimizer.zero_grad()
      loss.backward()
      torch.nn.utils.clip_grad_norm_(decayed + undecayed, 1.0)
      optimizer.step()
      figures = {"mlm_loss": mlm.item(), "rtd_loss": rtd.item(), **extra}
      figures.update(rtd_figures.generator_figures(originals.numpy(), weights.numpy(),
                                                   mlm_logits.detach().numpy(), sampled.numpy()))
      figures.update({f"rtd_{k}": v for k, v in rtd_figures.detection_figures(
          labels.numpy(), rtd_logits.detach().numpy(), mask.numpy()).items()})
      for key, value in figures.items():
        if np.isfinite(value):
          sums.setdefault(key, []).append(value)
      done = step + 1
      if done % config["log_every"] == 0 or done % config["eval_every"] == 0 or done == steps:
        row = {"step": done, **{k: float(np.mean(v)) for k, v in sums.items()},
               "seconds": watch.seconds}
        if done % config["eval_every"] == 0 or done == steps:
          row.update(evaluate(done))
        curve.write(json.dumps(row) + "\n")
        curve.flush()
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}),
              flush=True)
        sums = {}
  os.replace(curve_path + ".partial", curve_path)  # complete: a re-run skips it


if __name__ == "__main__":
  flags.mark_flags_as_required(["run_dir", "output"])
  app.run(main)
