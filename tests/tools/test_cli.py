"""The installed console scripts and data_prep/ entry points, run as a user would."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import tensorflow as tf

from official_rtd.data import pretraining_data
from official_rtd.data import records
from official_rtd.utils import run_lock
from tests import testutil
from tests import tool_server


def run_tool(args, cwd):
  return tool_server.run(args, cwd=cwd, timeout=300)


def descendants(pid):
  out, queue = [], [str(pid)]
  while queue:
    children = subprocess.run(["pgrep", "-P", queue.pop()], capture_output=True,
                              text=True).stdout.split()
    out += children
    queue += children
  return out


class CreatePretrainingDataCliTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    self.corpus = testutil.write_text(os.path.join(self.tmp, "c.txt"),
                                      "\n".join(testutil.sample_paragraphs(30)) + "\n")

  def test_console_script_from_any_directory(self):
    out = os.path.join(self.tmp, "out")
    result = run_tool(["create_pretraining_data", f"--input_files={self.corpus}",
                       f"--vocab_file={testutil.SAMPLE_VOCAB}", f"--output_dir={out}",
                       "--dupe_factor=2", "--num_workers=1"], cwd=self.tmp)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertRegex(result.stderr, r"MB/s, \d+ examples written, ETA")
    with open(os.path.join(out, records.SIDECAR_NAME)) as f:
      self.assertGreater(json.load(f)["counts"]["examples"], 0)

  def test_bad_inputs_one_line_error_and_nonzero_exit(self):
    bad_vocab = testutil.write_text(os.path.join(self.tmp, "v.txt"), "the\n")
    bad_text = testutil.write_text(os.path.join(self.tmp, "bad.txt"), b"fine\n\xc3\x28\n", "wb")
    empty = testutil.write_text(os.path.join(self.tmp, "empty.txt"), "\n")
    script = os.path.join(testutil.REPO, "data_prep", "create_pretraining_data.py")
    result = run_tool([sys.executable, script, f"--output_dir={self.tmp}/out", "--num_workers=1",
                       f"--vocab_file={testutil.SAMPLE_VOCAB}",
                       f"--input_files={self.tmp}/missing.txt"], cwd=self.tmp)
    self.assertEqual(result.returncode, 1, result.stderr)
    errors = [l for l in testutil.tool_lines(result.stderr) if "error" in l.lower()]
    self.assertLen(errors, 1, result.stderr)
    self.assertRegex(errors[0], "^create_pretraining_data: error: .*missing.txt does not exist")
    # The other refusals in process: the tool's flags are DataConfig's fields.
    cases = [
        (dict(input_files=(empty,)), "the corpus is empty"),
        (dict(vocab_file=bad_vocab), r"lacks the special token\(s\) \[PAD\]"),
        (dict(input_files=(bad_text,)), r"bad.txt:2: invalid UTF-8"),
        (dict(max_seq_length=4), "--max_seq_length=4 is too small"),
    ]
    for changes, message in cases:
      config = dict(input_files=(self.corpus,), vocab_file=testutil.SAMPLE_VOCAB,
                    output_dir=f"{self.tmp}/out", num_workers=1)
      with self.assertRaisesRegex(ValueError, message):
        pretraining_data.create_pretraining_data(
            pretraining_data.DataConfig(**{**config, **changes}), log=lambda _: None)
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "out", records.SIDECAR_NAME)))

  def test_a_bad_flag_is_one_line_naming_it(self):
    """Unknown or misspelled flags and values outside a flag's type or choices: the tool's own
    one line (absl's parser otherwise ends with a generic 'Pass --helpshort ...' line)."""
    for args, message in [
        (["--model_type=bpe"], r"^build_vocab: error: flag --model_type=bpe: value should be one "
                               r"of <wordpiece\|sentencepiece_unigram\|sentencepiece_bpe>"),
        (["--input_file=x"], r"^build_vocab: error: Unknown command line flag 'input_file'\. "
                             r"Did you mean: input_files \?"),
        (["--vocab_size=ten"], r"^build_vocab: error: flag --vocab_size=ten: invalid literal"),
    ]:
      result = run_tool(["build_vocab", f"--output_file={self.tmp}/v.txt", *args], cwd=self.tmp)
      self.assertEqual(result.returncode, 1, result.stderr)
      lines = testutil.tool_lines(result.stderr)
      self.assertLen(lines, 1, result.stderr)
      self.assertRegex(lines[0], message)
      self.assertFalse(os.path.exists(f"{self.tmp}/v.txt"))

  def test_build_vocab_refuses_to_replace_a_vocabulary_without_overwrite(self):
    path = testutil.write_text(os.path.join(self.tmp, "vocab.txt"), "kept\n")
    args = ["build_vocab", f"--input_files={self.corpus}", "--vocab_size=200",
            f"--output_file={path}"]
    result = run_tool(args, cwd=self.tmp)
    self.assertEqual(result.returncode, 1, result.stderr)
    self.assertEqual(testutil.tool_lines(result.stderr)[-1],
                     f"build_vocab: error: --output_file={path} already exists: nothing was "
                     "written; give a new path, or --overwrite to replace it")
    with open(path, encoding="utf-8") as f:
      self.assertEqual(f.read(), "kept\n")
    self.assertEqual(run_tool(args + ["--overwrite"], cwd=self.tmp).returncode, 0)
    with open(path, encoding="utf-8") as f:
      self.assertEqual(f.read().split("\n")[0], "[PAD]")

  def test_tensorflows_log_lines_are_told_from_the_tools(self):
    cuinit = ("E0000 00:00:1795657823.950584   10768 cuda_platform.cc:51] failed call to cuInit: "
              "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)")
    stderr = "\n".join([cuinit, "2026-11-26 01:58:38.610464: E external/local_xla/xla/stream_"
                         "executor/cuda/cuda_platform.cc:51] failed call to cuInit",
                         "I1126 01:17:02.749463 140590828391296 build_vocab.py:173] build_vocab: "
                         "an error of the tool's own", "create_pretraining_data: error: x"])
    self.assertEqual(testutil.tool_lines(stderr), stderr.splitlines()[2:])
    # The tools' start-up drops the GPU probe's error and keeps every other line it printed.
    script = ("import os, sys\nfrom official_rtd.tools import cli\n"
              f"cli.quiet_device_probe(lambda: os.write(2, b{cuinit!r} + b'\\nkept line\\n'))\n"
              "sys.stderr.write('after\\n')\n")
    result = run_tool([sys.executable, "-c", script], cwd=testutil.REPO)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertEqual(result.stderr, "kept line\nafter\n")

  def _start_long_run(self, out, num_workers):
    """A create_pretraining_data run that is writing when this returns."""
    with open(testutil.SAMPLE_CORPUS) as f:
      sample = f.read()
    # 8 MB at dupe 40 keeps one worker busy for about 30 s (0.84 s per MB at dupe 10), so a
    # signal lands mid-run (the 0.4 MB sample alone finished within 1.5 s).
    corpus = testutil.write_text(os.path.join(self.tmp, "big.txt"), sample * 20)
    process = subprocess.Popen(
        ["create_pretraining_data", f"--input_files={corpus}",
         f"--vocab_file={testutil.SAMPLE_VOCAB}", f"--output_dir={out}", "--dupe_factor=40",
         f"--num_workers={num_workers}"], cwd=self.tmp, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:  # wait until it is writing
      if "worker(s)" in line:
        break
    return process

  def test_killed_run_leaves_no_complete_looking_output(self):
    out = os.path.join(self.tmp, "out")
    process = self._start_long_run(out, num_workers=1)
    time.sleep(1.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    self.assertEqual(process.returncode, -signal.SIGKILL)
    names = os.listdir(out)
    self.assertNotIn(records.SIDECAR_NAME, names)
    self.assertEqual([n for n in names if n.startswith(records.SHARD_PREFIX)], [])
    self.assertTrue(any(n.startswith(".tmp-") for n in names), names)  # still in progress
    # The next run cleans the dead run's temporary files away (and takes over its stale lock).
    records.ShardedWriter(out, 1).abort()
    self.assertEqual(os.listdir(out), [run_lock.LOCK_NAME])
    notes = []
    with run_lock.holding(out, "--output_dir", log=notes.append):
      pass
    self.assertIn("took over the lock of a run that is no longer running", notes[0])
    self.assertEqual(os.listdir(out), [])

  def test_sigterm_removes_the_staging_directory_and_stops_the_workers(self):
    out = os.path.join(self.tmp, "out")
    process = self._start_long_run(out, num_workers=2)
    time.sleep(3)
    self.assertTrue(any(n.startswith(".tmp-") for n in os.listdir(out)))
    children = descendants(process.pid)  # the fork server, its workers, the resource tracker
    self.assertGreaterEqual(len(children), 3, children)
    process.send_signal(signal.SIGTERM)
    rest = process.stderr.read()
    process.wait(timeout=60)
    self.assertEqual(process.returncode, 128 + signal.SIGTERM, rest[-2000:])
    self.assertIn("create_pretraining_data: terminated (SIGTERM)", rest)
    # No staging directory, shard or sidecar; the directory this run created is gone too.
    self.assertFalse(os.path.exists(out), os.listdir(out) if os.path.exists(out) else None)
    time.sleep(1)
    alive = [pid for pid in children if os.path.exists(f"/proc/{pid}")
             and open(f"/proc/{pid}/stat").read().split()[2] != "Z"]
    self.assertEqual(alive, [], "worker or fork-server processes outlived the tool")


class BuildVocabCliTest(tf.test.TestCase):

  def test_build_vocab_script(self):
    tmp = tempfile.mkdtemp(dir=self.get_temp_dir())
    corpus = testutil.write_text(os.path.join(tmp, "c.txt"),
                                 "\n".join(testutil.sample_paragraphs(100)) + "\n")
    result = run_tool([sys.executable, os.path.join(testutil.REPO, "data_prep", "build_vocab.py"),
                       f"--input_files={corpus}", "--vocab_size=300", "--output_file=v.txt",
                       "--lower_case"], cwd=tmp)  # the earlier name of --do_lower_case
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertIn("build_vocab: --lower_case is deprecated: use --do_lower_case", result.stderr)
    with open(os.path.join(tmp, "v.txt")) as f:
      self.assertEqual(f.read().split("\n")[:5], ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    result = run_tool(["build_vocab", "--input_files=nothing*.txt", "--output_file=v2.txt"], cwd=tmp)
    self.assertEqual(result.returncode, 1)
    self.assertIn("build_vocab: error: input pattern 'nothing*.txt' matches no file", result.stderr)

  def test_ctrl_c_while_learning_stops_at_once(self):
    # The learner runs in native code for many seconds; the interrupt used to wait for it.
    wiki = os.path.join(testutil.SHARED_DATA, "wiki")
    reason = testutil.missing_data_reason(wiki)
    if reason:
      self.skipTest(reason)
    output = os.path.join(tempfile.mkdtemp(dir=self.get_temp_dir()), "vocab.txt")
    process = subprocess.Popen(
        ["build_vocab", f"--input_files={wiki}/wiki_*", "--vocab_size=16000",
         f"--output_file={output}"], stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    for line in process.stderr:
      if "build_vocab: learning a" in line:
        break
    time.sleep(2)  # well inside the learner (about 18 s in all here)
    signalled = time.time()
    process.send_signal(signal.SIGINT)
    rest = process.stderr.read()
    process.wait(timeout=120)
    self.assertEqual(process.returncode, 130, rest[-2000:])
    self.assertLess(time.time() - signalled, 5)  # 10-15 s before
    self.assertIn("build_vocab: interrupted", rest)
    self.assertFalse(os.path.exists(output))


if __name__ == "__main__":
  tf.test.main()


class RunMainTest(tf.test.TestCase):
  """`cli.run_main`: user errors (ours, OSError, TensorFlow's runtime errors) are one line and
  exit 1; a defect keeps its traceback."""

  def _run(self, raise_statement):
    script = ("import dataclasses\nimport sys\nimport tensorflow as tf\n"
              "from official_rtd.tools import cli\n"
              "@dataclasses.dataclass\nclass Config:\n  pass\n"
              f"def main(config):\n  {raise_statement}\n"
              "cli.run_main(main, 'tool', cli.Flags(Config, {}))\n")
    return tool_server.run([sys.executable, "-c", script], cwd=testutil.REPO, timeout=120)

  def test_user_errors_are_one_line(self):
    for statement, line in (
        ("raise ValueError('bad value')", "tool: error: bad value"),
        ("raise FileNotFoundError('no such file: x')", "tool: error: no such file: x"),
        ("raise tf.errors.DataLossError(None, None, 'truncated record at 12\\nmore detail')",
         "tool: error: DataLossError: truncated record at 12"),
        ("raise tf.errors.InvalidArgumentError(None, None, '{{function_node __wrapped__x}} "
         "CorpusError: a.txt:3: invalid UTF-8')", "tool: error: a.txt:3: invalid UTF-8"),
        # Raised inside a gin configurable: without the "In call to configurable" line gin adds.
        ("import gin; r = gin.configurable('raiser')(lambda n=1: (_ for _ in ()).throw("
         "ValueError('raiser.n = %d must be >= 1' % n))); gin.parse_config('raiser.n = -5'); r()",
         "tool: error: raiser.n = -5 must be >= 1")):
      result = self._run(statement)
      self.assertEqual(result.returncode, 1, result.stderr)
      self.assertEqual(result.stderr.strip().splitlines()[-1], line)
      self.assertNotIn("Traceback", result.stderr)

  def test_defects_keep_their_traceback(self):
    result = self._run("raise RuntimeError('a defect')")
    self.assertNotEqual(result.returncode, 0)
    self.assertIn("Traceback", result.stderr)
    self.assertIn("RuntimeError: a defect", result.stderr)

  def test_interrupt_says_what_is_kept(self):
    result = self._run("raise KeyboardInterrupt()")
    self.assertEqual(result.returncode, 130)
    self.assertIn("finished outputs and checkpoints are kept", result.stderr)

  def test_an_interrupt_does_not_wait_for_other_threads(self):
    # TensorFlow's input threads held the interpreter's exit for up to 6 s after an interrupt.
    start = time.time()
    result = self._run("import threading, time; threading.Thread(target=time.sleep, "
                       "args=(60,)).start(); raise KeyboardInterrupt()")
    self.assertEqual(result.returncode, 130, result.stderr)
    self.assertLess(time.time() - start, 45)  # not the thread's 60 s

  def test_a_second_signal_does_not_cut_the_cleanup_short(self):
    script = ("import dataclasses, time\nfrom official_rtd.tools import cli\n"
              "@dataclasses.dataclass\nclass Config:\n  pass\n"
              "def main(config):\n  try:\n    print('started', flush=True); time.sleep(60)\n"
              "  finally:\n    time.sleep(1); print('saved', flush=True)\n"
              "cli.run_main(main, 'tool', cli.Flags(Config, {}), probe_devices=False)\n")
    process = subprocess.Popen([sys.executable, "-c", script], cwd=testutil.REPO, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    self.assertEqual(process.stdout.readline().strip(), "started")
    process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)  # an impatient user, or a scheduler's repeat
    out, err = process.communicate(timeout=60)
    self.assertEqual(process.returncode, 128 + signal.SIGTERM, err)
    self.assertEqual(out.strip(), "saved")
    self.assertIn("tool: already stopping (saving what is finished); a third signal quits at "
                  "once", err)
    self.assertIn("tool: terminated (SIGTERM)", err)
