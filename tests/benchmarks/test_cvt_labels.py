"""`benchmarks/cvt_labels.py`'s table: a single-task run gives one row, a multi-task run
(`chunk+pos`) a row per member with its own primary figure (issue 73, item 4)."""
import ast
import json
import os
import subprocess
import sys

import tensorflow as tf

from tests import testutil
from tests import tool_server

SCRIPT = os.path.join(testutil.REPO, "benchmarks", "cvt_labels.py")


def write_run(work_dir: str, name: str, dev: dict, primary: dict, best_step: int):
  os.makedirs(os.path.join(work_dir, name))
  summary = {"tasks": list(primary), "primary_metrics": primary,
             "trials": [{"dev": dev, "best_step": best_step, "steps_run": best_step + 500}]}
  with open(os.path.join(work_dir, name, "eval_results.json"), "w", encoding="utf-8") as f:
    json.dump(summary, f)


def report(test: tf.test.TestCase, work: str, *args: str) -> str:
  """`cvt_labels.py --report_only` on `work` with `args`: its output (it must succeed)."""
  result = subprocess.run(
      [sys.executable, SCRIPT, f"--work_dir={work}", *args, "--report_only"],
      capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=testutil.REPO)
  test.assertEqual(result.returncode, 0, result.stderr[-3000:])
  return result.stdout


def run_replaced(run_body: str, *args: str) -> subprocess.CompletedProcess:
  """`cvt_labels.py args` with `runner.CvtRunner` replaced by a class whose `run(self)` is
  `run_body` (indented code; `self.config` is the run's `CvtRunConfig`)."""
  script = (
      "import os, signal, sys; sys.path.insert(0, 'benchmarks'); import cvt_labels\n"
      "from absl import app\n"
      "from official_rtd.cvt import runner\n"
      "from official_rtd.utils import run_lock\n"
      "class Recorder:\n"
      "  def __init__(self, config, log): self.config = config\n"
      "  def run(self):\n"
      f"{run_body}"
      "runner.CvtRunner = Recorder\n"
      "app.run(cvt_labels.main, argv=sys.argv)\n")
  return tool_server.run([sys.executable, "-c", script, *args], cwd=testutil.REPO, timeout=300)


