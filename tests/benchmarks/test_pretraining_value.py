"""`benchmarks/pretraining_value.py`'s report on written results: the first method set against the
second, and with `--trend_work_dirs` the gap at each budget and where it reaches 0 (issue 72,
item 5)."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import tensorflow as tf

from official_rtd.training import collapse_monitor
from tests import testutil

SCRIPT = os.path.join(testutil.REPO, "benchmarks", "pretraining_value.py")


def write_run(work_dir: str, name: str, train_flops: float, las: float):
  """What the evaluate stage leaves of one run: its held-out figures and its UD EWT LAS."""
  os.makedirs(os.path.join(work_dir, name))
  with open(os.path.join(work_dir, name, "eval_results.jsonl"), "w", encoding="utf-8") as f:
    f.write(json.dumps({"train_flops": train_flops}) + "\n")
  os.makedirs(os.path.join(work_dir, "eval", name, "ud"))
  with open(os.path.join(work_dir, "eval", name, "ud", "eval_results.json"), "w",
            encoding="utf-8") as f:
    json.dump({"median": {"dev": {"las": las}}}, f)


class ReportTest(tf.test.TestCase):

  def report(self, work_dir, *extra):
    shared = self.create_tempdir().full_path
    os.makedirs(os.path.join(shared, "wiki"))
    return subprocess.run(
        [sys.executable, SCRIPT, f"--work_dir={work_dir}", "--methods=electra_one_machine,mlm",
         f"--shared_data={shared}", "--stages=report", *extra],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=testutil.REPO)

  def test_the_trend_table_gives_the_gap_per_budget_and_where_it_closes(self):
    small, large = self.create_tempdir().full_path, self.create_tempdir().full_path
    for seed, (electra, mlm) in enumerate([(0.515, 0.653), (0.523, 0.678)]):  # medians .519/.6655
      write_run(small, f"electra_one_machine_s{seed}", 1e14, electra)
      write_run(small, f"mlm_s{seed}", 1e14, mlm)
    write_run(large, "electra_one_machine_s0", 1e15, 0.60)
    write_run(large, "mlm_s0", 1e15, 0.65)
    # The larger budget's directory is the --work_dir: the table still sorts by budget.
    result = self.report(large, "--seeds=0", f"--trend_work_dirs={small}")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("| UD EWT fine-tuned (LAS) | 0.6000 | — | 0.6500 | — | -0.05 (one seed) |",
                  result.stdout)
    self.assertIn("| figure | electra_one_machine − mlm at 1e+14 | electra_one_machine − mlm at "
                  "1e+15 | gap reaches 0 |", result.stdout)
    # -0.1465 at 1e14, -0.05 at 1e15: 0.05 left at 0.0965 a decade, 10 ** 15.518 = 3.3e15.
    self.assertIn("| UD EWT fine-tuned (LAS) | -0.1465 | -0.05 | ≈ 3.3e+15 (extrapolated from "
                  "the last two budgets) |", result.stdout)

  def test_a_trend_dir_without_evaluated_runs_is_named(self):
    work, empty = self.create_tempdir().full_path, self.create_tempdir().full_path
    write_run(work, "electra_one_machine_s0", 1e15, 0.60)
    write_run(work, "mlm_s0", 1e15, 0.65)
    result = self.report(work, "--seeds=0", f"--trend_work_dirs={empty}")
    self.assertEqual(result.returncode, 2)
    self.assertIn(f"--trend_work_dirs: {empty} has no evaluated electra_one_machine and mlm runs",
                  result.stderr)
    # One method has no second to set against.
    result = self.report(work, "--seeds=0", "--methods=mlm", f"--trend_work_dirs={work}")
    self.assertEqual(result.returncode, 2)
    self.assertIn("--trend_work_dirs needs two --methods", result.stderr)
  def test_figures_kept_in_one_session_join_the_next_sessions_table(self):
    first, second = self.create_tempdir().full_path, self.create_tempdir().full_path
    kept = os.path.join(self.create_tempdir().full_path, "family")
    write_run(first, "mlm_s0", 1e14, 0.65)
    result = self.report(first, "--seeds=0", "--methods=mlm", f"--figures_dir={kept}")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    with open(os.path.join(kept, "mlm_s0.json"), encoding="utf-8") as f:
      self.assertEqual(json.load(f)["UD EWT fine-tuned (LAS)"], 0.65)
    self.assertFalse(os.path.exists(os.path.join(kept, "mlm_random.json")))  # nothing evaluated
    # The next session's work dir holds only the new member: the kept BERT-MLM row comes back.
    write_run(second, "ale+masked_lm_warmup_s0", 1e14, 0.61)
    warned = []  # the pre-training job's log: a detector's training line, then the trainer's warning
    monitor = collapse_monitor.CollapseMonitor(warned.append, min_steps=1000, start_step=3000)
    for step in (3000, 3200, 4200):  # 3000: the warm-up's last row, not read
      monitor("train", {"step": step, "rtd_accuracy_original": 1.0, "rtd_accuracy_replaced": 0.0})
    with open(os.path.join(second, "ale+masked_lm_warmup_s0.log"), "w", encoding="utf-8") as f:
      f.write("step 3200/6757 rtd_accuracy_original=1.0000 rtd_accuracy_replaced=0.0000\n"
              + warned[0] + "\n")
    result = self.report(second, "--seeds=0", "--methods=ale+masked_lm_warmup,mlm",
                         f"--figures_dir={kept}")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("| UD EWT fine-tuned (LAS) | 0.6100 | — | 0.6500 | — | -0.04 (one seed) |",
                  result.stdout)
    with open(os.path.join(kept, "ale+masked_lm_warmup_s0.json"), encoding="utf-8") as f:
      ale = json.load(f)
    self.assertEqual((ale["detector collapse warning"], ale["detector collapse from step"]),
                     (1.0, 3000))
    a_file = os.path.join(kept, "mlm_s0.json")
    result = self.report(second, "--seeds=0", "--methods=mlm", f"--figures_dir={a_file}")
    self.assertEqual(result.returncode, 2)
    self.assertIn(f"--figures_dir={a_file} is a file, not a folder", result.stderr)

  def test_a_composed_method_is_one_column_and_each_part_must_exist(self):
    work = self.create_tempdir().full_path
    write_run(work, "ale+masked_lm_warmup_s0", 1e14, 0.61)
    write_run(work, "mlm_s0", 1e14, 0.65)
    result = self.report(work, "--seeds=0", "--methods=ale+masked_lm_warmup,mlm")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn("| UD EWT fine-tuned (LAS) | 0.6100 | — | 0.6500 | — | -0.04 (one seed) |",
                  result.stdout)
    result = self.report(work, "--seeds=0", "--methods=ale+masked_lm_warmup_nowhere,mlm")
    self.assertEqual(result.returncode, 2)
    self.assertIn("for ['ale+masked_lm_warmup_nowhere']", result.stderr)



class ToolStandardTest(tf.test.TestCase):
  """Issue 87: paths resolved from the caller's directory once, outputs never replaced without
  --overwrite, bad flags refused in one line before any work, Ctrl-C ending in one line."""

  def run_script(self, cwd, *args, **kwargs):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, cwd=cwd, **kwargs)

  def test_relative_paths_from_outside_the_repository(self):
    caller = self.create_tempdir().full_path
    os.makedirs(os.path.join(caller, "shared", "wiki"))
    for seed, las in enumerate([0.52, 0.53]):
      write_run(os.path.join(caller, "work"), f"electra_one_machine_s{seed}", 1e14, las)
      write_run(os.path.join(caller, "work"), f"mlm_s{seed}", 1e14, las + 0.1)
    args = ("--work_dir=work", "--shared_data=shared", "--methods=electra_one_machine,mlm",
            "--stages=report", "--output_file=report.md")
    result = self.run_script(caller, *args)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    with open(os.path.join(caller, "report.md"), encoding="utf-8") as f:
      self.assertIn("| UD EWT fine-tuned (LAS) | 0.5250 [0.5200, 0.5300] |", f.read())
    self.assertFalse(os.path.exists(os.path.join(testutil.REPO, "work")))
    result = self.run_script(caller, *args)  # the report exists: kept
    self.assertEqual(result.returncode, 2)
    self.assertEqual(result.stderr.strip().splitlines()[-1],
                     f"pretraining_value.py: error: --output_file={caller}/report.md exists: "
                     "give --overwrite to replace it")
    self.assertEqual(self.run_script(caller, *args, "--overwrite").returncode, 0)
    for flag, message in (("--stages=data,pretrian", "--stages: unknown pretrian (of data, "
                           "pretrain, evaluate, representations, context, report)"),
                          ("--seeds=", "--seeds='' selects no run"),
                          ("--seeds=0,x", "--seeds=0,x must be integers >= 0, comma-separated"),
                          ("--gin_param=MASK_PROB 0.25",
                           "--gin_param: 'MASK_PROB 0.25' is not 'name = value'")):
      result = self.run_script(caller, *args[:3], flag)
      self.assertEqual(result.returncode, 2, flag)
      self.assertEqual(result.stderr.strip().splitlines()[-1],
                       f"pretraining_value.py: error: {message}")

  def test_a_run_started_without_the_commands_bindings_is_refused(self):
    """`--gin_param` (issue 86's screen) binds every run's setting; a finished or killed run of
    the work dir started without it, or with another value, is refused before any job, not
    skipped and then reported as this setting's. A run's other bindings are its own (the README's
    hand-run BERT-MLM is adopted by a command without --gin_param)."""
    work = self.create_tempdir().full_path
    shared = self.create_tempdir().full_path
    os.makedirs(os.path.join(shared, "wiki"))
    for name, bindings in (("mlm_s0", ["TrainConfig.train_flops_budget = 1e14",
                                       "OnsetConfig.every_steps = 2",
                                       "OptimizerConfig.learning_rate=5e-4"]),
                           ("mlm_random", ["TrainConfig.num_train_steps = 1",
                                           "OptimizerConfig.learning_rate = 5e-4"])):
      os.makedirs(os.path.join(work, name, "export"))
      with open(os.path.join(work, name, "run_flags.json"), "w", encoding="utf-8") as f:
        json.dump({"gin_param": bindings}, f)
    args = (f"--work_dir={work}", f"--shared_data={shared}", "--methods=mlm", "--seeds=0",
            "--stages=pretrain", "--train_flops_budget=1e14")
    for given in ((), ("--gin_param=OptimizerConfig.learning_rate = 5e-4",)):
      result = self.run_script(testutil.REPO, *args, *given)
      self.assertEqual(result.returncode, 0, result.stderr[-3000:])  # both runs done: adopted
      self.assertNotIn(" start ", result.stdout)
    for binding, recorded in (("OptimizerConfig.learning_rate = 2e-3", "5e-4"),
                              ("MASK_PROB = 0.25", "(unbound)")):
      result = self.run_script(testutil.REPO, *args, f"--gin_param={binding}")
      self.assertEqual(result.returncode, 2, binding)
      name, value = binding.split(" = ")
      self.assertEqual(result.stderr.strip().splitlines()[-1],
                       f"pretraining_value.py: error: {work}/mlm_s0 was started with {name} = "
                       f"{recorded}, not {value} (--gin_param): give a new --work_dir (its "
                       "vocab.txt, records and heldout may link to this one's)")

  def test_the_random_initialisation_overrides_a_screens_warmup_bindings(self):
    """A screen of the warm-up's start (batch 32: `masked_lm_warmup.rtd_start_step = 1500`)
    still gets its one-step random initialisation: the initialisation's bindings come after the
    command's (before, the screen's start reached the 1-step run and was refused: "1500 is not
    before TrainConfig.num_train_steps = 1"), and the finished run is adopted again."""
    work = self.create_tempdir().full_path
    screen = "masked_lm_warmup.rtd_start_step = 1500"
    program = textwrap.dedent(f"""
        import json, sys, types
        sys.path.insert(0, "benchmarks")
        import pretraining_value
        args = types.SimpleNamespace(recipe="sentences", model_gin="gin/models/one_machine.gin",
                                     work_dir={work!r}, gin_param=[{screen!r}])
        print(json.dumps(pretraining_value.pretrain_argv(
            args, "electra_one_machine", "run", ["--mode=train_and_eval"],
            pretraining_value.random_init_overrides("electra_one_machine"))))
        """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120, cwd=testutil.REPO, stdin=subprocess.DEVNULL)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    bindings = [flag.split("=", 1)[1] for flag in json.loads(result.stdout)
                if flag.startswith("--gin_param=")]
    starts = [b for b in bindings if b.startswith("masked_lm_warmup.rtd_start_step")]
    self.assertEqual(starts, [screen, "masked_lm_warmup.rtd_start_step = 0"])  # the last wins
    self.assertGreater(bindings.index("TrainConfig.num_train_steps = 1"), bindings.index(screen))
    shared = self.create_tempdir().full_path
    os.makedirs(os.path.join(shared, "wiki"))
    for name, recorded in (("electra_one_machine_s0", [screen]),
                           ("electra_one_machine_random", bindings)):
      os.makedirs(os.path.join(work, name, "export"))
      with open(os.path.join(work, name, "run_flags.json"), "w", encoding="utf-8") as f:
        json.dump({"gin_param": recorded}, f)
    result = self.run_script(testutil.REPO, f"--work_dir={work}", f"--shared_data={shared}",
                             "--methods=electra_one_machine", "--seeds=0", "--stages=pretrain",
                             f"--gin_param={screen}")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])  # both adopted, none started
    self.assertNotIn(" start ", result.stdout)

  def test_ctrl_c_ends_in_one_line(self):
    work = self.create_tempdir().full_path
    shared = self.create_tempdir().full_path
    os.makedirs(os.path.join(shared, "wiki"))
    process = subprocess.Popen(
        [sys.executable, SCRIPT, f"--work_dir={work}", f"--shared_data={shared}",
         "--methods=mlm", "--seeds=0", "--stages=pretrain"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, cwd=testutil.REPO,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler))
    for line in process.stdout:  # a job is running: run_pretraining, starting
      if " start " in line:
        break
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    self.assertEqual(process.returncode, 1)
    self.assertNotIn("Traceback", stderr)
    self.assertEqual(stderr.strip().splitlines()[-1],
                     "pretraining_value.py: interrupted: finished stages and the jobs' saved "
                     "state are kept; the same command resumes")


if __name__ == "__main__":
  tf.test.main()
