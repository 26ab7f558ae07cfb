"""compare_runs: the equal-FLOPs table, and --plot (one curve per run of a held-out figure
against train FLOPs)."""
import os
import tempfile
from unittest import mock

from matplotlib import image as mpimg
import numpy as np
import tensorflow as tf

from official_rtd.tools import compare_runs
from official_rtd.interop import run_dir
from tests import tool_server

# matplotlib's first two default line colours (C0, C1), as RGB in [0, 1].
C0, C1 = np.array([0x1f, 0x77, 0xb4]) / 255, np.array([0xff, 0x7f, 0x0e]) / 255


def write_runs(tmp):
  runs = {"electra": [(1e9, 0.60), (1e10, 0.70), (1e11, 0.80)],
          "mlm": [(2e9, 0.55), (2e10, 0.58)]}
  for name, rows in runs.items():
    for step, (train_flops, auc) in enumerate(rows):
      run_dir.append_result(os.path.join(tmp, name), {
          "step": step, "train_flops": train_flops, "fixed_noise_auc": auc, "mlm_loss": 4.0})
  return [os.path.join(tmp, name) for name in runs]


def pixels_near(png, colour, tolerance=0.05):
  return int(np.sum(np.all(np.abs(png[..., :3] - colour) < tolerance, axis=-1)))


class CompareTest(tf.test.TestCase):

  def test_rows_at_equal_flops(self):
    tmp = tempfile.mkdtemp()
    runs = {"a": [(10, 1e9, 5.0), (20, 2e9, 4.0), (30, 3e9, 3.5)],
            "b": [(10, 1.5e9, 4.8), (20, 2.5e9, 4.1)]}
    for name, rows in runs.items():
      for step, train_flops, loss in rows:
        run_dir.append_result(os.path.join(tmp, name),
                                 {"step": step, "train_flops": train_flops, "mlm_loss": loss})
    table = compare_runs.compare([os.path.join(tmp, "a"), os.path.join(tmp, "b")])
    self.assertIn("equal budget: 2.5e+09", table)
    self.assertRegex(table, r"a \| 20 \| 2e\+09 \| 4.0000")
    self.assertRegex(table, r"b \| 20 \| 2.5e\+09 \| 4.1000")
    with self.assertRaisesRegex(FileNotFoundError, "has no eval_results.jsonl"):
      compare_runs.compare([tmp])
    dirs = [os.path.join(tmp, "a"), os.path.join(tmp, "b")]
    self.assertIn("| mlm_loss |", compare_runs.compare(dirs, ["mlm_loss"]))
    with self.assertRaisesRegex(ValueError, r"--figures=mlm_los: not a figure every run has "
                                r"\(shared: mlm_loss\)"):
      compare_runs.compare(dirs, ["mlm_loss", "mlm_los"])


class PlotTest(tf.test.TestCase):

  def test_two_runs_two_curves(self):
    tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    dirs = write_runs(tmp)
    out = os.path.join(tmp, "curves.png")
    series = compare_runs.plot(dirs, "fixed_noise_auc", out)
    self.assertEqual(series["electra"], [(1e9, 0.6), (1e10, 0.7), (1e11, 0.8)])
    self.assertLen(series["mlm"], 2)
    png = mpimg.imread(out)
    self.assertEqual(png.shape[:2], (400, 640))
    # Both lines are drawn (and in the legend): many pixels of each run's colour.
    self.assertGreater(pixels_near(png, C0), 100)
    self.assertGreater(pixels_near(png, C1), 100)
    self.assertEqual([n for n in os.listdir(tmp) if n.startswith(".tmp-")], [])

  def test_unknown_metric_names_the_run_and_leaves_old_plot(self):
    tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    dirs = write_runs(tmp)
    out = os.path.join(tmp, "curves.png")
    with open(out, "wb") as f:
      f.write(b"old")
    with self.assertRaisesRegex(ValueError, r"--metric=rtd_auc: .*electra has no such figure "
                                r"\(it has: fixed_noise_auc, mlm_loss\)"):
      compare_runs.plot(dirs, "rtd_auc", out)
    with open(out, "rb") as f:
      self.assertEqual(f.read(), b"old")

  def test_onset_rows_alone_plot_as_the_readme_says(self):
    """README step 2: a run trained without --mode=train_and_eval has onset.jsonl only."""
    tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    run = os.path.join(tmp, "mlm_s0")
    for step, flops, value in ((1000, 9e12, 0.02), (2000, 1.8e13, 0.14)):
      run_dir.append_result(run, {"step": step, "train_flops": flops,
                                  "onset_attn_next_max": value}, run_dir.ONSET_NAME)
    out = os.path.join(tmp, "onset.png")
    with mock.patch("builtins.print") as printed:
      compare_runs.main(compare_runs.CompareRunsConfig(
          model_dirs=[run], plot=out, metric="onset_attn_next_max"))
    lines = [call.args[0] for call in printed.call_args_list]
    self.assertEqual(lines[0], f"no table of evaluation figures: no eval_results.jsonl in {run}")
    self.assertIn(f"wrote {out}", lines[-1])
    self.assertGreater(os.path.getsize(out), 1000)
    # Without --plot there is nothing to show: the missing evaluation rows are the error.
    with self.assertRaisesRegex(FileNotFoundError, "has no eval_results.jsonl"):
      compare_runs.main(compare_runs.CompareRunsConfig(model_dirs=[run]))

  def test_plot_paths_that_cannot_take_the_png(self):
    tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    dirs = write_runs(tmp)
    for plot, message in ((tmp, rf"--plot={tmp} is a directory: give a file name"),
                          (os.path.join(tmp, "missing", "c.png"),
                           rf"the directory {tmp}/missing does not exist \(create it first\)")):
      with self.assertRaisesRegex(ValueError, message):
        compare_runs.main(compare_runs.CompareRunsConfig(model_dirs=dirs, plot=plot))

  def test_cli(self):
    tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    dirs = write_runs(tmp)
    out = os.path.join(tmp, "c.png")
    result = tool_server.run(["compare_runs", f"--model_dirs={','.join(dirs)}", f"--plot={out}",
                              "--metric=fixed_noise_auc"], timeout=120)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn("equal budget: 2e+10", result.stdout)
    self.assertIn(f"wrote {out}", result.stdout)
    self.assertTrue(os.path.getsize(out) > 1000)
    result = tool_server.run(["compare_runs", f"--model_dirs={','.join(dirs)}", f"--plot={out}",
                              "--metric=nope"], timeout=120)
    self.assertEqual(result.returncode, 1)
    self.assertIn("compare_runs: error: --metric=nope", result.stderr)


if __name__ == "__main__":
  tf.test.main()
