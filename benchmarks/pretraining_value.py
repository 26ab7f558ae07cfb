r"""Does pre-training pay? ELECTRA vs the BERT masked LM at equal train FLOPs on 10M words of
Wikipedia, each against random initialisation, on benchmarks nobody here wrote.

  python benchmarks/pretraining_value.py --work_dir=/tmp/pv --methods=electra,mlm --seeds=0,1 \
      --train_flops_budget=1.5e14

Recipes (`--recipe`):
  sentences  (the README's) an 8k vocabulary; training examples of whole sentences up to 64
             pieces (`--packing=sentences --sentences_per_example=0`); `gin/models/one_machine.gin`
             + the task + `gin/recipes/one_machine_sentences.gin` (batch 16, T5 relative positions,
             post-LayerNorm, no dropout, the task's own masking, lr 1e-3);
  paragraphs the recipe before it (issue 37): a 16k vocabulary, paragraph text packed into 128
             pieces, `one_machine.gin` + the task alone (batch 64, BERT's blocks and masking).

Stages (each skipped when its output exists, so a killed run resumes):
  data      build_vocab (`tokenizers`) and create_pretraining_data of `../shared/data/wiki`:
            wiki_00-59 unmasked (dynamic masking), wiki_60-63 held out with fixed masks;
  pretrain  run_pretraining per method and seed (its structure-onset monitor on the held-out
            records: `onset.jsonl`); and per method a random initialisation (one step at learning
            rate 0: the warmup starts at 0, so the weights stay the initial ones; its held-out
            figures evaluated at its end, `--mode=train_and_eval`);
  evaluate  per run: held-out pre-training figures (`--mode=eval`, unless the run wrote them),
            BLiMP (`score_pairs`: PLL for both, the discriminator score for ELECTRA), frozen
            probes (`run_probes`: PTB POS, SST-2 and the UD EWT parsing probe's UAS), SST-2
            fine-tuned with `run_glue` (`--sst2_train_examples` rows, 3 epochs), CoLA (all its
            rows; Matthews correlation on dev) and, per seed, UD EWT fine-tuned with `run_parsing`
            (LAS on dev);
  representations  how distinct each export's last-layer token vectors are (mean cosine of random
            token pairs, effective rank) on 128 SST-2 dev sentences: a collapsed encoder maps
            every token near one vector;
  context   whether each export reads word order: attention entropy ÷ uniform per layer and the
            order sensitivity (1 − cosine of a token's vector with its context shuffled);
  report    the table (median and [min, max] over seeds) in Markdown; with two methods or more,
            a last column sets the first against the second (the difference of the medians,
            beyond or within the seed spread); `--trend_work_dirs` (the same methods at other
            budgets) adds the gap at each budget and where it reaches 0 (linear in log FLOPs:
            interpolated between budgets, or extrapolated from the last two when closing).
`--parallel=2` runs two processes at a time, one core each (taskset); a job that fails, Ctrl-C or
SIGTERM stops the others too (they save their state: the same command resumes them).
`--gin_param` binds a setting in every run of the work dir after the recipe's files (a screen of
one setting: a work dir of its own, whose `vocab.txt`, `records` and `heldout` may link to
another's); a run started without one of them, or with another value, is refused, not resumed or
reported as this setting's.
`--shared_data` points at another copy of the shared data folder (e.g. slices of it, as the test of
the README's command does); `--vocab_size` overrides the recipe's.
"""
import glob
import json
import os
import statistics
import sys
import time

from absl import app
from absl import flags

import common
from official_rtd.training import collapse_monitor
from official_rtd.utils import textio

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")  # --shared_data's default

# recipe: (vocabulary size, sequence length, training-records flags, gin files after the task's)
RECIPES = {
    "sentences": (8000, 64, ["--packing=sentences", "--sentences_per_example=0"],
                  ["gin/recipes/one_machine_sentences.gin"]),
    "paragraphs": (16000, 128, [], []),
}


flags.DEFINE_string("work_dir", None, "Where the data, runs, evaluations and report go.")
flags.DEFINE_string("methods", "electra,mlm", "Pre-training methods (gin/tasks/<method>.gin, or "
                    "a recipe that includes one, gin/recipes/<method>.gin); `a+b` composes "
                    "their files in that order (e.g. electra_one_machine+ale).")
