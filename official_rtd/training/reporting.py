"""What a pre-training run reports, and the public hook to follow it.

Three kinds of row, each written to its usual places and then handed to every listener
(`Reporter.add_listener(fn)`, `fn(kind, row)`): the hook benchmarks and tools use instead of the
trainer's internals; and one notice.

  "train"  every `log_every_steps`: the training metrics' means, learning rate, examples/s and
           FLOPs (the log line, TensorBoard `train/`).
  "eval"   a held-out evaluation (`evaluation.Evaluator`): the log line, TensorBoard `eval/`,
           a row of `<model_dir>/eval_results.jsonl`.
  "onset"  the structure-onset monitor (`structure_monitor.StructureMonitor`): the log line,
           TensorBoard `train/onset_*`, a row of `<model_dir>/onset.jsonl`.
  "start"  (written nowhere) the step training starts from: 0, or a resumed run's checkpoint
           step, after which the first "train" row holds the means.

Every row holds `step` and `train_flops`.
"""
import os
from typing import Callable, Dict, List

import tensorflow as tf

from official_rtd.interop import run_dir
from official_rtd.utils import progress

Listener = Callable[[str, dict], None]


class Reporter:
  """Writes a run's rows (see the module docstring) and hands each to the listeners.

  Args:
    model_dir: the run directory.
    train_flops: `step -> FLOPs` consumed by that many steps.
    log: takes one line.
  """

  def __init__(self, model_dir: str, train_flops: Callable[[int], float],
               log: Callable[[str], None] = print):
    self.model_dir = model_dir
    self.train_flops = train_flops
    self.log = log
    self.listeners: List[Listener] = []

  def add_listener(self, listener: Listener) -> None:
    """`listener(kind, row)` is called with every row from now on ("train", "eval", "onset",
    "start")."""
    self.listeners.append(listener)

  def start(self, step: int) -> dict:
    """The "start" notice: training (re)starts after `step` steps."""
    return self._publish("start", {"step": step, "train_flops": self.train_flops(step)})

  def _publish(self, kind: str, row: dict) -> dict:
    for listener in self.listeners:
      listener(kind, row)
    return row

  def train_row(self, writer, step: int, num_train_steps: int, values: Dict[str, float],
                learning_rate: float, examples_per_second: float, tokens_per_example: int,
                skipped: int, seconds_per_step: float) -> dict:
    """The training line of `step` (`values`: the metrics' means since the last line; empty when
    every step since then was skipped) and its TensorBoard scalars."""
    flops = self.train_flops(step)
    with writer.as_default(step=step):
      for name, value in values.items():
        tf.summary.scalar(name, value)
      tf.summary.scalar("learning_rate", learning_rate)
      tf.summary.scalar("examples_per_second", examples_per_second)
      tf.summary.scalar("train_flops", flops)
      tf.summary.scalar("skipped_steps", skipped)
    writer.flush()
    shown = (" ".join(f"{k}={v:.4f}" for k, v in values.items()) if values
             else "(every step since the last line skipped)")
    eta = (num_train_steps - step) * seconds_per_step
    self.log(f"step {step}/{num_train_steps} {shown} lr={learning_rate:.3g} "
             f"examples/s={examples_per_second:.1f} "
             f"tokens/s={examples_per_second * tokens_per_example:.0f} "
             f"train_flops={flops:.3g}"
             f"{f' skipped_steps={skipped}' if skipped else ''} "
             f"ETA {progress.format_duration(eta)}")
    return self._publish("train", dict(values, learning_rate=learning_rate, step=step,
                                       train_flops=flops, skipped_steps=skipped))

  def recorded_steps(self, onset: bool = False) -> set:
    """The steps that have an evaluation row (`onset`: a structure-onset row) already."""
    name = run_dir.ONSET_NAME if onset else run_dir.RESULTS_NAME
    if not os.path.isfile(os.path.join(self.model_dir, name)):
      return set()
    return {row["step"] for row in run_dir.read_results(self.model_dir, name)}

  def eval_row(self, step: int, figures: Dict[str, float], seconds: float,
               weight_average: bool = False) -> dict:
    """A held-out evaluation's figures at `step`."""
    row = dict(figures, step=step, train_flops=self.train_flops(step))
    run_dir.append_result(self.model_dir, row)
    writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "eval"))
    with writer.as_default(step=step):
      for name, value in figures.items():
        tf.summary.scalar(name, value)
      tf.summary.scalar("train_flops", row["train_flops"])
    writer.flush()
    shown = " ".join(f"{k}={v:.4f}" for k, v in sorted(figures.items()))
    self.log(f"eval at step {step} ({seconds:.1f}s{', weight average' if weight_average else ''}"
             f"): {shown}")
    return self._publish("eval", row)

  def onset_row(self, step: int, figures: Dict[str, float], seconds: float,
                writer=None) -> dict:
    """The structure-onset monitor's figures at `step` (`writer`: the `train/` one)."""
    row = dict(figures, step=step, train_flops=self.train_flops(step))
    run_dir.append_result(self.model_dir, row, run_dir.ONSET_NAME)
    if writer is not None:
      with writer.as_default(step=step):
        for name, value in figures.items():
          tf.summary.scalar(name, value)
      writer.flush()
    self.log(f"structure onset at step {step} ({seconds:.1f}s): "
             + " ".join(f"{k}={v:.4g}" for k, v in figures.items()))
    return self._publish("onset", row)
