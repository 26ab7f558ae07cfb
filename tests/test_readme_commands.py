"""The README's step-by-step commands ("Pre-training on one machine") run as a new user types
them, in order, on slices of the shared data: each command is the README's own text (its quoted
globs and paths as written, run from a folder beside `shared/`), with only the flags of
`SHRINK` appended so that the same run is a few steps long. Each runs as its command line does,
in a process of its own forked from one that imported TensorFlow (`tests/tool_server.py`)."""
import glob
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import tensorflow as tf

from official_rtd.tools import flag_tables
from tests import testutil
from tests import tool_server

# Appended to the README's command of each tool: the same run at test size.
SHRINK = {
    "build_vocab": ["--vocab_size=600"],
    "run_pretraining": ["--gin_param=TrainConfig.train_flops_budget = 3e10",
                        "--gin_param=OnsetConfig.every_steps = 2"],
    "run_probes": ["--random_init_seeds=0"],
    "run_glue": ["--num_train_epochs=1"],
}


def readme_steps():
  """The commands of the README's "Step by step" block, continuation lines joined."""
  with open(os.path.join(testutil.REPO, "README.md"), encoding="utf-8") as f:
    block = re.search(r"Step by step:\s*```bash\n(.*?)```", f.read(), re.S).group(1)
  text = re.sub(r"\\\n\s*", "", block)
  return [shlex.split(line) for line in text.splitlines()
          if line.strip() and not line.lstrip().startswith("#")]


def head_blocks(source: str, target: str, blocks: int, header: bool = False):
  """The first `blocks` blank-line-separated blocks (or lines, for a flat file) of `source`."""
  os.makedirs(os.path.dirname(target), exist_ok=True)
  with open(source, encoding="utf-8") as f:
    lines = f.readlines()
  if header or not any(not line.strip() for line in lines[:200]):
    kept = lines[:blocks + int(header)]
  else:
    groups = [list(g) for blank, g in itertools.groupby(lines, lambda l: not l.strip())
              if not blank]
    kept = [line for group in groups[:blocks] for line in group + ["\n"]]
  with open(target, "w", encoding="utf-8") as f:
    f.writelines(kept)


def readme_pretraining_value_command():
  """The README's one `benchmarks/pretraining_value.py` command (before "Step by step")."""
  with open(os.path.join(testutil.REPO, "README.md"), encoding="utf-8") as f:
    text = f.read()
  block = re.search(r"```bash\n(python benchmarks/pretraining_value\.py.*?)```", text, re.S)
  return shlex.split(re.sub(r"\\\n\s*", "", block.group(1)))


def slice_shared_data(data: str):
  """Slices of the shared data in `data`, laid out as `shared/data` is."""
  shared = testutil.SHARED_DATA
  head_blocks(os.path.join(shared, "wiki", "wiki_00.txt"), f"{data}/wiki/wiki_00.txt", 400)
  head_blocks(os.path.join(shared, "wiki", "wiki_60.txt"), f"{data}/wiki/wiki_60.txt", 60)
  head_blocks(os.path.join(shared, "wiki", "wiki_63.txt"), f"{data}/wiki/wiki_63.txt", 120)
  paradigm = sorted(glob.glob(os.path.join(shared, "blimp", "*.jsonl")))[0]
  head_blocks(paradigm, f"{data}/blimp/{os.path.basename(paradigm)}", 12)
  for split, count in (("train", 120), ("dev", 40)):
    head_blocks(f"{shared}/tagging/pos_ptb/{split}.tsv",
                f"{data}/tagging/pos_ptb/{split}.tsv", count)
    head_blocks(f"{shared}/glue/SST-2/{split}.tsv", f"{data}/glue/SST-2/{split}.tsv", count,
                header=True)
    head_blocks(f"{shared}/glue/CoLA/{split}.tsv", f"{data}/glue/CoLA/{split}.tsv", count)
    head_blocks(f"{shared}/parsing/ud_ewt/en_ewt-ud-{split}.conllu",
                f"{data}/parsing/ud_ewt/en_ewt-ud-{split}.conllu", count)