flags.DEFINE_string("seeds", "0,1", "Seeds, one run each per method.")
flags.DEFINE_multi_string("gin_param", [], "A gin binding for every run, after the recipe's files "
                          "(repeatable), e.g. 'OptimizerConfig.learning_rate = 5e-4'.")
flags.DEFINE_float("train_flops_budget", 2e14, "Train FLOPs per run.")
flags.DEFINE_enum("recipe", "sentences", sorted(RECIPES), "The recipe (see above).")
flags.DEFINE_string("model_gin", "gin/models/one_machine.gin", "The model's sizes.")
flags.DEFINE_integer("sst2_train_examples", 8000, "SST-2 training rows fine-tuned on.")
flags.DEFINE_integer("max_eval_batches", 40, "Held-out batches evaluated.")
flags.DEFINE_string("shared_data", SHARED, "The shared data folder (wiki/, blimp/, "
                    "tagging/pos_ptb/, glue/SST-2/, parsing/ud_ewt/), e.g. slices of it.")
flags.DEFINE_integer("vocab_size", 0, "Vocabulary size (0: the recipe's).")
flags.DEFINE_string("blimp_pairs", "", "BLiMP files or directory (e.g. a subset: the first N "
                    "pairs of each paradigm); default <shared_data>/blimp.")
flags.DEFINE_integer("parallel", 1, "Processes at a time, one core each.")
flags.DEFINE_string("stages", "data,pretrain,evaluate,representations,context,report",
                    "Stages to run, in order.")
flags.DEFINE_string("output_file", "", "Also write the report here.")
flags.DEFINE_bool("overwrite", False, "Replace an existing --output_file.")
flags.DEFINE_string("figures_dir", "", "A folder of each run's figures (`<run>.json`): the report "
                    "writes there every run it finds evaluated in --work_dir and reads from it "
                    "the runs --work_dir lacks, so runs of several sessions or work dirs make one "
                    "table.")
flags.DEFINE_list("trend_work_dirs", [],
                  "report: work dirs of the same methods at other budgets; a second table gives "
                  "the first method's gap to the second at each budget and where it closes.")
FLAGS = flags.FLAGS


def refuse(message: str):
  """A bad flag value: one line naming it, exit status 2 (as for a flag absl cannot parse)."""
  print(f"pretraining_value.py: error: {message}", file=sys.stderr)
  sys.exit(2)


STAGES = ("data", "pretrain", "evaluate", "representations", "context", "report")


def checked_flags():
  """FLAGS, checked (each refusal is one line, before any work), their paths made absolute from
  the caller's working directory once (the jobs run in the repository)."""
  for name in ("work_dir", "shared_data", "blimp_pairs", "output_file", "figures_dir"):
    if getattr(FLAGS, name):
      setattr(FLAGS, name, os.path.abspath(getattr(FLAGS, name)))
  FLAGS.trend_work_dirs = [os.path.abspath(d) for d in FLAGS.trend_work_dirs]
  unknown_stages = [s for s in FLAGS.stages.split(",") if s not in STAGES]
  if unknown_stages:
    refuse(f"--stages: unknown {', '.join(unknown_stages)} (of {', '.join(STAGES)})")
  if not [seed for seed in FLAGS.seeds.split(",") if seed.strip()]:
    refuse(f"--seeds={FLAGS.seeds!r} selects no run")
  if not all(seed.strip().isdigit() for seed in FLAGS.seeds.split(",")):
    refuse(f"--seeds={FLAGS.seeds} must be integers >= 0, comma-separated")
  if FLAGS.output_file and os.path.exists(FLAGS.output_file) and not FLAGS.overwrite:
    refuse(f"--output_file={FLAGS.output_file} exists: give --overwrite to replace it")
  if FLAGS.train_flops_budget <= 0 or FLAGS.parallel < 1 or FLAGS.sst2_train_examples < 1:
    refuse("--train_flops_budget, --parallel and --sst2_train_examples must be positive")
  if FLAGS.figures_dir and os.path.exists(FLAGS.figures_dir) and not os.path.isdir(
      FLAGS.figures_dir):
    refuse(f"--figures_dir={FLAGS.figures_dir} is a file, not a folder")
  if FLAGS.vocab_size < 0:
    refuse(f"--vocab_size={FLAGS.vocab_size} must be >= 0")
  malformed = [b for b in FLAGS.gin_param if not all(parse_binding(b))]
  if malformed:  # found here, not by run_pretraining after the data stage
    refuse(f"--gin_param: {malformed[0]!r} is not 'name = value'")
  unknown = [m for m in FLAGS.methods.split(",")
             if not all(os.path.isfile(os.path.join(REPO, f)) for f in method_gins(m))]
  if unknown:
    refuse(f"--methods: no gin/tasks/<method>.gin or gin/recipes/<method>.gin for {unknown}")
  if not os.path.isdir(os.path.join(FLAGS.shared_data, "wiki")):
    refuse(f"--shared_data={FLAGS.shared_data} holds no wiki/ folder")
  FLAGS.blimp_pairs = FLAGS.blimp_pairs or os.path.join(FLAGS.shared_data, "blimp")
  return FLAGS


