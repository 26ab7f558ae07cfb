"""The benchmark harness (`benchmarks/common.py`): timing, spreads, tables, tools run as
processes and their results; every script uses it and is in docs/benchmarks.md's table."""
import glob
import os
import re
import sys

import tensorflow as tf

from benchmarks import common
from tests import testutil


class HarnessTest(tf.test.TestCase):

  def test_timed_warms_up_then_times_each_call(self):
    calls, finished = [], []
    timing = common.timed(lambda: calls.append(1) or len(calls), warmup=2, repeats=3,
                          finish=finished.append)
    self.assertLen(calls, 5)
    self.assertEqual(finished, [1, 2, 3, 4, 5])  # finish runs on every result, warm-up too
    self.assertEqual(timing.count, 3)
    self.assertBetween(timing.min, 0.0, timing.median)
    self.assertLessEqual(timing.median, timing.max)
    with self.assertRaisesRegex(ValueError, "repeats >= 1"):
      common.timed(lambda: None, repeats=0)

  def test_seed_difference_judges_by_the_spread(self):
    # Issue 72's CoLA and parsing rows (ELECTRA's two seeds against BERT-MLM's).
    self.assertEqual(common.seed_difference([0.1068, 0.1271], [0.0914, 0.1195]),
                     "+0.0115 (within the spread)")
    self.assertEqual(common.seed_difference([0.5149, 0.5227], [0.6526, 0.6775]),
                     "-0.1462 (beyond the spread)")
    self.assertEqual(common.seed_difference([0.7, None], [0.5, 0.6]), "+0.15 (one seed)")
    self.assertEqual(common.seed_difference([None], [0.5]), "—")

  def test_beyond_spread_needs_every_seed_on_one_side_and_two_of_each(self):
    self.assertEqual(common.beyond_spread([0.70, 0.72], [0.60, 0.69]), 1)
    self.assertEqual(common.beyond_spread([0.50, 0.52], [0.60, 0.69]), -1)
    self.assertEqual(common.beyond_spread([0.50, 0.65], [0.60, 0.69]), 0)  # overlapping
    self.assertEqual(common.beyond_spread([0.60, 0.61], [0.61, 0.69]), 0)  # touching: not beyond
    self.assertEqual(common.beyond_spread([0.90], [0.60, 0.69]), 0)  # one seed: no spread

  def test_crossing_budget_is_linear_in_log_flops(self):
    # A sign change between 1e14 and 1e15 halfway in log10: 10 ** 14.5 = 3.16e14.
    self.assertEqual(common.crossing_budget([1e14, 1e15], [-0.1, 0.1]), "crosses at ≈ 3.2e+14")
    # Closing by 0.0965 a decade with 0.05 left at 1e15: 10 ** (15 + 0.05 / 0.0965) = 3.3e15.
    self.assertEqual(common.crossing_budget([1e14, 1e15], [-0.1465, -0.05]),
                     "≈ 3.3e+15 (extrapolated from the last two budgets)")
    self.assertEqual(common.crossing_budget([1e14, 1e15], [-0.05, -0.1]),
                     "not closing (the second ahead, by more)")
    self.assertEqual(common.crossing_budget([1e14, 1e15], [0.01, 0.1]),
                     "not closing (the first ahead, by more)")
    # Issue 72's BLiMP row: -0.0556 then -0.0537 would reach 0 at 1e43.
    self.assertEqual(common.crossing_budget([1e14, 1e15], [-0.0556, -0.0537]),
                     "beyond 1000× the last budget (extrapolated: it barely closes)")
    self.assertEqual(common.crossing_budget([1e14, 1e15], [0.0, 0.1]), "at 1e+14")
    self.assertEqual(common.crossing_budget([1e14], [-0.1]), "—")
    with self.assertRaisesRegex(ValueError, "2 budgets but 1 gaps"):
      common.crossing_budget([1e14, 1e15], [0.1])

  def test_a_failed_job_stops_the_others_and_names_its_log(self):
    work = self.create_tempdir().full_path
    pid_file = os.path.join(work, "sleeper.pid")
    sleeper = [sys.executable, "-c", f"import os, time; open({pid_file!r}, 'w').write("
               "str(os.getpid())); time.sleep(300)"]
    failing = [sys.executable, "-c", "import time; time.sleep(1); raise SystemExit(3)"]
    lines = []
    with common.Stopwatch() as watch:
      with self.assertRaisesRegex(SystemExit, r"failing failed \(exit 3\); see .*failing.log"):
        common.run_jobs([("sleeper", sleeper, os.path.join(work, "sleeper.log")),
                         ("failing", failing, os.path.join(work, "failing.log")),
                         ("never", failing, os.path.join(work, "never.log"))],
                        parallel=2, cwd=work, log=lines.append, pin=False, poll_seconds=0.2)
    self.assertLess(watch.seconds, 60)  # the sleeper was stopped, not waited for
    with open(pid_file, encoding="utf-8") as f:
      pid = int(f.read())
    with self.assertRaises(ProcessLookupError):  # gone (and reaped)
      os.kill(pid, 0)
    self.assertIn("stopped sleeper (exit -15)", lines)
    self.assertFalse(os.path.exists(os.path.join(work, "never.log")))  # never started

  def test_stopwatch_reads_while_running_and_stops_at_exit(self):
    with common.Stopwatch() as watch:
      running = watch.seconds
      sum(range(100000))
    stopped = watch.seconds
    self.assertBetween(running, 0.0, stopped)
    self.assertEqual(watch.seconds, stopped)  # stopped at the block's end

  def test_spread_and_table(self):
    figures = common.spread([0.82, 0.79, 0.85])
    self.assertEqual((figures.median, figures.min, figures.max, figures.count),
                     (0.82, 0.79, 0.85, 3))
    self.assertAllClose(figures.mean, (0.82 + 0.79 + 0.85) / 3)
    self.assertEqual(str(figures), "0.82 [0.79, 0.85]")
    self.assertEqual(common.markdown_table(["run", "F1"], [["a|b", 0.5], ["c", 1]]),
                     "| run | F1 |\n|---|---|\n| a&#124;b | 0.5 |\n| c | 1 |")
    with self.assertRaisesRegex(ValueError, "a row of 1 cells under 2 headers"):
      common.markdown_table(["run", "F1"], [["a"]])
    printed = []
    writer = common.TableWriter(["run", "F1"], printed.append)
    self.assertLen(printed, 2)  # the header at once
    writer.row("c", 1)
    self.assertEqual(printed[-1], "| c | 1 |")
    with self.assertRaisesRegex(ValueError, "no values"):
      common.spread([])

  def test_a_failing_tool_and_a_missing_result_are_one_line(self):
    result = common.run_tool([sys.executable, "-c", "print('fine')"])
    self.assertEqual(result.stdout.strip(), "fine")
    with self.assertRaisesRegex(SystemExit, r"failed \(exit 3\); .*broken"):
      common.run_tool([sys.executable, "-c", "import sys; print('broken'); sys.exit(3)"])
    log = os.path.join(self.get_temp_dir(), "tool.log")
    with self.assertRaisesRegex(SystemExit, f"failed \\(exit 1\\); see {log}"):
      common.run_tool([sys.executable, "-c", "raise SystemExit(1)"], log_path=log)
    run = self.get_temp_dir()
    with self.assertRaisesRegex(SystemExit, "eval_results.json does not exist"):
      common.read_results(os.path.join(run, "nowhere"))
    testutil.write_text(os.path.join(run, "eval_results.json"), '{"f1": 0.5}')
    self.assertEqual(common.read_results(run), {"f1": 0.5})
    testutil.write_text(os.path.join(run, "eval_results.json"), '{"f1": 0.')
    with self.assertRaisesRegex(SystemExit, "is not JSON"):
      common.read_results(run)



