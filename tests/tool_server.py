"""Our console scripts and scripts, run as their command lines run them, each in a process of its
own forked from a server that imported TensorFlow once per pytest worker.

A tool started with `subprocess` pays TensorFlow's import (about 5 s of CPU here) before its
first line of work; forked from a server that has imported TensorFlow, Model Garden and this
package but run no TensorFlow operation (TensorFlow is fork-safe until then, as
`official_rtd/data/worker_pool.py` relies on too), it starts at once. Everything else is the
tool's own run: its entry point with its argv, its working directory, the environment given,
its standard output and error captured to files, its `atexit` functions, its exit code.
Tests that signal, time or watch a tool process, or check what it imports, keep `subprocess`.
"""
import atexit
import importlib.metadata
import multiprocessing
import os
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from typing import Dict, Optional, Sequence

# What the server had in its environment before its imports: the variables those imports set
# (the package's Keras 2 and C++ logging defaults) are what a tool's own imports would set.
START_ENVIRONMENT = dict(os.environ)
import official_rtd.tools.cli  # isort: skip  # pylint: disable=g-import-not-at-top,unused-import
import official.nlp.modeling  # isort: skip  # pylint: disable=g-import-not-at-top,unused-import
import tensorflow  # isort: skip  # pylint: disable=g-import-not-at-top,unused-import


def _exit_code(code) -> int:
  """The process's exit status for `sys.exit(code)`, as the interpreter sets it."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code
  print(code, file=sys.stderr)
  return 1


def _main(argv: Sequence[str], cwd: str, env: Dict[str, str], stdout: str, stderr: str):
  """The forked child: becomes `argv` run from `cwd` with `env`, and exits with its status."""
  os.chdir(cwd)
  set_by_imports = {k: v for k, v in os.environ.items() if k not in START_ENVIRONMENT}
  os.environ.clear()
  os.environ.update(env)
  for key, value in set_by_imports.items():
    os.environ.setdefault(key, value)
  tempfile.tempdir = None  # read again from this environment's TMPDIR, as a new process does
  for fd, path in ((1, stdout), (2, stderr)):
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(handle, fd)
    os.close(handle)
  code = 0
  try:
    code = _exit_code(_run_as_main(argv))
  except SystemExit as e:
    code = _exit_code(e.code)
  except KeyboardInterrupt:  # as the interpreter ends on one: killed by SIGINT
    traceback.print_exc()
    code = -signal.SIGINT
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
    code = 1
  # The interpreter's own shutdown: join non-daemon threads, run `atexit`, flush.
  threading._shutdown()  # pylint: disable=protected-access
  atexit._run_exitfuncs()  # pylint: disable=protected-access
  sys.stdout.flush()
  sys.stderr.flush()
  if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
  os._exit(code)  # pylint: disable=protected-access


def _run_as_main(argv: Sequence[str]):
  """Runs `argv` as the command line would: `python -c code ...`, `python -m module ...`,
  `python script.py ...` (`argv` without the interpreter) or a console script of ours."""
  if argv[0] == "-c":
    sys.argv = ["-c", *argv[2:]]
    sys.path.insert(0, "")
    exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # pylint: disable=exec-used
  elif argv[0] == "-m":
    sys.argv = [argv[1], *argv[2:]]
    sys.path.insert(0, os.getcwd())
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  elif argv[0].endswith(".py"):
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")
  else:  # what the console script's wrapper does
    entry, = importlib.metadata.entry_points(group="console_scripts", name=argv[0])
    sys.argv = [shutil.which(argv[0]) or argv[0], *argv[1:]]
    return entry.load()()
  return None


def run(argv: Sequence[str], cwd: Optional[str] = None, timeout: float = 600,
        env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
  """`subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
  stdin=subprocess.DEVNULL)` for a console script of ours, or `[sys.executable, ...]` with a
  script, `-c` or `-m`."""
  command = list(argv[1:] if argv[0] == sys.executable else argv)
  context = multiprocessing.get_context("forkserver")
  context.set_forkserver_preload([__name__])
  with tempfile.TemporaryDirectory() as tmp:
    out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    for path in (out, err):
      open(path, "w").close()
    process = context.Process(target=_main, args=(
        command, os.path.abspath(cwd or os.getcwd()), dict(env or os.environ), out, err))
    process.start()
    process.join(timeout)
    timed_out = process.exitcode is None
    if timed_out:
      process.kill()
      process.join()
    texts = []
    for path in (out, err):
      with open(path, encoding="utf-8", errors="replace") as f:
        texts.append(f.read())
  if timed_out:
    raise subprocess.TimeoutExpired(list(argv), timeout, *texts)
  return subprocess.CompletedProcess(list(argv), process.exitcode, *texts)
