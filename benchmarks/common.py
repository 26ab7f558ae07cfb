"""What the benchmark scripts share (issue 71): timing with warm-up, a median with its spread,
Markdown tables, the CPU line every result names (`cpu_summary`, TensorFlow-free), running one of
our tools as a process, several as jobs (`run_jobs`: none left running on a failure) and reading
their results, and where a gap between two methods closes as the budget grows
(`crossing_budget`). Free of TensorFlow and torch: the PyTorch side (`electra_torch.py`) and the
scripts' `--help` import it without loading either."""
import dataclasses
import json
import math
import os
import signal
import statistics
import subprocess
import time
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from official_rtd.utils.cpu import \
    cpu_summary  # pylint: disable=unused-import; every result names its CPU

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")  # the shared data beside the repository


@dataclasses.dataclass(frozen=True)
class Spread:
  """The median of some figures, with their minimum, maximum, count and mean."""
  median: float
  min: float
  max: float
  count: int
  mean: float

  def __str__(self) -> str:
    return f"{self.median:.4g} [{self.min:.4g}, {self.max:.4g}]"


def spread(values: Iterable[float]) -> Spread:
  """The `Spread` of `values` (at least one)."""
  values = [float(v) for v in values]
  if not values:
    raise ValueError("spread of no values")
  return Spread(statistics.median(values), min(values), max(values), len(values),
                statistics.fmean(values))


def median_difference(first: Iterable[Optional[float]],
                      second: Iterable[Optional[float]]) -> Optional[float]:
  """The median of `first` minus the median of `second` (None values left out); None when either
  has none."""
  first, second = ([float(v) for v in values if v is not None] for values in (first, second))
  return statistics.median(first) - statistics.median(second) if first and second else None


def seed_difference(first: Iterable[Optional[float]], second: Iterable[Optional[float]]) -> str:
  """`first` against `second`, each one figure per seed (None: missing): the difference of the
  medians and whether it is beyond the seed spread (every seed of one above every seed of the
  other; with one seed on either side there is no spread to judge by). "—" when either has
  none."""
  first, second = ([float(v) for v in values if v is not None] for values in (first, second))
  difference = median_difference(first, second)
  if difference is None:
    return "—"
  if min(len(first), len(second)) < 2:
    verdict = "one seed"
  else:
    verdict = "beyond the spread" if beyond_spread(first, second) else "within the spread"
  return f"{difference:+.4g} ({verdict})"


def beyond_spread(first: Sequence[float], second: Sequence[float]) -> int:
  """1 when every figure of `first` (one per seed) is above every one of `second`, −1 when every
  one is below, else 0 — also 0 with fewer than two seeds on either side (no spread to judge
  by)."""
  if min(len(first), len(second)) < 2:
    return 0
  return 1 if min(first) > max(second) else -1 if max(first) < min(second) else 0


def crossing_budget(budgets: Sequence[float], gaps: Sequence[float]) -> str:
  """Where a difference between two methods (`gaps[i]` at train FLOPs `budgets[i]`, ascending)
  reaches 0, linear in log10(budget): interpolated where two neighbouring budgets differ in sign,
  else extrapolated from the last two when the gap is closing (said so beyond 1000× the last
  budget), else which method is ahead by more; "—" with fewer than two budgets."""
  if len(budgets) != len(gaps):
    raise ValueError(f"{len(budgets)} budgets but {len(gaps)} gaps")
  if len(budgets) < 2:
    return "—"
  logs = [math.log10(b) for b in budgets]

  def zero(i):  # where the line through points i and i + 1 meets 0
    return 10 ** (logs[i] - gaps[i] * (logs[i + 1] - logs[i]) / (gaps[i + 1] - gaps[i]))

  for i in range(len(gaps) - 1):
    if gaps[i] == 0:
      return f"at {budgets[i]:.2g}"
    if gaps[i] * gaps[i + 1] < 0:
      return f"crosses at ≈ {zero(i):.2g}"
  if gaps[-1] == 0:
    return f"at {budgets[-1]:.2g}"
  if abs(gaps[-1]) < abs(gaps[-2]):
    crossing = zero(len(gaps) - 2)
    if crossing > 1000 * budgets[-1]:
      return "beyond 1000× the last budget (extrapolated: it barely closes)"
    return f"≈ {crossing:.2g} (extrapolated from the last two budgets)"
  return f"not closing (the {'first' if gaps[-1] > 0 else 'second'} ahead, by more)"