def readme_commands():
  """Every command of the README's bash blocks as (its line number, argv): continuation lines
  joined, comments dropped, `NAME=value` lines substituted into the commands after them."""
  with open(os.path.join(testutil.REPO, "README.md"), encoding="utf-8") as f:
    text = f.read()
  commands = []
  for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
    line = text[:block.start()].count("\n") + 2
    variables = {}
    for command in re.sub(r"\\\n\s*", " ", block.group(1)).splitlines():
      argv = shlex.split(command, comments=True)
      if len(argv) == 1 and re.fullmatch(r"\w+=\S+", argv[0]):
        name, value = argv[0].split("=", 1)
        variables[name] = value
      elif argv:
        commands.append((line, [re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], a)
                                for a in argv]))
  return commands


class ReadmeCommandsAsTypedTest(tf.test.TestCase):
  """Every command on the front page, as typed: a console script of ours (or a benchmark script
  that exists, or pip), every flag one of that tool's flags, every input under `../shared/data`
  or `data/` present. (The pre-training commands also run, below; each tool runs end to end in
  its own CLI test.)"""

  def test_every_command_names_real_tools_flags_and_inputs(self):
    specs = flag_tables.tool_specs(os.path.join(testutil.REPO, "setup.py"))
    commands = readme_commands()
    tools = {argv[0] for _, argv in commands}
    self.assertTrue({"run_glue", "run_squad", "run_tagging", "run_multiple_choice",
                     "run_parsing", "run_cvt", "cvt_predict", "export_model",
                     "import_checkpoint", "run_pretraining", "create_pretraining_data"} <= tools,
                    tools)
    for line, argv in commands:
      where = f"README.md:{line}: {' '.join(argv)[:80]}"
      if argv[0] in ("pip", "python"):
        if argv[0] == "python" and argv[1] != "-m":
          self.assertTrue(os.path.isfile(os.path.join(testutil.REPO, argv[1])), where)
        continue
      self.assertIn(argv[0], specs, where)
      spec = specs[argv[0]]
      names = {flag.name: flag.kind for flag in spec.flags()}
      known = set(names) | set(spec.aliases) | set(spec.renamed)
      for arg in argv[1:]:
        if not arg.startswith("--"):
          continue
        name, _, value = arg[2:].partition("=")
        negated = name.startswith("no") and names.get(name[2:]) == "bool"
        self.assertTrue(name in known or negated, f"{where}: --{name}")
        if value.startswith(("../shared/data", "data/")):
          if value.startswith("../shared/data") and not os.path.isdir(testutil.SHARED_DATA):
            continue  # the shared data's own test says what is missing
          self.assertTrue(glob.glob(os.path.join(testutil.REPO, value)), f"{where}: {value}")


