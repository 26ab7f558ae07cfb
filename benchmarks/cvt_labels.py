r"""Does CVT's gain grow as labels get scarce? (dissertation Figure 4.5, left, at CPU scale)

For each task, fraction of the labeled training sentences, mode and seed, one `run_cvt` run with
Wikipedia (`../shared/data/wiki`) as unlabeled text, trained until its dev figure stops improving
(an evaluation every `--eval_every_steps`, stop after `--patience` evaluations without a new
best, at most `--train_steps`; the best evaluation's EMA weights are the result). Each run has its
own directory under `--work_dir`, so a killed sweep resumes where it stopped (finished runs are
read back, and a larger `--train_steps` continues only the runs that ended at their budget);
`--shard=i/n` splits the runs over n processes (a run that another process is running is
skipped, named in one line); Ctrl-C or SIGTERM saves the running run's last step first. Prints
one table: per task, fraction and mode, the median, min and max of the dev figure over the
seeds, and the best step.

  python benchmarks/cvt_labels.py --work_dir=/tmp/cvt_labels --tasks=chunk,ner \
      --fractions=0.1,0.25,1.0 --modes=supervised,cvt --seeds=0,1 --shard=0/2 &
  python benchmarks/cvt_labels.py --work_dir=/tmp/cvt_labels ... --shard=1/2 &
  python benchmarks/cvt_labels.py --work_dir=/tmp/cvt_labels ... --report_only

`--variant` names extra settings measured against the default (`vocab_labeled_only`: the word
and character vocabulary from the labeled text only, as before; `word2vec`: `--word_embeddings`
from `--word_vectors`, e.g. written by `train_word_vectors`; `late_unlabeled`: unlabeled steps
start after `--unlabeled_start_step` supervised steps, for the modes that have them; `in_domain`:
the task's own training sentences that the fraction leaves out, labels removed, are the unlabeled
text instead of Wikipedia (`run_cvt --unlabeled_remainder`), the vocabulary read from them too;
`vocab_all`: every word of the unlabeled text read for the vocabulary joins it
(`--vocab_min_count=1`; the in-domain runs made before the text was read once had that);
`w0.3`: `--unlabeled_loss_weight=0.3`; several joined by `+`, e.g. `in_domain+w0.3`). Results in
benchmarks/RESULTS.md.

`translate` (Multi30k English→German, BLEU on val) reads `--translate_unlabeled_data`, the
captions of the training images, and decodes with a beam of `--translate_beam_size`. A
`--tasks` entry of several tasks joined by `+` (`chunk+ner+pos+dep`) is one multi-task run, one
encoder for all (§4.4): its labeled steps, evaluation interval and budget are the single-task
ones times the number of tasks (labeled batches go round the tasks), so each task gets as many
labeled steps as in its own run; the table has a row per member (mode `cvt, with
chunk+ner+pos+dep`; its steps are the whole run's). `--at_step=N --report_only` compares runs of
different budgets at equal labeled steps per task: each run's best evaluation up to N (a running
run's too, from its `trial_0/selection.json`).
"""
import glob
import os
import signal
import sys
import time

from absl import app
from absl import flags

import common
from official_rtd.utils import run_lock

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
flags.DEFINE_string("work_dir", None, "Where every run's directory goes.")
flags.DEFINE_list("tasks", ["chunk", "ner"],
                  "Tasks (each its own runs); several joined by + are one multi-task run.")
flags.DEFINE_list("fractions", ["0.1", "0.25", "1.0"], "Fractions of the labeled sentences.")
flags.DEFINE_list("modes", ["supervised", "cvt"], "Training modes (below all labels).")
flags.DEFINE_list("seeds", ["0", "1"], "Seeds (each picks its own labeled subset).")
flags.DEFINE_list("modes_at_all_labels", ["supervised", "cvt"],
                  "Training modes at fraction 1.0 (all labels), whatever --modes says.")
flags.DEFINE_list("variants", ["default"],
                  "default, vocab_labeled_only, vocab_all, word2vec, late_unlabeled, in_domain, "
                  "w<weight> (--unlabeled_loss_weight), or several joined by + (in_domain+w0.3).")
flags.DEFINE_string("word_vectors", "", "GloVe-format vectors for the word2vec variant.")
flags.DEFINE_string("unlabeled_data", os.path.join(SHARED, "wiki", "wiki_*.txt"),
                    "Unlabeled corpus.")