def timed(fn: Callable[[], Any], warmup: int = 1, repeats: int = 5,
          finish: Optional[Callable[[Any], Any]] = None) -> Spread:
  """Seconds per call of `fn()`: `warmup` untimed calls, then `repeats` timed one by one.
  `finish(result)` runs inside each timing (e.g. fetching a lazy tensor's value)."""
  if repeats < 1 or warmup < 0:
    raise ValueError(f"timed needs repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
  finish = finish or (lambda result: result)
  for _ in range(warmup):
    finish(fn())
  seconds = []
  for _ in range(repeats):
    start = time.perf_counter()
    finish(fn())
    seconds.append(time.perf_counter() - start)
  return spread(seconds)


class Stopwatch:
  """Wall seconds of one long piece of work (a run, a tool), where `timed`'s repeats do not
  apply: `with Stopwatch() as watch: ...`, then `watch.seconds` (or read it while running)."""

  def __init__(self):
    self.start, self.stop = time.perf_counter(), None

  def __enter__(self) -> "Stopwatch":
    self.start, self.stop = time.perf_counter(), None
    return self

  def __exit__(self, *exc) -> None:
    self.stop = time.perf_counter()

  @property
  def seconds(self) -> float:
    return (self.stop if self.stop is not None else time.perf_counter()) - self.start


def _line(values: Sequence[Any]) -> str:
  return "| " + " | ".join(str(v).replace("|", "&#124;") for v in values) + " |"


class TableWriter:
  """A Markdown table printed row by row, so a long benchmark shows each result as it comes."""

  def __init__(self, headers: Sequence[str], out: Callable[[str], Any] = None):
    self.width = len(headers)
    self.out = out or (lambda line: print(line, flush=True))
    self.out(_line(headers))
    self.out("|" + "---|" * self.width)

  def row(self, *values: Any) -> None:
    if len(values) != self.width:
      raise ValueError(f"a row of {len(values)} cells under {self.width} headers: {values}")
    self.out(_line(values))


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
  """A whole Markdown table as one string; each cell is `str(value)` with `|` escaped."""
  lines = []
  writer = TableWriter(headers, lines.append)
  for row in rows:
    writer.row(*row)
  return "\n".join(lines)


def run_tool(argv: List[str], log_path: Optional[str] = None, cwd: str = REPO,
             timeout: Optional[float] = None, env: Optional[dict] = None
             ) -> subprocess.CompletedProcess:
  """Runs one of our tools (or any command) as a process, its output in `log_path` (appended) or
  captured; a failure raises `SystemExit` naming the command, its exit code and the log (or the
  output's last lines)."""
  if log_path:
    with open(log_path, "a", encoding="utf-8") as log:
      result = subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout, env=env)
  else:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=timeout, env=env)
  if result.returncode != 0:
    where = f"see {log_path}" if log_path else "\n".join(
        (result.stdout + result.stderr).strip().splitlines()[-5:])
    raise SystemExit(f"{' '.join(argv[:2])} ... failed (exit {result.returncode}); {where}")
  return result


def read_results(path: str, name: str = "eval_results.json") -> dict:
  """A run's results: `path` is a `.json` file or the run directory holding `name`."""
  file = path if path.endswith(".json") else os.path.join(path, name)
  try:
    with open(file, encoding="utf-8") as f:
      return json.load(f)
  except FileNotFoundError:
    raise SystemExit(f"{file} does not exist: has the run finished?") from None
  except json.JSONDecodeError as e:
    raise SystemExit(f"{file} is not JSON ({e}): a damaged or unfinished results file") from None


def run_jobs(jobs: Sequence[Tuple[str, List[str], str]], parallel: int, cwd: str,
             log: Callable[[str], None] = print, pin: bool = True, poll_seconds: float = 2.0,
             stop_seconds: float = 120.0) -> None:
  """Runs `(name, argv, log_path)` jobs as processes, `parallel` at a time (with `pin` and
  parallel > 1, each on a core of its own by `taskset`), each one's output in its log. A job
  that fails, Ctrl-C or SIGTERM of this process stops the jobs still running (SIGTERM: our tools
  save their state and a re-run resumes; killed after `stop_seconds`) before it fails, naming
  the failed job and its log: no job is left running on its own."""
  pending, running = list(jobs), []

  def stop_running():
    for _, process, *_ in running:
      if process.poll() is None:
        process.terminate()
    deadline = time.monotonic() + stop_seconds
    for name, process, handle, *_ in running:
      try:
        process.wait(max(0.0, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
      handle.close()
      log(f"stopped {name} (exit {process.returncode})")
    running.clear()

  def on_sigterm(signum, frame):
    del frame  # unused
    raise SystemExit(f"terminated (signal {signum})")

  previous = signal.signal(signal.SIGTERM, on_sigterm)
  try:
    while pending or running:
      while pending and len(running) < parallel:
        name, argv, log_path = pending.pop(0)
        core = [c for c in range(parallel) if c not in {r[3] for r in running}][0]
        prefix = ["taskset", "-c", str(core)] if pin and parallel > 1 else []
        log(f"start {name} (log {log_path})")
        handle = open(log_path, "a", encoding="utf-8")
        process = subprocess.Popen(prefix + list(argv), cwd=cwd, stdout=handle,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        running.append((name, process, handle, core, log_path, Stopwatch()))
      try:  # at once when the oldest job ends; the others are looked at every poll_seconds
        running[0][1].wait(poll_seconds)
      except subprocess.TimeoutExpired:
        pass
      for job in list(running):
        name, process, handle, _, log_path, watch = job
        if process.poll() is None:
          continue
        handle.close()
        running.remove(job)
        if process.returncode != 0:
          raise SystemExit(f"{name} failed (exit {process.returncode}); see {log_path}")
        log(f"done {name} in {watch.seconds:.0f} s")
  finally:
    stop_running()
    signal.signal(signal.SIGTERM, previous)