HELPERS = ("heldout.py", "matmul_floor.py", "rtd_figures.py")  # imported by the scripts
# A tool run with one change for a diagnosis: its figures are the tool's own log and results.
TOOL_VARIANTS = ("cvt_translate_teacher.py",)


class EveryScriptTest(tf.test.TestCase):

  def test_no_script_times_tabulates_or_parses_flags_on_its_own_and_each_is_documented(self):
    scripts = sorted(glob.glob(os.path.join(testutil.REPO, "benchmarks", "*.py")))
    with open(os.path.join(testutil.REPO, "docs", "benchmarks.md"), encoding="utf-8") as f:
      documented = set(re.findall(r"^\| `(\w+\.py)` \|", f.read(), re.M))
    own = re.compile(r"time\.perf_counter\(\)|time\.time\(\)|statistics\.median|np\.median|"
                     r"[\"']\|---")
    for path in scripts:
      name = os.path.basename(path)
      if name == "common.py":
        continue
      self.assertIn(name, documented, "a script missing from docs/benchmarks.md's table")
      with open(path, encoding="utf-8") as f:
        text = f.read()
      found = own.findall(text)
      self.assertEqual(found, [], f"{name} times or tabulates itself: use benchmarks/common.py")
      self.assertNotRegex(text, r"(?m)^import argparse", f"{name}: one flag library (absl)")
      if name not in HELPERS + TOOL_VARIANTS:
        self.assertRegex(text, r"(?m)^import common$", f"{name} does not use the harness")
    self.assertEqual(documented - {os.path.basename(p) for p in scripts}, set())


if __name__ == "__main__":
  tf.test.main()