def log(message):
  print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run_jobs(jobs, parallel):
  """`common.run_jobs` in the repository, logged with the time."""
  common.run_jobs(jobs, parallel, cwd=REPO, log=log)


def stage_data(args):
  vocab_size, length, packing, _ = RECIPES[args.recipe]
  vocab_size = args.vocab_size or vocab_size
  vocab = os.path.join(args.work_dir, "vocab.txt")
  train = sorted(glob.glob(os.path.join(args.shared_data, "wiki", "wiki_[0-5]*.txt")))
  heldout = sorted(glob.glob(os.path.join(args.shared_data, "wiki", "wiki_6*.txt")))
  jobs = []
  if not os.path.exists(vocab):
    run_jobs([("build_vocab", ["build_vocab", f"--input_files={','.join(train)}",
                               f"--vocab_size={vocab_size}", f"--output_file={vocab}"],
               os.path.join(args.work_dir, "build_vocab.log"))], 1)
  for name, files, extra in (("records", train, ["--dupe_factor=0"] + packing),
                             ("heldout", heldout, ["--dupe_factor=1", "--seed=1",
                                                   "--max_predictions_per_seq=20",
                                                   "--single_segment_prob=1.0"])):
    if not os.path.exists(os.path.join(args.work_dir, name)):
      jobs.append((name, ["create_pretraining_data", f"--input_files={','.join(files)}",
                          f"--vocab_file={vocab}", f"--max_seq_length={length}",
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


def method_gin(method: str) -> str:
  """A method's gin file: `gin/tasks/<method>.gin`, else a recipe that includes one,
  `gin/recipes/<method>.gin` (e.g. electra_one_machine)."""
  task = os.path.join("gin", "tasks", f"{method}.gin")
  return task if os.path.isfile(os.path.join(REPO, task)) else os.path.join("gin", "recipes",
                                                                            f"{method}.gin")


def method_gins(method: str) -> list:
  """The gin files of a `--methods` entry, in order: one file per `+`-joined part (e.g.
  `electra_one_machine+ale`: the recipe's warm-up, then ALE's settings)."""
  return [method_gin(part) for part in method.split("+")]


def pretrain_argv(args, method, model_dir, extra=(), overrides=()):
  """`run_pretraining`'s argv: the gin files, `extra`, the command's `--gin_param` bindings, then
  `overrides` (bindings that must win over the command's, e.g. the random initialisation's)."""
  recipe_gin = RECIPES[args.recipe][3]
  return (["run_pretraining", f"--gin_file={args.model_gin}"]
          + [f"--gin_file={f}" for f in method_gins(method) + recipe_gin]
          + [f"--input_records={os.path.join(args.work_dir, 'records')}",
             f"--model_dir={model_dir}"] + list(extra)
          + [f"--gin_param={binding}" for binding in args.gin_param] + list(overrides))


# A random initialisation is built without the masked-LM warm-up, which a 1-step run could not
# start (its encoder is the same); every job that builds its model from the gin files says so too.
RANDOM_INIT_PARAMS = tuple(f"--gin_param=masked_lm_warmup.{binding}" for binding in (
    "rtd_start_step = 0", "masked_warmup = False", "discriminator_mlm_weight = 0.0",
    "discriminator_mlm_steps = 0"))


def random_init_params(method: str) -> tuple:
  """RANDOM_INIT_PARAMS, and for SCRIPT's own warm-up (gin/recipes/script_warmup.gin) its critic
  from step 0."""
  script = method.split("+")[0] == "script"
  return RANDOM_INIT_PARAMS + (("--gin_param=build_script_pretrainer.critic_start_step = 0",)
                               if script else ())


def random_init_overrides(method: str) -> tuple:
  """What makes a run the initial weights (one step at learning rate 0, the warmup starting at
  0; `random_init_params`), after the command's `--gin_param`, which may bind the same settings
  (a screen of the warm-up's start: `masked_lm_warmup.rtd_start_step = 1500`)."""
  return ("--gin_param=TrainConfig.num_train_steps = 1",
          "--gin_param=TrainConfig.train_flops_budget = 0.0", *random_init_params(method))


def stage_pretrain(args):
  jobs = []
  for name, method, seed in runs(args):
    model_dir = os.path.join(args.work_dir, name)
    overrides = random_init_overrides(method) if seed is None else ()
    if seed is None:  # the initial weights, evaluated on the held-out batches at the end (as
      # the evaluate stage's held-out job would)
      extra = ["--noonset_monitor", "--mode=train_and_eval",
               f"--eval_input={os.path.join(args.work_dir, 'heldout')}",
               f"--gin_param=EvalConfig.max_eval_batches = {args.max_eval_batches}"]
    else:
      extra = [f"--eval_input={os.path.join(args.work_dir, 'heldout')}",
               f"--gin_param=TrainConfig.train_flops_budget = {args.train_flops_budget}",
               f"--gin_param=TrainConfig.seed = {seed}"]
    check_bindings(args, model_dir, overrides)
    if os.path.isdir(os.path.join(model_dir, "export")):
      continue
    jobs.append((name, pretrain_argv(args, method, model_dir, extra, overrides),
                 os.path.join(args.work_dir, f"{name}.log")))
  run_jobs(jobs, args.parallel)


def check_bindings(args, model_dir, overrides=()):
  """Refuses to adopt a run (finished, or to resume) that was started without one of this
  command's `--gin_param` bindings, or with another value for it: its figures would be reported
  as this setting's. Bindings the run has beyond them (e.g. a hand-run's monitor settings) are
  its own, and so are the settings its `overrides` (`--gin_param=...` flags) bind over the
  command's."""
  path = os.path.join(model_dir, "run_flags.json")
  if not args.gin_param or not os.path.exists(path):
    return
  with open(path, encoding="utf-8") as f:
    recorded = dict(parse_binding(b) for b in json.load(f).get("gin_param", []))
  overridden = {parse_binding(flag.split("=", 1)[1])[0] for flag in overrides}
  for name, value in map(parse_binding, args.gin_param):
    if name not in overridden and recorded.get(name) != value:
      refuse(f"{model_dir} was started with {name} = {recorded.get(name, '(unbound)')}, not "
             f"{value} (--gin_param): give a new --work_dir (its vocab.txt, records and heldout "
             "may link to this one's)")


def parse_binding(binding: str):
  """'name = value' -> (name, value), spaces around each removed."""
  name, _, value = binding.partition("=")
  return name.strip(), " ".join(value.split())


def stage_evaluate(args):
  jobs = []
  for name, method, seed in runs(args):
    model_dir = os.path.join(args.work_dir, name)
    out = os.path.join(args.work_dir, "eval", name)
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(os.path.join(model_dir, "eval_results.jsonl")):
      jobs.append((f"{name} held-out", pretrain_argv(args, method, model_dir, [
          "--mode=eval", f"--eval_input={os.path.join(args.work_dir, 'heldout')}",
          f"--gin_param=EvalConfig.max_eval_batches = {args.max_eval_batches}"],
          random_init_params(method) if seed is None else ()), os.path.join(out, "heldout.log")))
    scores = ["pll"] + (["discriminator"] if method != "mlm" else [])
    for score in scores:
      if not os.path.exists(os.path.join(out, f"blimp_{score}", "pairs_results.json")):
        jobs.append((f"{name} BLiMP {score}", [
            "score_pairs", f"--run_dir={model_dir}", f"--pairs={args.blimp_pairs}",
            f"--score={score}", f"--output_dir={os.path.join(out, f'blimp_{score}')}",
            "--overwrite"],  # an earlier, killed attempt may have left pairs_scores.tsv
            os.path.join(out, f"blimp_{score}.log")))
    export = os.path.join(model_dir, "export")
    if seed is not None and not os.path.exists(os.path.join(out, "probes.json")):
      jobs.append((f"{name} probes", [
          "run_probes", f"--init_checkpoint={export}",
          f"--pos_data_dir={os.path.join(args.shared_data, 'tagging', 'pos_ptb')}",
          f"--glue_data_dir={os.path.join(args.shared_data, 'glue', 'SST-2')}", "--random_init_seeds=1",
          f"--ud_data_dir={os.path.join(args.shared_data, 'parsing', 'ud_ewt')}",
          f"--max_seq_length={RECIPES[args.recipe][1]}",
          f"--seed={seed}", f"--output_file={os.path.join(out, 'probes.json')}"],
          os.path.join(out, "probes.log")))
    if not os.path.exists(os.path.join(out, "sst2", "eval_results.json")):
      jobs.append((f"{name} SST-2", [
          "run_glue", "--task=sst-2", f"--data_dir={os.path.join(args.shared_data, 'glue', 'SST-2')}",
          f"--init_checkpoint={export}", f"--model_dir={os.path.join(out, 'sst2')}",
          f"--max_train_examples={args.sst2_train_examples}", "--max_seq_length=64",
          "--num_trials=1", f"--seed={seed or 0}"], os.path.join(out, "sst2.log")))
    if seed is not None and not os.path.exists(os.path.join(out, "cola", "eval_results.json")):
      jobs.append((f"{name} CoLA", [
          "run_glue", "--task=cola", f"--data_dir={os.path.join(args.shared_data, 'glue', 'CoLA')}",
          f"--init_checkpoint={export}", f"--model_dir={os.path.join(out, 'cola')}",
          "--max_seq_length=64", "--num_trials=1", f"--seed={seed}"],
          os.path.join(out, "cola.log")))
    if seed is not None and not os.path.exists(os.path.join(out, "ud", "eval_results.json")):
      jobs.append((f"{name} UD parsing", [
          "run_parsing", f"--data_dir={os.path.join(args.shared_data, 'parsing', 'ud_ewt')}",
          f"--init_checkpoint={export}", f"--model_dir={os.path.join(out, 'ud')}",
          f"--max_seq_length={RECIPES[args.recipe][1]}", "--num_trials=1", f"--seed={seed}"],
          os.path.join(out, "ud.log")))
  run_jobs(jobs, args.parallel)


def pending_exports(args, filename):
  """(run name, output path, encoder, tokenizer) of every run whose export exists and whose
  `eval/<run>/<filename>` does not yet; `write_row` writes that file."""
  from official_rtd.data import tokenizer as tokenizer_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.data import vocab as vocab_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.interop import export  # pylint: disable=g-import-not-at-top
  for name, _, _ in runs(args):
    out = os.path.join(args.work_dir, "eval", name, filename)
    export_dir = os.path.join(args.work_dir, name, "export")
    if os.path.exists(out) or not os.path.isdir(export_dir):
      continue
    vocab = vocab_lib.load_vocab(os.path.join(export_dir, "vocab.txt"))
    yield name, out, export.load_encoder(export_dir), tokenizer_lib.WordPieceTokenizer(vocab)


def write_row(name, out, row):
  os.makedirs(os.path.dirname(out), exist_ok=True)
  with open(out, "w", encoding="utf-8") as f:
    json.dump(row, f)
  log(f"{name}: {row}")


def stage_representations(args):
  """Per run: how distinct the export's last-layer token vectors are on 128 SST-2 dev sentences
  (mean cosine of random token pairs; effective rank = exp(entropy of the centred outputs'
  normalised squared singular values)). A collapsed encoder maps every token near one vector."""
  import numpy as np  # pylint: disable=g-import-not-at-top

  from official_rtd.data import glue_data  # pylint: disable=g-import-not-at-top
  task = glue_data.get_task("sst-2")
  sentences = [e.text_a for e in glue_data.read_tsv(
      os.path.join(args.shared_data, "glue", "SST-2", "dev.tsv"), task, "dev")[:128]]
  for name, out, encoder, tokenizer in pending_exports(args, "representations.json"):
    vocab = tokenizer.vocab
    vectors = []
    for pieces in tokenizer.tokenize_to_lists(sentences):
      ids = np.array([[vocab.cls_id, *pieces[:62], vocab.sep_id]], np.int32)
      sequence = encoder({"input_word_ids": ids, "input_mask": np.ones_like(ids),
                          "input_type_ids": np.zeros_like(ids)}, training=False)["sequence_output"]
      vectors.append(sequence.numpy()[0, 1:-1])
    x = np.concatenate(vectors)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(x), 4000), rng.integers(0, len(x), 4000)
    singular = np.linalg.svd(x - x.mean(0), compute_uv=False)
    p = singular ** 2 / np.sum(singular ** 2)
    row = {"token_cosine": float(np.mean(np.sum(unit[i] * unit[j], 1))),
           "effective_rank": float(np.exp(-np.sum(p * np.log(p + 1e-12)))),
           "hidden_size": int(x.shape[1]), "tokens": int(len(x))}
    write_row(name, out, row)


def stage_context(args):
  """Per run: does the encoder read word order? On 32 windows of 64 pieces of held-out wiki
  text: each layer's attention entropy ÷ the uniform one's (1: attention averages the sequence,
  a bag of words) and the order sensitivity (1 − cosine of a token's last-layer vector with its
  context in order vs shuffled; 0: blind to order). `modeling/networks/attention_maps.py`."""
  import numpy as np  # pylint: disable=g-import-not-at-top

  from official_rtd.modeling.networks import attention_maps  # pylint: disable=g-import-not-at-top
  with open(os.path.join(args.shared_data, "wiki", "wiki_63.txt"), encoding="utf-8") as f:
    text = " ".join(line.strip() for _, line in zip(range(400), f))
  for name, out, encoder, tokenizer in pending_exports(args, "context.json"):
    vocab = tokenizer.vocab
    pieces = tokenizer.tokenize_to_lists([text])[0]
    width = 64
    rows = np.array([[vocab.cls_id, *pieces[i * (width - 2):(i + 1) * (width - 2)], vocab.sep_id]
                     for i in range(32)], np.int32)
    inputs = {"input_word_ids": rows, "input_mask": np.ones_like(rows),
              "input_type_ids": np.zeros_like(rows)}
    ratios = [float(attention_maps.entropy_ratio(m, inputs["input_mask"]).mean())
              for m in attention_maps.attention_maps(encoder, inputs)]
    row = {"attention_entropy_ratio": ratios,
           "order_sensitivity": attention_maps.order_sensitivity(encoder, rows)}
    write_row(name, out, row)


def read_json(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def probe_row_name(key: str) -> str:
  """The report's row of a `run_probes` figure: `probe_pos_accuracy` -> "probe pos",
  `probe_ud_uas_best_layer` -> "probe ud_uas (best layer)", `..._best_layer_index` -> "probe ...
  (best layer's block)"."""
  name = key.replace("probe_", "probe ").replace("_accuracy", "")
  return name.replace("_best_layer_index", " (best layer's block)").replace(
      "_best_layer", " (best layer)")


def figures(work_dir, name):
  """{figure: value} of one run (absent figures are left out)."""
  out = os.path.join(work_dir, "eval", name)
  model_dir = os.path.join(work_dir, name)
  row = {}
  results = os.path.join(model_dir, "eval_results.jsonl")
  if os.path.exists(results):
    with open(results, encoding="utf-8") as f:
      last = [json.loads(line) for line in f if line.strip()][-1]
    for key in ("train_flops", "fixed_noise_auc", "pll_swap_accuracy", "mlm_accuracy", "rtd_auc"):
      if key in last:
        row[f"held-out {key}"] = last[key]
  log_path = os.path.join(work_dir, f"{name}.log")  # the pre-training job's, resumes appended
  if os.path.exists(log_path):
    with open(log_path, encoding="utf-8", errors="replace") as f:
      collapse = collapse_monitor.logged_collapse(f.read())
    if collapse is not None:  # a run with a detector: did the trainer warn of a collapse?
      row["detector collapse warning"] = 1.0 if collapse[0] else 0.0
      if collapse[0]:
        row["detector collapse from step"] = collapse[1]
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
      row[probe_row_name(key)] = value
    for key, value in probes["random_init"].items():
      if not key.endswith("_all") and "skipped" not in key:
        row[f"{probe_row_name(key)} (random init)"] = value
  path = os.path.join(model_dir, "onset.jsonl")
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      onset = [json.loads(line) for line in f if line.strip()][-1]
    row["largest head on the previous token (held-out)"] = onset["onset_attn_prev_max"]
    row["largest head on the next token (held-out)"] = onset["onset_attn_next_max"]
  path = os.path.join(out, "representations.json")
  if os.path.exists(path):
    rep = read_json(path)
    row["last-layer token cosine"] = rep["token_cosine"]
    row["last-layer effective rank"] = rep["effective_rank"]
  path = os.path.join(out, "context.json")
  if os.path.exists(path):
    context = read_json(path)
    row["attention entropy ÷ uniform (mean of layers)"] = statistics.mean(
        context["attention_entropy_ratio"])
    row["order sensitivity (1 − cosine)"] = context["order_sensitivity"]
  path = os.path.join(out, "sst2", "eval_results.json")
  if os.path.exists(path):
    summary = read_json(path)
    median = summary["median"]
    row["SST-2 fine-tuned"] = median.get("dev", median).get("accuracy")
  path = os.path.join(out, "cola", "eval_results.json")
  if os.path.exists(path):
    median = read_json(path)["median"]
    row["CoLA fine-tuned (MCC)"] = median.get("dev", median).get("mcc")
  path = os.path.join(out, "ud", "eval_results.json")
  if os.path.exists(path):
    median = read_json(path)["median"]
    row["UD EWT fine-tuned (LAS)"] = median.get("dev", median).get("las")
  return row


def summarize(values):
  values = [v for v in values if v is not None]
  if not values:
    return "—"
  largest = max(abs(v) for v in values)
  fmt = ((lambda v: f"{v:.3g}") if largest >= 1000 else
         (lambda v: f"{v:.2e}") if 0 < largest < 0.01 else (lambda v: f"{v:.4f}"))
  if len(values) == 1:
    return fmt(values[0])
  figures = common.spread(values)
  return f"{fmt(figures.median)} [{fmt(figures.min)}, {fmt(figures.max)}]"


def kept_figures(work_dir, name, figures_dir=""):
  """`figures(work_dir, name)`; with `figures_dir`, also kept there as `<name>.json` (written when
  the run has figures in `work_dir`, read back when it has none)."""
  row = figures(work_dir, name)
  if not figures_dir:
    return row
  path = os.path.join(figures_dir, f"{name}.json")
  if row:
    os.makedirs(figures_dir, exist_ok=True)
    textio.write_atomic(path, lambda f: json.dump(row, f, indent=1, sort_keys=True))
    return row
  return read_json(path) if os.path.isfile(path) else {}


def seed_rows(work_dir, method, seeds=None, figures_dir=""):
  """Each seed's figures of `method` in `work_dir` (`seeds`: those; None: every `<method>_s<N>`),
  or kept in `figures_dir` (`kept_figures`)."""
  if seeds is None:
    prefix = os.path.join(work_dir, f"{method}_s")
    seeds = sorted(path[len(prefix):] for path in glob.glob(prefix + "*")
                   if path[len(prefix):].isdigit())
  return [row for row in (kept_figures(work_dir, f"{method}_s{seed}", figures_dir)
                          for seed in seeds) if row]


def trend_table(work_dirs, methods, names):
  """The first method's gap to the second (difference of the medians over seeds) per figure at
  each work dir's budget (the runs' held-out train FLOPs), ascending, and where the gap closes
  (`common.crossing_budget`)."""
  points = []  # (budget, the first method's rows, the second's)
  for work_dir in work_dirs:
    first, second = (seed_rows(work_dir, method) for method in methods[:2])
    budgets = [row["held-out train_flops"] for row in first + second
               if "held-out train_flops" in row]
    if not first or not second or not budgets:
      refuse(f"--trend_work_dirs: {work_dir} has no evaluated {methods[0]} and {methods[1]} "
             "runs (run its evaluate stage first)")
    points.append((common.spread(budgets).median, first, second))
  points.sort(key=lambda point: point[0])
  table = []
  for name in names:
    gaps = [common.median_difference(*([row.get(name) for row in rows] for rows in (first, second)))
            for _, first, second in points]
    if any(gap is not None for gap in gaps):
      known = [(budget, gap) for (budget, _, _), gap in zip(points, gaps) if gap is not None]
      table.append([name, *("—" if gap is None else f"{gap:+.4g}" for gap in gaps),
                    common.crossing_budget(*zip(*known))])
  header = ["figure", *(f"{methods[0]} − {methods[1]} at {budget:.2g}" for budget, _, _ in points),
            "gap reaches 0"]
  return common.markdown_table(header, table)


def stage_report(args):
  names = [f for f in ("held-out train_flops", "held-out fixed_noise_auc",
                       "held-out pll_swap_accuracy", "held-out mlm_accuracy", "held-out rtd_auc",
                       "detector collapse warning", "detector collapse from step",
                       "BLiMP-13 pll", "BLiMP-13 discriminator",
                       *(f"probe {probe}{part}" for probe in ("pos", "sst-2", "ud_uas")
                         for part in ("", " (random init)", " (best layer)",
                                      " (best layer's block)", " (best layer) (random init)")),
                       "SST-2 fine-tuned",
                       "CoLA fine-tuned (MCC)", "UD EWT fine-tuned (LAS)",
                       "last-layer token cosine", "last-layer effective rank",
                       "attention entropy ÷ uniform (mean of layers)",
                       "order sensitivity (1 − cosine)",
                       "largest head on the previous token (held-out)",
                       "largest head on the next token (held-out)",
                       "BLiMP-13 pll pairs/s", "BLiMP-13 discriminator pairs/s")]
  columns = []
  for method in args.methods.split(","):
    seeds = seed_rows(args.work_dir, method, [seed for seed in args.seeds.split(",") if seed],
                      args.figures_dir)
    columns.append((f"{method} ({len(seeds)} seed{'' if len(seeds) == 1 else 's'})", seeds))
    columns.append((f"{method} random init",
                    [kept_figures(args.work_dir, f"{method}_random", args.figures_dir)]))
  # The first method against the second, seed by seed (a claim "beats X beyond the seed spread"):
  # their trained columns are the first and the third (each method's random init follows it).
  methods = args.methods.split(",")
  compared = [columns[0][1], columns[2][1]] if len(methods) > 1 else []
  table = []
  for name in names:
    cells = [summarize([row.get(name) for row in rows]) for _, rows in columns]
    if compared:
      cells.append(common.seed_difference(*([row.get(name) for row in rows]
                                             for rows in compared)))
    if any(c != "—" for c in cells):
      table.append([name, *cells])
  header = [c for c, _ in columns] + ([f"{methods[0]} − {methods[1]}"] if compared else [])
  text = common.markdown_table(["figure", *header], table)
  if args.trend_work_dirs:
    if len(methods) < 2:
      refuse("--trend_work_dirs needs two --methods (the first set against the second)")
    compared_names = [name for name in names[1:]  # the methods' own figures, not speed
                      if "random init" not in name and "pairs/s" not in name and "block" not in name]
    text += "\n\n" + trend_table([args.work_dir, *args.trend_work_dirs], methods, compared_names)
  print(text)
  if args.output_file:
    textio.write_atomic(args.output_file, lambda f: f.write(text + "\n"))


def main(_):
  args = checked_flags()
  os.makedirs(args.work_dir, exist_ok=True)
  stages = {"data": stage_data, "pretrain": stage_pretrain, "evaluate": stage_evaluate,
            "representations": stage_representations, "context": stage_context,
            "report": stage_report}
  try:
    for stage in args.stages.split(","):
      log(f"stage {stage}")
      stages[stage](args)
  except KeyboardInterrupt:  # run_jobs has stopped the jobs (they save their state)
    sys.exit("pretraining_value.py: interrupted: finished stages and the jobs' saved state are "
             "kept; the same command resumes")


if __name__ == "__main__":
  flags.mark_flag_as_required("work_dir")
  app.run(main)
