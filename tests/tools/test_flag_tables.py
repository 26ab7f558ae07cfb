"""One command-line convention (`cli.Flags`): flags from a dataclass's fields, and the flag
reference's tables (`docs/flags.md`) generated from them."""
import dataclasses
import os
from typing import List, Optional

from absl import flags
from absl.testing import flagsaver
import tensorflow as tf

from official_rtd.tools import cli
from official_rtd.tools import flag_tables
from tests import testutil


@dataclasses.dataclass(frozen=True)
class ToyConfig:
  name: str
  files: tuple = ()
  sizes: List[str] = dataclasses.field(default_factory=list)
  steps: int = 7
  rate: Optional[float] = None
  fast: bool = True
  mode: str = "a"
  bindings: tuple = ()


TOY = cli.Flags(ToyConfig, {"name": "A name.", "files": "Files.", "sizes": "Sizes.",
                            "steps": "Steps.", "rate": "Rate.", "fast": "Fast.", "mode": "Mode.",
                            "bindings": "Bindings."},
                enums={"mode": ["a", "b"]}, ranges={"steps": (1, None, True)},
                renamed={"old_steps": "steps"}, whole=("bindings",))


class FlagsTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    TOY.define()

  def parse(self, *args):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["toy", *args])
    cli.apply_renamed_flags("toy")
    return TOY.values()

  @flagsaver.flagsaver
  def test_types_defaults_and_lists_come_from_the_dataclass(self):
    kinds = {f.name: (f.kind, f.default, f.required) for f in TOY.flags()}
    self.assertEqual(kinds, {"name": ("str", None, True), "files": ("multi", None, False),
                             "sizes": ("list", None, False), "steps": ("int", 7, False),
                             "rate": ("float", None, False), "fast": ("bool", True, False),
                             "mode": ("enum", "a", False), "bindings": ("multi", None, False)})
    self.assertEqual(self.parse("--name=x"), ToyConfig(name="x"))
    config = self.parse("--name=x", "--files=a,b", "--files=c", "--sizes=1,2", "--nofast",
                        "--rate=0.5", "--mode=b", "--old_steps=3")
    self.assertEqual(config, ToyConfig(name="x", files=("a", "b", "c"), sizes=("1", "2"),
                                       steps=3, rate=0.5, fast=False, mode="b"))
    # A repeatable flag kept whole: a gin binding's value holds commas.
    phases = "TrainConfig.phases = ({'start_step': 9, 'max_seq_length': 512},)"
    config = self.parse("--name=x", f"--bindings={phases}", "--bindings=A.b = (1, 2)")
    self.assertEqual(config.bindings, (phases, "A.b = (1, 2)"))

  def test_run_pretraining_keeps_gin_bindings_whole(self):
    from official_rtd.tools import run_pretraining  # pylint: disable=g-import-not-at-top
    self.assertIn("gin_param", run_pretraining.COMMAND_LINE.whole)

  @flagsaver.flagsaver
  def test_required_and_ranges_are_refused_by_name(self):
    with self.assertRaisesRegex(ValueError, "--name is required"):
      self.parse()
    with self.assertRaisesRegex(ValueError, "--steps=0 must be >= 1"):
      self.parse("--name=x", "--steps=0")

  def test_help_lists_each_flag_with_its_default(self):
    text = TOY.help_text()
    self.assertIn("  --steps: Steps. (>= 1)\n    (default: 7)", text)
    self.assertIn("  --[no]fast: Fast.\n    (default: true)", text)
    self.assertIn("  --name: A name.\n    (required)", text)
    self.assertIn("--old_steps: deprecated name of --steps", text)


class ReadmeTablesTest(tf.test.TestCase):

  def test_every_tool_has_one_table_and_they_are_current(self):
    specs = flag_tables.tool_specs(os.path.join(testutil.REPO, "setup.py"))
    with open(os.path.join(testutil.REPO, "docs", "flags.md"), encoding="utf-8") as f:
      reference = f.read()
    marked = [m.group(2) for m in flag_tables.BLOCK.finditer(reference)]
    self.assertCountEqual(marked, specs)  # each console script once
    self.assertEqual(flag_tables.render(reference, specs), reference,
                     "docs/flags.md's tables are stale: python -m official_rtd.tools.flag_tables "
                     "docs/flags.md")
    for tool, spec in specs.items():  # a tool's flags are its dataclass's fields
      fields = {f.name for f in dataclasses.fields(spec.config)}
      self.assertEqual(fields, set(spec.help), tool)

  def test_a_stale_table_is_rewritten(self):
    text = "x\n<!-- flags: toy -->\n| old |\n<!-- /flags -->\ny"
    rendered = flag_tables.render(text, {"toy": TOY})
    self.assertIn("| `--steps` | `7` | Steps. (>= 1) |", rendered)
    self.assertNotIn("| old |", rendered)
    self.assertTrue(rendered.startswith("x\n<!-- flags: toy -->\n| flag |"))
    with self.assertRaisesRegex(ValueError, "no console script 'nope'"):
      flag_tables.render("<!-- flags: nope -->\n<!-- /flags -->", {})


if __name__ == "__main__":
  tf.test.main()
