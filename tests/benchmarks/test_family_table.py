"""`benchmarks/family_table.py`: the family's table from kept figures, each member against a
baseline's seeds (issue 86), its cells computed here by hand from the figures written."""
import json
import os
import subprocess
import sys

import tensorflow as tf

from tests import testutil

SCRIPT = os.path.join(testutil.REPO, "benchmarks", "family_table.py")


def write_figures(directory: str, run: str, figures: dict):
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, f"{run}.json"), "w", encoding="utf-8") as f:
    json.dump(figures, f)


class FamilyTableTest(tf.test.TestCase):

  def table(self, *flags):
    return subprocess.run([sys.executable, SCRIPT, *flags], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, cwd=testutil.REPO)

  def test_each_member_is_set_against_the_baselines_seeds(self):
    root = self.create_tempdir().full_path
    family, screen = os.path.join(root, "family"), os.path.join(root, "screen", "mask25")
    for seed, (las, pos) in enumerate([(0.60, 0.80), (0.64, 0.82)]):
      write_figures(family, f"mlm_s{seed}", {"UD EWT fine-tuned (LAS)": las, "probe pos": pos})
    # Below on LAS beyond the spread (0.50 and 0.52 < 0.60), within on POS (0.81 in [0.80, 0.82]).
    for seed, (las, pos) in enumerate([(0.50, 0.81), (0.52, 0.79)]):
      write_figures(family, f"electra_s{seed}", {"UD EWT fine-tuned (LAS)": las, "probe pos": pos,
                                                 "held-out rtd_auc": 0.75 + seed / 100,
                                                 "detector collapse warning": float(seed)})
    write_figures(family, "electra_random", {"UD EWT fine-tuned (LAS)": 0.1})  # not a seed
    # One seed far ahead: no spread to judge by, so no star and nothing counted.
    write_figures(screen, "electra_s2", {"UD EWT fine-tuned (LAS)": 0.90})
    result = self.table(f"--baseline={family}/mlm",
                        f"--members={family}/electra,{screen}/electra")
    self.assertEqual(result.returncode, 0, result.stderr)
    lines = result.stdout.strip().splitlines()
    self.assertLen(lines, 5)
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    rows = {row[0]: dict(zip(header, row)) for row in cells}
    self.assertEqual(list(rows), ["family/mlm (2; the baseline)", "family/electra (2)",
                                  "screen/mask25/electra (1)"])
    baseline = rows["family/mlm (2; the baseline)"]
    self.assertEqual(baseline["`run_parsing` LAS"], "0.620 [0.600, 0.640]")
    self.assertEqual(baseline["POS probe, last layer"], "0.810 [0.800, 0.820]")
    self.assertEqual(baseline["held-out RTD AUC"], "—")
    member = rows["family/electra (2)"]
    self.assertEqual(member["`run_parsing` LAS"], "0.510 [0.500, 0.520] (−0.110*)")
    self.assertEqual(member["POS probe, last layer"], "0.800 [0.790, 0.810] (−0.010)")
    self.assertEqual(member["held-out RTD AUC"], "0.755 [0.750, 0.760]")  # no baseline figure
    self.assertEqual(member["collapse warnings"], "1 of 2")
    self.assertEqual(baseline["collapse warnings"], "—")  # no detector
    self.assertEqual(member["ahead / behind beyond the spread (LAS, POS, UAS, SST-2, CoLA)"],
                     "0 / 1")
    one_seed = rows["screen/mask25/electra (1)"]
    self.assertEqual(one_seed["`run_parsing` LAS"], "0.900 (+0.280)")
    self.assertEqual(one_seed["POS probe, last layer"], "—")
    self.assertEqual(one_seed["ahead / behind beyond the spread (LAS, POS, UAS, SST-2, CoLA)"],
                     "0 / 0")

  def test_missing_or_broken_figures_are_named(self):
    root = self.create_tempdir().full_path
    write_figures(root, "mlm_s0", {"probe pos": 0.8})
    result = self.table(f"--baseline={root}/mlm", f"--members={root}/electra")
    self.assertNotEqual(result.returncode, 0)
    self.assertIn(f"no figures {root}/electra_s<seed>.json", result.stderr)
    with open(os.path.join(root, "electra_s0.json"), "w", encoding="utf-8") as f:
      f.write('{"probe pos": 0.7')
    result = self.table(f"--baseline={root}/mlm", f"--members={root}/electra")
    self.assertNotEqual(result.returncode, 0)
    self.assertIn(f"{root}/electra_s0.json: not a figures file", result.stderr)
    self.assertEqual(result.stdout, "")
    write_figures(root, "electra_s0", {"probe pos": "0.7"})  # a figure that is not a number
    result = self.table(f"--baseline={root}/mlm", f"--members={root}/electra")
    self.assertNotEqual(result.returncode, 0)
    self.assertIn(f"{root}/electra_s0.json: figure 'probe pos' is '0.7', not a number",
                  result.stderr)
    self.assertEqual(result.stdout, "")


if __name__ == "__main__":
  tf.test.main()
