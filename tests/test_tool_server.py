"""`tool_server.run` against `subprocess.run` on the same command lines: the same exit status,
output and side effects (the reference is the interpreter itself)."""
import os
import subprocess
import sys
import time

import tensorflow as tf

from tests import testutil
from tests import tool_server

# Each a `python -c` program and what it exercises.
PROGRAMS = {
    "output and status": "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
    "a message as status": "import sys; sys.exit('stopped: bad input')",
    "a defect's traceback": "raise RuntimeError('a defect')",
    "an interrupt nobody caught": "raise KeyboardInterrupt()",
    "cwd, argv and environment": ("import os, sys, tempfile; print(os.getcwd(), sys.argv[1:], "
                                  "os.environ['TOOL_SERVER_PROBE'], sys.path[0] == '', "
                                  "tempfile.gettempdir())"),
    "atexit after a thread": ("import atexit, threading, time\n"
                              "atexit.register(lambda: print('atexit'))\n"
                              "threading.Thread(target=lambda: (time.sleep(1), print('thread'))"
                              ").start()\nprint('main')"),
    "output not yet flushed": "import sys; sys.stdout.write('no newline'); sys.exit(0)",
}


def without_frames(stderr: str) -> str:
  """`stderr` without a traceback's frame lines (indented), which name the runner's frames."""
  return "\n".join(line for line in stderr.splitlines() if not line.startswith("  "))


class ToolServerTest(tf.test.TestCase):

  def assert_same(self, argv, cwd, env=None):
    expected = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    actual = tool_server.run(argv, cwd=cwd, env=env, timeout=120)
    self.assertEqual(actual.returncode, expected.returncode, str(argv))
    self.assertEqual(actual.stdout, expected.stdout, str(argv))
    self.assertEqual(without_frames(actual.stderr), without_frames(expected.stderr), str(argv))
    return actual

  def test_python_programs_end_as_in_their_own_interpreter(self):
    cwd = self.create_tempdir().full_path
    env = dict(os.environ, TOOL_SERVER_PROBE="given", TMPDIR=cwd)
    for name, program in PROGRAMS.items():
      with self.subTest(name):
        self.assert_same([sys.executable, "-c", program, "--flag=1"], cwd, env)

  def test_a_script_a_module_and_a_console_script(self):
    cwd = self.create_tempdir().full_path
    script = testutil.write_text(os.path.join(cwd, "script.py"),
                                 "import sys; print(sys.argv, sys.path[0])\n")
    self.assert_same([sys.executable, script, "a"], cwd)
    self.assert_same([sys.executable, "-m", "json.tool", "--sort-keys", script], cwd)
    result = self.assert_same(["build_vocab", "--vocab_size=ten"], cwd)
    self.assertEqual(result.returncode, 1)

  def test_a_timeout_kills_the_tool(self):
    start = time.time()
    with self.assertRaises(subprocess.TimeoutExpired):
      tool_server.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=2)
    self.assertLess(time.time() - start, 30)


if __name__ == "__main__":
  tf.test.main()
