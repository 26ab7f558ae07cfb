"""The README's set-up commands are exactly what CI runs; every link in the README and `docs/`
leads to a file (and heading) that exists; the README stays a front page."""
import glob
import os
import re

import tensorflow as tf

from tests import testutil


class ReadmeTest(tf.test.TestCase):

  def test_ci_runs_the_readme_commands(self):
    with open(os.path.join(testutil.REPO, "README.md"), encoding="utf-8") as f:
      readme = f.read()
    setup = re.search(r"## Set up\s+```bash\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    self.assertLen(setup, 2)
    with open(os.path.join(testutil.REPO, ".ci", "run"), encoding="utf-8") as f:
      ci = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    self.assertEqual(ci[-2:], setup)


  def test_links_lead_somewhere(self):
    pages = [os.path.join(testutil.REPO, "README.md"),
             *sorted(glob.glob(os.path.join(testutil.REPO, "docs", "*.md"))),
             os.path.join(testutil.REPO, "benchmarks", "RESULTS.md"),
             *sorted(glob.glob(os.path.join(testutil.REPO, "benchmarks", "results", "*.md")))]
    self.assertGreater(len(pages), 12)
    for page in pages:
      with open(page, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
      for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
          continue
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        self.assertTrue(os.path.exists(resolved), f"{page}: link {target} leads nowhere")
        if anchor:
          with open(resolved, encoding="utf-8") as f:
            headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                        for h in re.findall(r"^#+ (.*)$", f.read(), re.M)}
          self.assertIn(anchor, headings, f"{page}: link {target}: no such heading")

  def test_results_is_a_headline_table_and_a_contents_list_of_topic_pages(self):
    with open(os.path.join(testutil.REPO, "benchmarks", "RESULTS.md"), encoding="utf-8") as f:
      text = f.read()
    self.assertLessEqual(len(text.splitlines()), 300)
    self.assertIn("## Headline figures", text)
    headline = text[text.index("## Headline figures"):text.index("## Contents by topic")]
    rows = [line for line in headline.splitlines() if line.startswith("| ")]
    self.assertLessEqual(len(rows) - 1, 25, "RESULTS' headline: one row per claim, at most 25")
    topics = glob.glob(os.path.join(testutil.REPO, "benchmarks", "results", "*.md"))
    self.assertGreater(len(topics), 5)
    for page in topics:
      self.assertIn(f"](results/{os.path.basename(page)})", text, page)

  def test_the_readme_is_a_front_page(self):
    with open(os.path.join(testutil.REPO, "README.md"), encoding="utf-8") as f:
      self.assertLessEqual(len(f.read().splitlines()), 250)


if __name__ == "__main__":
  tf.test.main()
