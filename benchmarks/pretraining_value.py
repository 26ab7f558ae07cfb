r"""Does pre-training pay? ELECTRA vs the BERT masked LM at equal train FLOPs on 10M words of
Wikipedia, each against random initialisation, on benchmarks nobody here wrote.

  python benchmarks/pretraining_value.py --work_dir=/tmp/pv --methods=electra,mlm --seeds=0,1 \
      --train_flops_budget=2e14

Stages (each skipped when its output exists, so a killed run resumes):
  data      build_vocab (16k, `tokenizers`) and create_pretraining_data of `../shared/data/wiki`:
            wiki_00-59 unmasked (dynamic masking), wiki_60-63 held out with fixed masks;
  pretrain  run_pretraining with `gin/models/one_machine.gin` + `gin/tasks/<method>.gin` per
            method and seed; and per method a random initialisation (one step at learning rate
            0: the warmup starts at 0, so the weights stay the initial ones);
  evaluate  per run: held-out pre-training figures (`--mode=eval`), BLiMP (`score_pairs`: PLL for
            both, the discriminator score for ELECTRA), frozen probes (`run_probes`: PTB POS and
            SST-2) and SST-2 fine-tuned with `run_glue` (`--sst2_train_examples` rows, 3 epochs);
  report    the table (median and [min, max] over seeds) in Markdown.
`--parallel=2` runs two processes at a time, one core each (taskset).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--work_dir", required=True)
  parser.add_argument("--methods", default="electra,mlm")
  parser.add_argument("--seeds", default="0,1")
  parser.add_argument("--train_flops_budget", type=float, default=2e14)
  parser.add_argument("--model_gin", default="gin/models/one_machine.gin")
  parser.add_argument("--vocab_size", type=int, default=16000)
  parser.add_argument("--sst2_train_examples", type=int, default=8000)
  parser.add_argument("--max_eval_batches", type=int, default=40)
  parser.add_argument("--parallel", type=int, default=1)
  parser.add_argument("--stages", default="data,pretrain,evaluate,report")
  parser.add_argument("--output_file", default="", help="Also write the report here.")
  args = parser.parse_args(argv)
  if args.train_flops_budget <= 0 or args.parallel < 1 or args.sst2_train_examples < 1:
    parser.error("--train_flops_budget, --parallel and --sst2_train_examples must be positive")
  return args


def log(message):
  print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run_jobs(jobs, parallel):
  """Runs `(name, argv, log_path)` jobs, `parallel` at a time (pinned to one core each when
  parallel > 1); fails naming the job and its log."""
  pending, running = list(jobs), []
  while pending or running:
    while pending and len(running) < parallel:
      name, argv, log_path = pending.pop(0)
      core = [c for c in range(parallel) if c not in {r[3] for r in running}][0]
      prefix = ["taskset", "-c", str(core)] if parallel > 1 else []
      log(f"start {name} (log {log_path})")
      handle = open(log_path, "a", encoding="utf-8")
      process = subprocess.Popen(prefix + argv, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
      running.append((name, process, handle, core, log_path, time.time()))
    time.sleep(2)
    for job in list(running):
      name, process, handle, _, log_path, started = job
      if process.poll() is None:
        continue
      handle.close()
      running.remove(job)
      if process.returncode != 0:
        raise SystemExit(f"{name} failed (exit {process.returncode}); see {log_path}")
      log(f"done {name} in {time.time() - started:.0f} s")


def stage_data(args):
  vocab = os.path.join(args.work_dir, "vocab.txt")
  train = sorted(glob.glob(os.path.join(SHARED, "wiki", "wiki_[0-5]*.txt")))
  heldout = sorted(glob.glob(os.path.join(SHARED, "wiki", "wiki_6*.txt")))
  jobs = []
  if not os.path.exists(vocab):
    run_jobs([("build_vocab", ["build_vocab", f"--input_files={','.join(train)}",
                               f"--vocab_size={args.vocab_size}", f"--output_file={vocab}"],
               os.path.join(args.work_dir, "build_vocab.log"))], 1)
  for name, files, extra in (("records", train, ["--dupe_factor=0"]),
                             ("heldout", heldout, ["--dupe_factor=1", "--seed=1",
                                                   "--max_predictions_per_seq=20"])):
    if not os.path.exists(os.path.join(args.work_dir, name)):
      jobs.append((name, ["create_pretraining_data", f"--input_files={','.join(files)}",
                          f"--vocab_file={vocab}", "--max_seq_length=128",
                          f"--output_dir={os.path.join(args.work_dir, name)}"] + extra,
                   os.path.join(args.work_dir, f"{name}.log")))
  run_jobs(jobs, 1)


def runs(args):
  """(run name, method, seed or None for the random initialisation)."""
  out = []
  for method in args.methods.split(","):
    out += [(f"{method}_s{seed}", method, int(seed)) for seed in args.seeds.split(",") if seed]
    out.append((f"{method}_random", method, None))
  return out


def pretrain_argv(args, method, model_dir, extra=()):
  return ["run_pretraining", f"--gin_file={args.model_gin}", f"--gin_file=gin/tasks/{method}.gin",
          f"--input_records={os.path.join(args.work_dir, 'records')}",
          f"--model_dir={model_dir}"] + list(extra)


def stage_pretrain(args):
  jobs = []
  for name, method, seed in runs(args):
    model_dir = os.path.join(args.work_dir, name)
    if os.path.isdir(os.path.join(model_dir, "export")):
      continue
    if seed is None:  # the initial weights: one step whose learning rate is 0 (warmup from 0)
      extra = ["--gin_param=TrainConfig.num_train_steps = 1",
               "--gin_param=TrainConfig.train_flops_budget = 0.0"]
    else:
      extra = [f"--gin_param=TrainConfig.train_flops_budget = {args.train_flops_budget}",
               f"--gin_param=TrainConfig.seed = {seed}"]
    jobs.append((name, pretrain_argv(args, method, model_dir, extra),
                 os.path.join(args.work_dir, f"{name}.log")))
  run_jobs(jobs, args.parallel)


def stage_evaluate(args):
  jobs = []
  for name, method, seed in runs(args):
    model_dir = os.path.join(args.work_dir, name)
    out = os.path.join(args.work_dir, "eval", name)
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(os.path.join(model_dir, "eval_results.jsonl")):
      jobs.append((f"{name} held-out", pretrain_argv(args, method, model_dir, [
          "--mode=eval", f"--eval_input={os.path.join(args.work_dir, 'heldout')}",
          f"--gin_param=EvalConfig.max_eval_batches = {args.max_eval_batches}"]),
          os.path.join(out, "heldout.log")))
    scores = ["pll"] + (["discriminator"] if method != "mlm" else [])
    for score in scores:
      if not os.path.exists(os.path.join(out, f"blimp_{score}", "pairs_results.json")):
        jobs.append((f"{name} BLiMP {score}", [
            "score_pairs", f"--model_dir={model_dir}", f"--pairs={os.path.join(SHARED, 'blimp')}",
            f"--score={score}", f"--output_dir={os.path.join(out, f'blimp_{score}')}"],
            os.path.join(out, f"blimp_{score}.log")))
    export = os.path.join(model_dir, "export")
    if seed is not None and not os.path.exists(os.path.join(out, "probes.json")):
      jobs.append((f"{name} probes", [
          "run_probes", f"--init_checkpoint={export}",
          f"--pos_data_dir={os.path.join(SHARED, 'tagging', 'pos_ptb')}",
          f"--glue_data_dir={os.path.join(SHARED, 'glue', 'SST-2')}", "--random_init_seeds=1",
          f"--seed={seed}", f"--output_file={os.path.join(out, 'probes.json')}"],
          os.path.join(out, "probes.log")))
    if not os.path.exists(os.path.join(out, "sst2", "eval_results.json")):
      jobs.append((f"{name} SST-2", [
          "run_glue", "--task=sst-2", f"--data_dir={os.path.join(SHARED, 'glue', 'SST-2')}",
          f"--init_checkpoint={export}", f"--model_dir={os.path.join(out, 'sst2')}",
          f"--max_train_examples={args.sst2_train_examples}", "--max_seq_length=64",
          "--num_trials=1", f"--seed={seed or 0}"], os.path.join(out, "sst2.log")))
  run_jobs(jobs, args.parallel)


def read_json(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def figures(args, name):
  """{figure: value} of one run (absent figures are left out)."""
  out = os.path.join(args.work_dir, "eval", name)
  model_dir = os.path.join(args.work_dir, name)
  row = {}
  results = os.path.join(model_dir, "eval_results.jsonl")
  if os.path.exists(results):
    with open(results, encoding="utf-8") as f:
      last = [json.loads(line) for line in f if line.strip()][-1]
    for key in ("train_flops", "fixed_noise_auc", "pll_swap_accuracy", "mlm_accuracy", "rtd_auc"):
      if key in last:
        row[f"held-out {key}"] = last[key]
  for score in ("pll", "discriminator"):
    path = os.path.join(out, f"blimp_{score}", "pairs_results.json")
    if os.path.exists(path):
      report = read_json(path)
      row[f"BLiMP-13 {score}"] = report["overall"] / 100
      row[f"BLiMP-13 {score} pairs/s"] = report["pairs_per_second"]
  path = os.path.join(out, "probes.json")
  if os.path.exists(path):
    probes = read_json(path)
    for key, value in probes["pretrained"].items():
      row[f"{key.replace('probe_', 'probe ').replace('_accuracy', '')}"] = value
    for key, value in probes["random_init"].items():
      if not key.endswith("_all"):
        row[f"{key.replace('probe_', 'probe ').replace('_accuracy', '')} (random init)"] = value
  path = os.path.join(out, "sst2", "eval_results.json")
  if os.path.exists(path):
    summary = read_json(path)
    row["SST-2 fine-tuned"] = summary.get("median", summary).get("accuracy")
  return row


def summarize(values):
  values = [v for v in values if v is not None]
  if not values:
    return "—"
  if len(values) == 1:
    return f"{values[0]:.4f}"
  return f"{statistics.median(values):.4f} [{min(values):.4f}, {max(values):.4f}]"


def stage_report(args):
  names = [f for f in ("held-out train_flops", "held-out fixed_noise_auc",
                       "held-out pll_swap_accuracy", "held-out mlm_accuracy", "held-out rtd_auc",
                       "BLiMP-13 pll", "BLiMP-13 discriminator", "probe pos", "probe pos (random init)",
                       "probe sst-2", "probe sst-2 (random init)", "SST-2 fine-tuned",
                       "BLiMP-13 pll pairs/s", "BLiMP-13 discriminator pairs/s")]
  columns = []
  for method in args.methods.split(","):
    seeds = [figures(args, f"{method}_s{seed}") for seed in args.seeds.split(",") if seed]
    columns.append((f"{method} ({len(seeds)} seeds)", seeds))
    columns.append((f"{method} random init", [figures(args, f"{method}_random")]))
  lines = ["| figure | " + " | ".join(c for c, _ in columns) + " |",
           "|---|" + "---|" * len(columns)]
  for name in names:
    cells = [summarize([row.get(name) for row in rows]) for _, rows in columns]
    if any(c != "—" for c in cells):
      lines.append(f"| {name} | " + " | ".join(cells) + " |")
  text = "\n".join(lines)
  print(text)
  if args.output_file:
    with open(args.output_file, "w", encoding="utf-8") as f:
      f.write(text + "\n")


def main(argv=None):
  args = parse_args(argv)
  os.makedirs(args.work_dir, exist_ok=True)
  stages = {"data": stage_data, "pretrain": stage_pretrain, "evaluate": stage_evaluate,
            "report": stage_report}
  for stage in args.stages.split(","):
    if stage not in stages:
      raise SystemExit(f"--stages: unknown stage {stage!r} (one of {', '.join(stages)})")
    log(f"stage {stage}")
    stages[stage](args)


if __name__ == "__main__":
  sys.exit(main())
