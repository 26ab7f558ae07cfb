"""The flag reference's tables (`docs/flags.md`), generated from each tool's `COMMAND_LINE`
(`cli.Flags`, whose dataclass holds every flag's name, type and default): a table sits between
`<!-- flags: TOOL -->` and `<!-- /flags -->`.

  python -m official_rtd.tools.flag_tables docs/flags.md          # rewrite the tables
  python -m official_rtd.tools.flag_tables --check docs/flags.md  # exit 1 if one is stale
"""
import argparse
import importlib
import os
import re
import sys
from typing import Dict

from official_rtd.tools import cli

BLOCK = re.compile(r"(<!-- flags: (\w+) -->\n).*?(<!-- /flags -->)", re.S)
ENTRY_POINT = re.compile(r'"(\w+)=official_rtd\.tools\.(\w+):run"')


def tool_specs(setup_py: str) -> Dict[str, cli.Flags]:
  """`{console script: its cli.Flags}` of every console script in `setup_py`."""
  with open(setup_py, encoding="utf-8") as f:
    entries = ENTRY_POINT.findall(f.read())
  return {tool: importlib.import_module(f"official_rtd.tools.{module}").COMMAND_LINE
          for tool, module in entries}


def table(spec: cli.Flags) -> str:
  """A markdown table: flag, default, meaning (the `--help` text)."""
  lines = ["| flag | default | meaning |", "|---|---|---|"]
  for flag in spec.flags():
    name = f"--[no]{flag.name}" if flag.kind == "bool" else f"--{flag.name}"
    default = "(required)" if flag.required else f"`{cli.shown(flag)}`"
    meaning = flag.help + (f" One of: {', '.join(flag.choices)}." if flag.choices else "")
    lines.append(f"| `{name}` | {default} | {meaning.replace('|', '&#124;')} |")
  for alias, name in spec.aliases.items():
    lines.append(f"| `--{alias}` | | another name of `--{name}` |")
  for old, new in spec.renamed.items():
    lines.append(f"| `--{old}` | | deprecated name of `--{new}` (accepted until the next "
                 "release) |")
  return "\n".join(lines)


def render(text: str, specs: Dict[str, cli.Flags]) -> str:
  """`text` with each marked block's table regenerated.

  Raises:
    ValueError: a block names an unknown tool.
  """
  def replace(match):
    tool = match.group(2)
    if tool not in specs:
      raise ValueError(f"<!-- flags: {tool} -->: no console script {tool!r}")
    return f"{match.group(1)}{table(specs[tool])}\n{match.group(3)}"
  return BLOCK.sub(replace, text)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("readme", help="The markdown file with <!-- flags: TOOL --> blocks.")
  parser.add_argument("--check", action="store_true", help="Exit 1 if a table is stale.")
  parser.add_argument("--setup_py", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                          "setup.py"))
  args = parser.parse_args(argv)
  with open(args.readme, encoding="utf-8") as f:
    text = f.read()
  new = render(text, tool_specs(args.setup_py))
  if args.check:
    if new != text:
      sys.stderr.write(f"{args.readme}: flag tables are stale; run python -m "
                       f"official_rtd.tools.flag_tables {args.readme}\n")
      return 1
    return 0
  if new != text:
    tmp = f"{args.readme}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
      f.write(new)
    os.replace(tmp, args.readme)
  return 0


if __name__ == "__main__":
  sys.exit(main())