class PretrainingValueFlagsTest(tf.test.TestCase):

  def test_bad_data_folder_and_vocab_size_are_refused_naming_the_flag(self):
    script = os.path.join(testutil.REPO, "benchmarks", "pretraining_value.py")
    for flag, message in (("--shared_data=/nonexistent", "--shared_data=/nonexistent holds no wiki/"),
                          ("--vocab_size=-3", "--vocab_size=-3 must be >= 0"),
                          ("--methods=mlm,electra_nowhere",
                           "--methods: no gin/tasks/<method>.gin or gin/recipes/<method>.gin for "
                           "['electra_nowhere']")):
      result = subprocess.run([sys.executable, script, "--work_dir=/tmp/unused", flag],
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
      self.assertEqual(result.returncode, 2, result.stderr)
      self.assertIn(message, result.stderr.strip().splitlines()[-1])


@testutil.requires(testutil.SHARED_DATA)
class ReadmePretrainingTest(tf.test.TestCase):
  """The README's step-by-step commands in order, then its `pretraining_value.py` command on the
  same folder, as a user who did the steps by hand and then runs the script: the script skips
  what the steps made (the same layout: vocabulary, records, `mlm_s0`, its BLiMP, probes and
  SST-2) and does the rest (the random initialisation, held-out figures, CoLA, UD parsing, the
  representations, the report)."""

  def test_step_by_step_then_pretraining_value_run_as_typed(self):
    root = tempfile.mkdtemp()
    data = os.path.join(root, "shared", "data")
    slice_shared_data(data)
    work = os.path.join(root, "main")  # where a user stands: beside shared/
    os.makedirs(work)
    steps = readme_steps()
    self.assertEqual([s[0] for s in steps],
                     ["build_vocab", "create_pretraining_data", "create_pretraining_data",
                      "run_pretraining", "compare_runs", "score_pairs", "run_probes",
                      "run_glue"])
    pv = os.path.join(root, "pv")
    for step in steps:
      args = [a.replace("/tmp/pv", pv) for a in step] + SHRINK.get(step[0], [])
      result = tool_server.run(args, cwd=work, timeout=900)
      self.assertEqual(result.returncode, 0, f"{' '.join(args)}\n{result.stderr[-3000:]}")
    # What each step promises is there.
    self.assertTrue(os.path.isfile(f"{pv}/vocab.txt"))
    with open(f"{pv}/mlm_s0/onset.jsonl", encoding="utf-8") as f:
      self.assertIn("onset_attn_next_max", json.loads(f.readline()))
    self.assertGreater(os.path.getsize(f"{pv}/onset.png"), 1000)
    self.assertTrue(os.path.isfile(f"{pv}/mlm_s0/export/encoder_config.json"))
    self.assertTrue(glob.glob(f"{pv}/eval/mlm_s0/blimp_pll/*"))
    with open(f"{pv}/eval/mlm_s0/probes.json", encoding="utf-8") as f:
      probes = json.load(f)
    self.assertTrue(any("pos" in key for key in json.dumps(probes).split('"')), probes)
    self.assertTrue(os.path.isfile(f"{pv}/eval/mlm_s0/sst2/eval_results.json"))

    # The README's script command, only the size flags appended (the last value wins) and
    # `--shared_data` pointing at the slices.
    command = readme_pretraining_value_command()
    self.assertEqual(command[:2], ["python", "benchmarks/pretraining_value.py"])
    args = ([sys.executable, command[1]] + [a.replace("/tmp/pv", pv) for a in command[2:]]
            + [f"--shared_data={data}", "--vocab_size=600", "--train_flops_budget=3e10",
               "--methods=mlm", "--sst2_train_examples=100", "--max_eval_batches=2"])
    result = tool_server.run(args, cwd=testutil.REPO, timeout=1800)
    self.assertEqual(result.returncode, 0, f"{' '.join(args)}\n{result.stdout[-3000:]}"
                                           f"\n{result.stderr[-3000:]}")
    self.assertNotIn("start build_vocab", result.stdout)  # the steps' outputs are reused
    self.assertNotIn("start mlm_s0 (", result.stdout)
    self.assertNotIn("mlm_random held-out", result.stdout)  # written by its own 1-step run
    for run in ("mlm_s0", "mlm_random"):
      self.assertTrue(os.path.isfile(f"{pv}/{run}/export/encoder_config.json"), run)
      self.assertTrue(os.path.isfile(f"{pv}/eval/{run}/sst2/eval_results.json"), run)
      self.assertTrue(os.path.isfile(f"{pv}/eval/{run}/context.json"), run)
      self.assertTrue(os.path.isfile(f"{pv}/{run}/eval_results.jsonl"), run)
    self.assertTrue(os.path.isfile(f"{pv}/eval/mlm_s0/ud/eval_results.json"))
    self.assertTrue(os.path.isfile(f"{pv}/eval/mlm_s0/cola/eval_results.json"))
    self.assertIn("UD EWT fine-tuned (LAS)", result.stdout)
    self.assertIn("mlm", result.stdout)


if __name__ == "__main__":
  tf.test.main()
