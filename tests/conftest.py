"""pytest runs tf.test.TestCase classes without absl's main: mark absl flags parsed so the
TestCase temp-dir helpers work, give every test a clean gin configuration, and leave out
`tf.test.TestCase.test_session` (a deprecated context manager that unittest's name rule collects
as a test, and that skips itself: 73 false "skipped" per run). Each pytest-xdist worker, and the
tool processes its tests start, gets its share of the cores for TensorFlow's operations: two
workers each running two threads on two cores ran the suite's tiny models ~8% slower
(benchmarks/results/test_suite.md). What a test leaves alive is frozen out of later garbage
collections (`freeze_what_survives`). The run's temporary files (every test's, and those of the
processes its tests start) go to one folder of its own, removed when the run ends: a run used to
leave about 180 entries and 1.1 GB in /tmp."""
import gc  # isort: skip
import multiprocessing.util  # isort: skip
import os  # isort: skip
import shutil  # isort: skip
import tempfile  # isort: skip

# The run's only or controlling process (not an xdist worker, which inherits TMPDIR from it):
# before anything reads TMPDIR.
RUN_TMPDIR = (tempfile.mkdtemp(prefix="official_rtd_tests_")
              if "PYTEST_XDIST_WORKER" not in os.environ else None)
if RUN_TMPDIR:
  os.environ["TMPDIR"] = tempfile.tempdir = RUN_TMPDIR

if "PYTEST_XDIST_WORKER_COUNT" in os.environ:  # before TensorFlow starts its thread pools
  CORES = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")  # taskset's, too
           else os.cpu_count() or 1)
  os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(
      1, CORES // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))
import official_rtd  # isort: skip  # first: its Keras 2 setting precedes TensorFlow
from absl import flags
import gin
import pytest
import tensorflow as tf

flags.FLAGS.mark_as_parsed()


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.fixture(autouse=True)
def freeze_what_survives():
  """After each test: collect its garbage, then freeze what survives (`gc.freeze`), so that no
  later collection walks it again. A worker's heap grows with every traced model (TensorFlow's
  graph objects are slow to walk): full collections took 65 of 203 s in three test modules, 15 s
  so (benchmarks/results/test_suite.md)."""
  yield
  gc.collect()
  gc.freeze()


# The slow tier (`-m "not slow"` leaves it out for day-to-day work; the README's command and CI run
# everything): tests that run the tools as processes, several processes, Beam, a tmpfs, or whole
# pre-training and fine-tuning runs.
SLOW_MODULES = (
    "tests/tools/", "tests/test_disk_full.py", "tests/utils/test_run_lock.py",
    "tests/training/test_distributed.py", "tests/training/test_long_runs.py",
    "tests/data/test_beam_pipeline.py", "tests/cvt/test_runner.py", "tests/cvt/test_parsing.py",
    "tests/cvt/test_run_dir.py",
    "tests/finetune/bam/test_multitask.py", "tests/finetune/test_fingerprint.py",
    "tests/test_conftest.py", "tests/test_readme_commands.py",
    "tests/training/test_xla_step.py", "tests/benchmarks/")


# The longest classes go first (the slowest by class of `--durations=0`,
# benchmarks/results/test_suite.md) so that pytest-xdist (`--dist loadscope`) hands them out
# while every worker is busy anyway and no worker ends the suite alone on one of them.
LONGEST_FIRST = (
    "tests/test_readme_commands.py::ReadmePretrainingTest",
    "tests/tools/test_run_pretraining.py::RunPretrainingCliTest",
    "tests/training/test_xla_step.py::XlaStepTest",
    "tests/training/test_long_runs.py::LongRunTest",
    "tests/finetune/bam/test_multitask.py::BamEndToEndTest",
    "tests/training/test_evaluation.py::EvaluatorTest",
    "tests/test_disk_full.py::DiskFullTest",
    "tests/tools/test_interop_cli.py::ExportModelCliTest",
    "tests/training/test_distributed.py::DistributedTest",
    "tests/tools/test_score_pll.py::ScorePllTest",
    "tests/training/test_trainer.py::TrainerTest",
)


def pytest_configure(config):
  config.addinivalue_line("markers", "slow: end-to-end or multi-process (left out by -m 'not slow')")


def pytest_unconfigure(config):
  if RUN_TMPDIR:  # after the workers: the run's temporary folder (the one made above), at exit
    # after multiprocessing's own clean-up of the folders it made in it (its finalizers run at
    # exit from priority -100 down; a folder removed before them is a traceback at exit).
    multiprocessing.util.Finalize(None, shutil.rmtree, args=(RUN_TMPDIR,),
                                  kwargs={"ignore_errors": True}, exitpriority=-1000)


def pytest_collection_modifyitems(items):
  inherited = tf.test.TestCase.test_session
  def function(item):
    obj = getattr(item, "obj", None)
    return getattr(obj, "__func__", obj)
  items[:] = [item for item in items if function(item) is not inherited]
  def rank(item):
    return next((i for i, scope in enumerate(LONGEST_FIRST)
                 if item.nodeid.startswith(scope + "::")), len(LONGEST_FIRST))
  items.sort(key=rank)  # stable: the rest keep their order
  for item in items:
    path = item.nodeid.split("::")[0]
    if path.startswith(SLOW_MODULES):
      item.add_marker(pytest.mark.slow)