class ReportTest(tf.test.TestCase):

  def test_a_multi_task_run_reports_each_member(self):
    work = self.create_tempdir().full_path
    write_run(work, "chunk_0.1_cvt_s0", {"chunk": {"f1": 0.9}}, {"chunk": "f1"}, 3000)
    write_run(work, "chunk+pos_0.1_cvt_s0", {"chunk": {"f1": 0.91}, "pos": {"accuracy": 0.95}},
              {"chunk": "f1", "pos": "accuracy"}, 6000)
    output = report(self, work, "--tasks=chunk,chunk+pos", "--fractions=0.1", "--modes=cvt",
                    "--seeds=0")
    rows = [line for line in output.splitlines() if line.startswith("| ")]
    self.assertIn("| chunk | 0.1 | default | cvt | f1 | 0.9000 | 0.9000 | 0.9000 | 1 | 3000 "
                  "| 3500 |", rows)
    self.assertIn("| chunk | 0.1 | default | cvt, with chunk+pos | f1 | 0.9100 | 0.9100 | 0.9100 "
                  "| 1 | 6000 | 6500 |", rows)
    self.assertIn("| pos | 0.1 | default | cvt, with chunk+pos | accuracy | 0.9500 | 0.9500 | "
                  "0.9500 | 1 | 6000 | 6500 |", rows)

  def test_at_step_cuts_each_run_at_equal_labeled_steps_per_task(self):
    """--at_step=N: each run's best evaluation up to N labeled steps per task (a multi-task run's
    curve is in whole-run steps, N × members), running runs included; a run stopped by patience
    before N keeps its result; one that has not reached N is named, not reported."""
    work = self.create_tempdir().full_path

    def finished(name, curve, stopped_by):
      os.makedirs(os.path.join(work, name))
      trial = {"dev": {}, "best_step": 0, "steps_run": curve[-1]["step"], "dev_curve": curve,
               "stopped_by": stopped_by}
      with open(os.path.join(work, name, "eval_results.json"), "w", encoding="utf-8") as f:
        json.dump({"trials": [trial]}, f)

    def pos(step, accuracy):
      return {"step": step, "pos": {"accuracy": accuracy}}

    finished("pos_1_supervised_s0", [pos(2, 0.5), pos(4, 0.7), pos(6, 0.6), pos(8, 0.9)], "budget")
    finished("pos_1_supervised_s1", [pos(2, 0.8), pos(4, 0.4)], "patience")  # stopped before 6
    os.makedirs(os.path.join(work, "pos_1_cvt_s0", "trial_0"))  # running, past step 6
    with open(os.path.join(work, "pos_1_cvt_s0", "trial_0", "selection.json"), "w") as f:
      json.dump({"curve": [pos(4, 0.65), pos(6, 0.75), pos(8, 0.95)]}, f)
    os.makedirs(os.path.join(work, "pos_1_cvt_s1", "trial_0"))  # running, not at step 6 yet
    with open(os.path.join(work, "pos_1_cvt_s1", "trial_0", "selection.json"), "w") as f:
      json.dump({"curve": [pos(4, 0.9)]}, f)
    # chunk+pos at 6 steps per task = 12 whole-run steps: the best mean is step 8's.
    finished("chunk+pos_1_cvt_s0", [
        {"step": 8, "chunk": {"f1": 0.6}, "pos": {"accuracy": 0.8}},
        {"step": 12, "chunk": {"f1": 0.7}, "pos": {"accuracy": 0.6}},
        {"step": 16, "chunk": {"f1": 0.9}, "pos": {"accuracy": 0.9}}], "budget")
    output = report(self, work, "--tasks=pos,chunk+pos", "--fractions=1",
                    "--modes_at_all_labels=supervised,cvt", "--seeds=0,1", "--at_step=6")
    self.assertIn("up to 6 labeled steps per task; not there yet: pos_1_cvt_s1, "
                  "chunk+pos_1_supervised_s0", output)
    rows = [line for line in output.splitlines() if line.startswith("| ")]
    self.assertIn("| pos | 1 | default | supervised | accuracy | 0.7500 | 0.7000 | 0.8000 | 2 | "
                  "4, 2 | 6, 4 |", rows)
    self.assertIn("| pos | 1 | default | cvt | accuracy | 0.7500 | 0.7500 | 0.7500 | 1 | 6 | 6 |",
                  rows)
    self.assertIn("| chunk | 1 | default | cvt, with chunk+pos | f1 | 0.6000 | 0.6000 | 0.6000 "
                  "| 1 | 8 | 12 |", rows)
    self.assertIn("| pos | 1 | default | cvt, with chunk+pos | accuracy | 0.8000 | 0.8000 | "
                  "0.8000 | 1 | 8 | 12 |", rows)

  def test_translation_reports_bleu_at_all_labels(self):
    # --modes_at_all_labels names the modes at fraction 1.0, whatever --modes says.
    work = self.create_tempdir().full_path
    write_run(work, "translate_1_supervised_s0", {"translate": {"bleu": 13.06}},
              {"translate": "bleu"}, 1000)
    output = report(self, work, "--tasks=translate", "--fractions=1.0", "--modes=cvt",
                    "--modes_at_all_labels=supervised", "--seeds=0")
    self.assertIn("| translate | 1 | default | supervised | bleu | 13.0600 | 13.0600 | 13.0600 | 1 "
                  "| 1000 | 1500 |", output)

  def test_an_unlabeled_corpus_that_matches_no_file_is_named_before_any_run(self):
    work = self.create_tempdir().full_path
    for flag, task in (("translate_unlabeled_data", "translate"), ("unlabeled_data", "chunk")):
      result = subprocess.run(
          [sys.executable, SCRIPT, f"--work_dir={work}", f"--tasks={task}", "--fractions=1.0",
           "--seeds=0", f"--{flag}=/nowhere/captions.en"],
          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
          cwd=testutil.REPO)
      self.assertEqual(result.returncode, 1)
      self.assertIn(f"cvt_labels.py: error: --{flag}=/nowhere/captions.en matches no file",
                    result.stderr)
      self.assertNotIn("Traceback", result.stderr)
      self.assertEqual(os.listdir(work), [])  # no run started

  def test_each_run_gets_its_settings(self):
    """What each run is given (run_cvt itself replaced by a recorder): translation its beam and
    captions, tagging the corpus and the run's budget; a multi-task run the budget times its
    tasks."""
    work = self.create_tempdir().full_path
    result = run_replaced(
        "    print('RUN', self.config.tasks, self.config.beam_size, self.config.train_steps,\n"
        "          self.config.unlabeled_data)\n",
        f"--work_dir={work}", "--tasks=translate,chunk,chunk+pos", "--fractions=1.0",
        "--modes_at_all_labels=cvt", "--seeds=0", "--train_steps=300", "--translate_beam_size=3",
        "--translate_unlabeled_data=README.md", "--unlabeled_data=setup.py")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    runs = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("RUN")]
    self.assertEqual(runs, [["translate", "3", "300", "README.md"],
                            ["chunk", "10", "300", "setup.py"],
                            ["chunk,pos", "10", "600", "setup.py"]])

  def test_sigterm_stops_the_sweep_like_ctrl_c_naming_the_resume(self):
    """SIGTERM in a run reaches it as KeyboardInterrupt (which makes `run_steps` save the last
    step): the sweep stops there, one line, no traceback, no later run started."""
    work = self.create_tempdir().full_path
    result = run_replaced(
        "    print('RUN', self.config.seed, flush=True)\n"
        "    try:\n"
        "      os.kill(os.getpid(), signal.SIGTERM); signal.pause()\n"
        "    except KeyboardInterrupt:\n"
        "      print('INTERRUPTED', flush=True); raise\n",
        f"--work_dir={work}", "--tasks=chunk", "--fractions=1.0", "--modes_at_all_labels=cvt",
        "--seeds=0,1", "--unlabeled_data=setup.py")
    self.assertEqual(result.returncode, 1, result.stderr[-3000:])
    self.assertEqual([line for line in result.stdout.splitlines() if line[:1] in "RI"],
                     ["RUN 0", "INTERRUPTED"])
    self.assertIn("cvt_labels.py: stopped by signal 15: finished runs and the running one's last "
                  "step are kept; the same command resumes", result.stderr)
    self.assertNotIn("Traceback", result.stderr)

  def test_a_run_another_process_holds_is_skipped_in_one_line(self):
    """Several processes on one sweep without --shard: a run locked by another is named and
    skipped, the next one runs, and the sweep ends normally."""
    work = self.create_tempdir().full_path
    result = run_replaced(
        "    if self.config.seed == 0:\n"
        "      raise run_lock.DirectoryLockedError(f'{self.config.model_dir} is in use')\n"
        "    print('RUN', self.config.seed, flush=True)\n",
        f"--work_dir={work}", "--tasks=chunk", "--fractions=1.0", "--modes_at_all_labels=cvt",
        "--seeds=0,1", "--unlabeled_data=setup.py")
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    lines = result.stdout.splitlines()
    self.assertIn(f"('chunk', 1.0, 'cvt', 0, 'default'): skipped, "
                  f"{os.path.join(work, 'chunk_1_cvt_s0')} is in use", lines)
    self.assertIn("RUN 1", lines)
    self.assertNotIn("Traceback", result.stderr)

  def test_a_beam_below_one_or_a_negative_step_is_refused_naming_the_flag(self):
    for flag, message in (("--translate_beam_size=0", "0 is not a positive integer"),
                          ("--at_step=-1", "-1 is not a non-negative integer")):
      work = self.create_tempdir().full_path
      result = subprocess.run(
          [sys.executable, SCRIPT, f"--work_dir={work}", "--tasks=translate", "--fractions=1.0",
           "--seeds=0", flag],
          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=testutil.REPO)
      self.assertEqual(result.returncode, 1, flag)
      self.assertIn(flag.split("=")[0], result.stderr)
      self.assertIn(message, result.stderr)
      self.assertEqual(os.listdir(work), [])  # no run started


  def test_bad_tasks_variants_and_shards_are_refused_before_any_run(self):
    """Issue 87: one line naming the flag, exit 2, nothing written, TensorFlow never started (an
    unknown task or variant left an empty log and a traceback; --shard=2/2 ran nothing and
    printed an empty table with exit 0)."""
    cases = (("--tasks=chunk,nre", "--tasks: unknown nre (one of chunk, dep, ner, pos, "
                                   "translate, several joined by + for a multi-task run)"),
             ("--variants=in_domian", "--variants: unknown 'in_domian' in 'in_domian' ("),
             ("--shard=2/2", "--shard=2/2 must be i/n with 0 <= i < n"),
             ("--shard=1/2", "--shard=1/2 selects none of the 1 runs (use fewer shards)"))
    for flag, message in cases:
      work = os.path.join(self.create_tempdir().full_path, "sweep")
      result = subprocess.run(
          [sys.executable, "-c", "import sys; sys.path.insert(0, 'benchmarks'); import cvt_labels;"
           " from absl import app\ntry:\n  app.run(cvt_labels.main, argv=sys.argv)\nfinally:\n"
           "  print('TF', 'tensorflow' in sys.modules, file=sys.stderr)", f"--work_dir={work}",
           "--tasks=chunk", "--fractions=1.0", "--seeds=0", "--modes_at_all_labels=cvt", flag],
          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=testutil.REPO)
      self.assertEqual(result.returncode, 2, flag)
      lines = result.stderr.strip().splitlines()
      self.assertStartsWith(lines[-2], f"cvt_labels.py: error: {message}")
      self.assertEqual(lines[-1], "TF False", flag)
      self.assertFalse(os.path.exists(work), flag)

  def test_its_task_names_are_run_cvts(self):
    """Read off the script's source (importing it would define its flags in this process)."""
    with open(SCRIPT, encoding="utf-8") as f:
      tree = ast.parse(f.read())
    names = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "TASKS")
    from official_rtd.cvt import all_tasks  # pylint: disable=g-import-not-at-top,unused-import
    from official_rtd.cvt import task as task_lib  # pylint: disable=g-import-not-at-top
    self.assertEqual(names, tuple(sorted(task_lib.names())))


if __name__ == "__main__":
  tf.test.main()