flags.DEFINE_string("translate_unlabeled_data",
                    os.path.join(SHARED, "translation", "multi30k", "train.[1-5].en"),
                    "translate's unlabeled source sentences (the in-domain captions).")
flags.DEFINE_integer("translate_beam_size", 4,
                     "translate's beam (decoding and the teacher; run_cvt's default, 10, costs "
                     "about twice the CPU).", lower_bound=1)
flags.DEFINE_integer("unlabeled_start_step", 500,
                     "late_unlabeled: supervised steps before the first unlabeled one.")
flags.DEFINE_integer("train_steps", 6000, "Most labeled steps per run.")
flags.DEFINE_integer("eval_every_steps", 500, "Dev evaluation interval.")
flags.DEFINE_integer("patience", 3, "Evaluations without a new best before a run stops.")
flags.DEFINE_integer("batch_size", 32, "Sentences per minibatch.")
flags.DEFINE_integer("word_dim", 100, "Word embedding size.")
flags.DEFINE_integer("lstm1_size", 256, "First Bi-LSTM size.")
flags.DEFINE_integer("lstm2_size", 128, "Second Bi-LSTM size.")
flags.DEFINE_integer("projection_size", 128, "LSTM projection size.")
flags.DEFINE_integer("hidden_size", 128, "Prediction modules' hidden size.")
flags.DEFINE_integer("threads", 1, "TensorFlow threads per process (0: TensorFlow's default).")
flags.DEFINE_string("shard", "0/1", "i/n: run every n-th run starting at the i-th.")
flags.DEFINE_bool("report_only", False, "Print the table of the finished runs only.")
flags.DEFINE_integer("at_step", 0,
                     "Report each run as if its budget were this many labeled steps per task: "
                     "its best evaluation up to there (running runs too; 0: the runs' results).",
                     lower_bound=0)
FLAGS = flags.FLAGS


def runs():
  """Every (task, fraction, mode, seed, variant), scarcest labels first."""
  return [(task, float(fraction), mode, int(seed), variant)
          for variant in FLAGS.variants for fraction in FLAGS.fractions for task in FLAGS.tasks
          for seed in FLAGS.seeds
          for mode in (FLAGS.modes_at_all_labels if float(fraction) >= 1.0 else FLAGS.modes)
          if not (mode == "supervised" and any(
              p == "late_unlabeled" or p.startswith("w") for p in variant.split("+")))]


