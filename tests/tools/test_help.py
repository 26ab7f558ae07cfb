"""Every console script and script entry point answers `--help` / `-h` with its own flags."""
import ast
import os
import re
import subprocess
import sys

import tensorflow as tf

from official_rtd.tools import cli
from tests import testutil

# Each console script in setup.py and flags it must list (its own and the shared ones it uses).
KEY_FLAGS = {
    "build_vocab": ["input_files", "output_file", "vocab_size", "on_decode_error", "sample_lines",
                    "model_type", "character_coverage", "byte_fallback"],
    "create_pretraining_data": ["input_files", "vocab_file", "output_dir", "dupe_factor",
                                "max_seq_length", "num_workers", "runner", "beam_pipeline_options",
                                "input_tfds", "tfds_data_dir"],
    "run_pretraining": ["gin_file", "gin_param", "input_records", "model_dir",
                        "distribution_strategy", "mixed_precision", "init_checkpoint",
                        "init_checkpoint_allow_missing"],
    "rtd_quickstart": ["output_dir", "num_train_steps"],
    "run_glue": ["task", "data_dir", "init_checkpoint", "model_dir", "num_trials",
                 "layerwise_lr_decay", "mixed_precision", "tasks", "task_data_dirs"],
    "run_squad": ["train_file", "predict_file", "init_checkpoint", "doc_stride", "num_trials"],
    "run_tagging": ["task", "data_dir", "label_column", "tag_scheme", "crf", "window_stride",
                    "num_trials", "layerwise_lr_decay", "write_train_predictions"],
    "run_multiple_choice": ["task", "data_dir", "train_splits", "dev_split", "max_seq_length",
                            "num_trials"],
    "run_parsing": ["data_dir", "decode", "projection_size", "init_checkpoint", "random_init",
                    "num_trials"],
    "run_cvt": ["tasks", "data_dir", "unlabeled_data", "mode", "word_embeddings",
                "train_steps", "num_trials", "train_fraction", "patience", "beam_size",
                "vocab_min_count"],
    "cvt_translate": ["model_dir", "input_file", "output_file", "beam_size"],
    "cvt_predict": ["model_dir", "input_file", "output_file", "task", "input_format"],
    "train_word_vectors": ["input_files", "output_file", "dim", "min_count"],
    "compare_runs": ["model_dirs", "figures"],
    "score_pll": ["run_dir", "input_file", "output_file"],
    "score_pairs": ["run_dir", "pairs", "score", "output_dir", "eval_batch_size"],
    "run_probes": ["init_checkpoint", "pos_data_dir", "glue_data_dir", "random_init_seeds",
                   "output_file"],
    "export_model": ["run_dir", "format", "output_dir", "ema"],
    "import_checkpoint": ["source", "checkpoint", "generator", "vocab_file", "output_dir"],
}


def console_scripts():
  with open(os.path.join(testutil.REPO, "setup.py")) as f:
    return re.findall(r'"(\w+)=official_rtd\.tools\.\w+:run"', f.read())


class HelpTest(tf.test.TestCase):

  def assert_lists_flags(self, args, flags, tool):
    result = subprocess.run(args, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, cwd=testutil.REPO)
    self.assertEqual(result.returncode, 0, result.stderr)
    self.assertStartsWith(result.stdout, f"{tool}: ")
    for flag in flags:
      self.assertRegex(result.stdout, rf"\n  --(\[no\])?{flag}: ", f"{args}: --{flag} missing")
    self.assertNotIn("--helpfull:", result.stdout)  # absl's own flags stay out
    return result.stdout

  def test_every_console_script(self):
    self.assertCountEqual(console_scripts(), KEY_FLAGS)
    for tool, flags in KEY_FLAGS.items():
      self.assert_lists_flags([tool, "--help"], flags, tool)

  def test_no_help_imports_tensorflow(self):
    """Issue 71: `--help` answers at once (0.2 s here, against 5-15 s when it imported
    TensorFlow): no tool imports it, or a task module, to print its flags."""
    with open(os.path.join(testutil.REPO, "setup.py")) as f:
      scripts = re.findall(r'"(\w+)=(official_rtd\.tools\.\w+):run"', f.read())
    self.assertLen(scripts, len(KEY_FLAGS))
    for tool, module in scripts:
      code = (f"import sys\nsys.argv = [{tool!r}, '--help']\n"
              f"import {module} as m\ntry:\n  m.run()\nexcept SystemExit:\n  pass\n"
              "sys.stderr.write('TENSORFLOW' if 'tensorflow' in sys.modules else 'CLEAN')\n")
      result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, cwd=testutil.REPO)
      self.assertStartsWith(result.stdout, f"{tool}: ")
      self.assertTrue(result.stderr.endswith("CLEAN"), f"{tool} --help imports TensorFlow")

  def test_every_tool_quiets_tensorflow_before_importing_it(self):
    """`tools/cli.py` sets TF_CPP_MIN_LOG_LEVEL (unless the user has) at import: every tool
    imports it before anything that imports TensorFlow, so no C++ start-up lines show."""
    with open(os.path.join(testutil.REPO, "setup.py")) as f:
      modules = set(re.findall(r'"\w+=official_rtd\.tools\.(\w+):run"', f.read()))
    self.assertGreater(len(modules), 15)
    for module in sorted(modules):
      path = os.path.join(testutil.REPO, "official_rtd", "tools", f"{module}.py")
      with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
      imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
      first = next(node for node in imports
                   if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                       ("official_rtd", "tensorflow", "tf_keras"))
                   or isinstance(node, ast.Import) and any(
                       a.name.startswith(("official_rtd", "tensorflow", "tf_keras"))
                       for a in node.names))
      self.assertTrue(isinstance(first, ast.ImportFrom) and first.module == "official_rtd.tools"
                      and [a.name for a in first.names] == ["cli"],
                      f"{module}.py imports {ast.unparse(first)} before official_rtd.tools.cli")
    result = subprocess.run(["run_pretraining", "--model_dir=/nonexistent"], capture_output=True,
                            text=True, timeout=300, stdin=subprocess.DEVNULL)
    # The tool's own lines only: a machine with CUDA libraries may add a probe line whatever the
    # log level (`cli.CUDA_PROBE_NOISE`), which is not a start-up line of ours.
    own = [line for line in result.stderr.strip().splitlines()
           if not cli.TF_LOG_LINE.match(line) or not cli.CUDA_PROBE_NOISE.search(line)]
    self.assertEqual(own, ["run_pretraining: error: --gin_file is required"])

  def test_script_entry_points_and_short_option(self):
    for script, tool in (("finetune/run_glue.py", "run_glue"),
                         ("finetune/run_squad.py", "run_squad"),
                         ("finetune/run_tagging.py", "run_tagging"),
                         ("finetune/run_multiple_choice.py", "run_multiple_choice"),
                         ("data_prep/create_pretraining_data.py", "create_pretraining_data"),
                         ("data_prep/build_vocab.py", "build_vocab")):
      out = self.assert_lists_flags([sys.executable, script, "-h"], KEY_FLAGS[tool], tool)
      self.assertIn("(default: ", out)


if __name__ == "__main__":
  tf.test.main()
