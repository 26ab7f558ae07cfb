"""Paths and small helpers shared by the tests."""
import fcntl
import hashlib
import os
import shutil
import signal
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_CORPUS = os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt")
SAMPLE_VOCAB = os.path.join(REPO, "tests", "testdata", "vocab_sample.txt")


def sample_paragraphs(count: int, start: int = 4):
  """`count` real paragraphs (non-empty lines) of the shipped Gutenberg sample."""
  with open(SAMPLE_CORPUS, encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip()]
  return lines[start:start + count]


def write_text(path: str, text, mode="w"):
  with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
    f.write(text)
  return path


SHARED_DATA = os.path.join(REPO, "..", "shared", "data")


def missing_data_reason(path: str):
  """None when the data directory `path` exists. Otherwise the reason to skip, or, under CI
  (where ../shared always sits beside the clone), an AssertionError: a skip there would hide a
  broken checkout."""
  if os.path.isdir(path):
    return None
  reason = f"{path} is not available"
  if os.environ.get("CI"):
    raise AssertionError(f"{reason}, but CI always has ../shared: the checkout is incomplete")
  return reason


def requires(path: str):
  """Skips a test class when a data directory (e.g. ../shared) is missing; fails it under CI."""
  import unittest  # pylint: disable=g-import-not-at-top

  def decorate(cls):
    original = cls.setUpClass.__func__

    def set_up_class(klass):
      reason = missing_data_reason(path)
      if reason:
        raise unittest.SkipTest(reason)
      original(klass)
    cls.setUpClass = classmethod(set_up_class)
    return cls
  return decorate


def record_stateless_seeds():
  """A context manager that records (as tuples) the seed of every `tf.random.stateless_uniform`
  and `tf.random.stateless_categorical` call made eagerly inside it; yields the list."""
  import contextlib  # pylint: disable=g-import-not-at-top
  from unittest import mock  # pylint: disable=g-import-not-at-top

  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  @contextlib.contextmanager
  def recording():
    seeds = []
    originals = {name: getattr(tf.random, name)
                 for name in ("stateless_uniform", "stateless_categorical")}

    def spy(name):
      def call(*args, **kwargs):
        seed = kwargs.get("seed", args[1] if len(args) > 1 else None)
        if name == "stateless_categorical":
          seed = kwargs.get("seed", args[2] if len(args) > 2 else None)
        seeds.append(tuple(int(x) for x in tf.convert_to_tensor(seed).numpy()))
        return originals[name](*args, **kwargs)
      return call
    with contextlib.ExitStack() as stack:
      for name in originals:
        stack.enter_context(mock.patch.object(tf.random, name, spy(name)))
      yield seeds
  return recording()


def fine_tune_rte(test, export_dir: str, model_dir: str):
  """Fine-tunes `export_dir` with `run_glue`'s runner on 64 RTE examples (1 epoch, 4 steps) and
  checks it ran; skips (fails under CI) without ../shared. Returns the summary."""
  from official_rtd.finetune import runner as runner_lib  # pylint: disable=g-import-not-at-top
  from official_rtd.finetune.glue import task as glue  # pylint: disable=g-import-not-at-top
  glue_dir = os.path.join(SHARED_DATA, "glue", "RTE")
  reason = missing_data_reason(glue_dir)
  if reason:
    test.skipTest(reason)
  summary = runner_lib.Runner(glue.GlueConfig(
      task="rte", init_checkpoint=export_dir, model_dir=model_dir, data_dir=glue_dir,
      max_seq_length=64, max_train_examples=64, num_train_epochs=1, train_batch_size=16),
      log=lambda _: None).run()
  test.assertBetween(summary["median"]["dev"]["accuracy"], 0.0, 1.0)
  test.assertEqual(summary["trials"][0]["train_steps"], 4)
  return summary


def python_ctrl_c(test) -> None:
  """Python's own Ctrl-C handler (SIGINT raises KeyboardInterrupt) for the rest of `test`, whatever
  the launching shell left: a background job of a non-interactive shell, and so its pytest-xdist
  workers, start with SIGINT ignored, and a test that raises SIGINT in-process then sees nothing."""
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  test.addCleanup(signal.signal, signal.SIGINT, previous)


def tool_lines(stderr: str):
  """A tool's own lines of `stderr`: without TensorFlow's C++ log lines (`cli.TF_LOG_LINE`), which
  a machine may add (e.g. `E0000 ... cuda_platform.cc:51] failed call to cuInit` where CUDA
  libraries are installed but no GPU is)."""
  from official_rtd.tools import cli  # pylint: disable=g-import-not-at-top
  return [line for line in stderr.splitlines() if not cli.TF_LOG_LINE.match(line)]


def md5_tree(path: str) -> dict:
  """{relative path: md5} of every file under `path` (a file: {"": md5}); {} if it is absent.
  Byte-identical outputs after a failure compare equal."""
  if os.path.isfile(path):
    return {"": hashlib.md5(open(path, "rb").read()).hexdigest()}
  out = {}
  for root, _, names in os.walk(path):
    for name in names:
      full = os.path.join(root, name)
      with open(full, "rb") as f:
        out[os.path.relpath(full, path)] = hashlib.md5(f.read()).hexdigest()
  return out


# Fixtures several test classes build alike (records, a tiny export), built once per test run and
# shared by the pytest-xdist workers of that run (the run's id names the folder).
FIXTURES = os.path.join(tempfile.gettempdir(), "official_rtd_test_fixtures_"
                        + os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid())))


def session_copy(key, build, destination: str) -> str:
  """`build(path)` once per test run for each `key` (a repr-able value naming every setting that
  changes the output), under a lock the xdist workers share; then its output copied to
  `destination`: the path itself (a file or a directory, merged into one that exists) and the
  files beside it named `<path>.<suffix>` (e.g. a corpus), with each JSON file's mention of the
  built path rewritten to `destination`. `path` exists before `build` iff `destination` does.
  Returns `destination`."""
  folder = os.path.join(FIXTURES, hashlib.sha1(repr(key).encode()).hexdigest()[:16])
  built = os.path.join(folder, "out")
  os.makedirs(FIXTURES, exist_ok=True)
  with open(folder + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isfile(os.path.join(folder, "done")):
      shutil.rmtree(folder, ignore_errors=True)
      os.makedirs(built if os.path.isdir(destination) else folder)
      build(built)
      write_text(os.path.join(folder, "done"), repr(key))
  for name in os.listdir(folder):
    if name == "out" or name.startswith("out."):
      source, target = os.path.join(folder, name), destination + name[len("out"):]
      if os.path.isdir(source):
        shutil.copytree(source, target, dirs_exist_ok=True)
      else:
        shutil.copyfile(source, target)
  for root, _, names in os.walk(destination):
    for name in names:
      if name.endswith(".json"):
        path = os.path.join(root, name)
        with open(path, encoding="utf-8") as f:
          text = f.read()
        if built in text:
          write_text(path, text.replace(built, destination))
  return destination