def shard_of(number: int, count: int) -> int:
  """Run `number`'s process: modes alternate within each process (CVT's runs are the long
  ones), e.g. for 2 processes runs 0, 3, 4, 7, ... and 1, 2, 5, 6, ..."""
  return (number + number // count) % count


def run_dir(task, fraction, mode, seed, variant):
  suffix = "" if variant == "default" else f"_{variant}"
  return os.path.join(FLAGS.work_dir, f"{task}_{fraction:g}_{mode}_s{seed}{suffix}")


def members(task: str):
  """The tasks of a `--tasks` entry (`chunk+pos`: a multi-task run of both)."""
  return task.split("+")


def data_dir(task: str) -> str:
  """Where run_cvt reads the entry's data: the tagging folders, the UD treebank, Multi30k, or for
  several tasks the shared root (holding `tagging/` and `parsing/ud_ewt/`)."""
  if len(members(task)) > 1:
    return SHARED
  own = {"dep": ("parsing", "ud_ewt"), "translate": ("translation", "multi30k")}
  return os.path.join(SHARED, *own.get(task, ("tagging",)))


# run_cvt's tasks (`official_rtd/cvt/all_tasks.py`, which imports TensorFlow; a test keeps the two
# equal), so that a bad --tasks is refused before TensorFlow starts.
TASKS = ("chunk", "dep", "ner", "pos", "translate")


def refuse(message: str):
  """A bad flag value: one line naming it, exit status 2, before any run or TensorFlow import."""
  print(f"cvt_labels.py: error: {message}", file=sys.stderr)
  sys.exit(2)


def checked_flags():
  """Refuses, one line each, a --shard that is not i/n (0 <= i < n) or selects no run, a task or
  variant that does not exist; makes --work_dir absolute (resolved once, from the caller's
  working directory)."""
  shard = FLAGS.shard.split("/")
  if len(shard) != 2 or not all(p.isdigit() for p in shard) or not int(shard[0]) < int(shard[1]):
    refuse(f"--shard={FLAGS.shard} must be i/n with 0 <= i < n (e.g. 0/2 and 1/2)")
  unknown = sorted({t for entry in FLAGS.tasks for t in members(entry)} - set(TASKS))
  if unknown:
    refuse(f"--tasks: unknown {', '.join(unknown)} (one of {', '.join(TASKS)}, several joined by "
           "+ for a multi-task run)")
  for variant in FLAGS.variants:
    try:
      variant_settings(variant)
    except ValueError as e:
      refuse(str(e))
  FLAGS.work_dir = os.path.abspath(FLAGS.work_dir)
  index, count = (int(p) for p in shard)
  if not FLAGS.report_only and not any(shard_of(n, count) == index for n in range(len(runs()))):
    refuse(f"--shard={FLAGS.shard} selects none of the {len(runs())} runs (use fewer shards)")
  return index, count


def variant_settings(variant: str) -> dict:
  """run_cvt's settings of a --variants entry (parts joined by +); a ValueError names an unknown
  part."""
  extra = {}
  for part in variant.split("+"):
    if part == "vocab_labeled_only":
      extra["vocab_unlabeled_sentences"] = 0
    elif part == "vocab_all":
      extra["vocab_min_count"] = 1
    elif part == "word2vec":
      extra["word_embeddings"] = FLAGS.word_vectors
    elif part == "late_unlabeled":
      extra["unlabeled_start_step"] = FLAGS.unlabeled_start_step
    elif part == "in_domain":
      extra.update(unlabeled_data="", unlabeled_remainder=True)
    elif part.startswith("w") and part[1:].replace(".", "", 1).isdigit():
      extra["unlabeled_loss_weight"] = float(part[1:])
    elif part != "default":
      raise ValueError(f"--variants: unknown {part!r} in {variant!r} (default, "
                       "vocab_labeled_only, vocab_all, word2vec, late_unlabeled, in_domain, "
                       "w<weight>, joined by +)")
  return extra


def train(task, fraction, mode, seed, variant):
  from official_rtd.cvt import runner  # pylint: disable=g-import-not-at-top
  extra = variant_settings(variant)
  if task == "translate":
    extra["beam_size"] = FLAGS.translate_beam_size
  log_path = run_dir(task, fraction, mode, seed, variant) + ".log"
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  with open(log_path, "a", encoding="utf-8") as log_file:
    def log(line):
      log_file.write(f"{time.strftime('%H:%M:%S')} {line}\n")
      log_file.flush()
    share = len(members(task))  # each task's labeled steps as in its own run
    runner.CvtRunner(runner.CvtRunConfig(
        tasks=",".join(members(task)), data_dir=data_dir(task),
        model_dir=run_dir(task, fraction, mode, seed, variant), mode=mode,
        **{"unlabeled_data": (FLAGS.translate_unlabeled_data if task == "translate"
                              else FLAGS.unlabeled_data), **extra}, train_fraction=fraction,
        word_dim=FLAGS.word_dim, lstm1_size=FLAGS.lstm1_size, lstm2_size=FLAGS.lstm2_size,
        projection_size=FLAGS.projection_size, hidden_size=FLAGS.hidden_size,
        train_steps=FLAGS.train_steps * share, train_batch_size=FLAGS.batch_size,
        eval_every_steps=FLAGS.eval_every_steps * share, patience=FLAGS.patience,
        save_checkpoints_steps=FLAGS.eval_every_steps * share, log_every_steps=100, seed=seed),
                     log).run()


def primary_metric(task: str) -> str:
  from official_rtd.cvt import all_tasks  # pylint: disable=g-import-not-at-top,unused-import
  from official_rtd.cvt import task as task_lib  # pylint: disable=g-import-not-at-top
  return task_lib.get(task).primary_metric_of(task)


def at_step(directory: str, task: str, step: int):
  """The first trial of a run (finished or running) cut at `step` labeled steps per task, as
  `(dev, best_step, steps_run)`: its best evaluation up to there (the mean of the members'
  primary figures, the first of equals, as the run selects); None if the run neither reached
  `step` nor stopped by patience before it (whose result would then be the same)."""
  results = os.path.join(directory, "eval_results.json")
  if os.path.isfile(results):
    trial = common.read_results(results)["trials"][0]
    curve, stopped = trial["dev_curve"], trial.get("stopped_by") == "patience"
  elif os.path.isfile(os.path.join(directory, "trial_0", "selection.json")):
    curve = common.read_results(os.path.join(directory, "trial_0", "selection.json"))["curve"]
    stopped = False
  else:
    return None
  last = step * len(members(task))  # a multi-task run's steps are the whole run's
  kept = [point for point in curve if point["step"] <= last]
  if not kept or (curve[-1]["step"] < last and not stopped):
    return None
  best = max(kept, key=lambda point: (
      sum(point[m][primary_metric(m)] for m in members(task)), -point["step"]))
  return {m: best[m] for m in members(task)}, best["step"], kept[-1]["step"]


def report():
  rows, missing = {}, []
  for task, fraction, mode, seed, variant in runs():
    directory = run_dir(task, fraction, mode, seed, variant)
    if FLAGS.at_step:
      cut = at_step(directory, task, FLAGS.at_step)
      if cut is None:
        missing.append(os.path.basename(directory))
        continue
      dev, best_step, steps_run = cut
    else:
      path = os.path.join(directory, "eval_results.json")
      if not os.path.isfile(path):
        continue
      summary = common.read_results(path)
      trial = summary["trials"][0]
      dev, best_step, steps_run = trial["dev"], trial["best_step"], trial["steps_run"]
    for member in members(task):
      metric = primary_metric(member) if FLAGS.at_step else summary["primary_metrics"][member]
      label = mode if member == task else f"{mode}, with {task}"
      rows.setdefault((member, fraction, variant, label, metric), []).append(
          (dev[member][metric], best_step, steps_run))
  if FLAGS.at_step:
    print(f"Each run's best evaluation up to {FLAGS.at_step} labeled steps per task; not there "
          f"yet: {', '.join(missing) or 'none'}")
  table = common.TableWriter(["task", "labeled fraction", "variant", "mode", "metric", "median",
                              "min", "max", "seeds", "best steps", "steps run"])
  for (task, fraction, variant, mode, metric), values in sorted(rows.items()):
    figures = common.spread(v[0] for v in values)
    table.row(task, f"{fraction:g}", variant, mode, metric, f"{figures.median:.4f}",
              f"{figures.min:.4f}", f"{figures.max:.4f}", figures.count,
              ", ".join(str(v[1]) for v in values), ", ".join(str(v[2]) for v in values))


def check_corpora():
  """Refuses, in one line naming the flag, an unlabeled corpus the runs read that matches no file
  (before any run starts; `in_domain` runs read the task's own sentences instead)."""
  tasks = {task for entry in FLAGS.tasks for task in members(entry)}
  reads_wiki = (tasks - {"translate"}) and not all(
      "in_domain" in variant.split("+") for variant in FLAGS.variants)
  for flag, pattern, needed in (("unlabeled_data", FLAGS.unlabeled_data, reads_wiki),
                                ("translate_unlabeled_data", FLAGS.translate_unlabeled_data,
                                 "translate" in tasks)):
    if needed and not glob.glob(pattern):
      raise SystemExit(f"cvt_labels.py: error: --{flag}={pattern} matches no file")


def main(_):
  index, count = checked_flags()
  if not FLAGS.report_only:
    check_corpora()
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if FLAGS.threads:
      tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
      tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    print(common.cpu_summary(), flush=True)
    signal.signal(signal.SIGTERM, stop)
    try:
      for number, spec in enumerate(runs()):
        if shard_of(number, count) != index:
          continue
        watch = common.Stopwatch()
        try:
          train(*spec)
        except run_lock.DirectoryLockedError as e:  # another process runs it: go on to the next
          print(f"{spec}: skipped, {e}", flush=True)
          continue
        print(f"{spec}: {watch.seconds:.0f} s", flush=True)
    except KeyboardInterrupt as e:
      sys.exit(f"cvt_labels.py: {str(e) or 'interrupted'}: finished runs and the running one's "
               "last step are kept; the same command resumes")
  report()


def stop(signum, frame):
  """SIGTERM (a scheduler's or `kill`'s stop) raised like Ctrl-C, so the running run saves its last
  step and releases its directory."""
  del frame  # unused
  raise KeyboardInterrupt(f"stopped by signal {signum}")


if __name__ == "__main__":
  flags.mark_flag_as_required("work_dir")
  app.run(main)
