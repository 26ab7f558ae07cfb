"""The collapse warning (issue 72): one line when the discriminator predicts one class on nearly
every token for a stretch of steps while replacements exist; none for a healthy run."""
import os
import re
import tempfile

import gin
import tensorflow as tf

from official_rtd.methods import electra
from official_rtd.methods import script
from official_rtd.training import collapse_monitor
from official_rtd.training import reporting
from tests import testutil
from tests.methods import test_electra
from tests.training import test_trainer


def row(step, original, replaced, replaced_fraction=0.9, auc=0.55):
  return {"step": step, "rtd_accuracy_original": original, "rtd_accuracy_replaced": replaced,
          "replaced_fraction": replaced_fraction, "rtd_auc": auc}


class CollapseMonitorTest(tf.test.TestCase):

  def test_a_stretch_of_one_class_warns_once(self):
    lines = []
    monitor = collapse_monitor.CollapseMonitor(lines.append, min_steps=300)
    monitor("train", row(100, 0.95, 0.10))  # still learning
    monitor("train", row(200, 1.0, 0.0))
    monitor("train", row(300, 0.999, 0.004))
    monitor("eval", row(350, 1.0, 0.0))  # only training rows count
    self.assertEqual(lines, [])  # steps 101-300 collapsed (a row holds the means since the last)
    monitor("train", row(400, 1.0, 0.002, auc=0.541))
    self.assertLen(lines, 1)
    self.assertStartsWith(lines[0], "WARNING: the discriminator has collapsed onto 'original' "
                          "from step 100 to 400: accuracy 1.000 on original and 0.002 on "
                          "replaced tokens, AUC 0.541, with 90% of the masked tokens replaced")
    self.assertIn(collapse_monitor.REMEDY, lines[0])
    monitor("train", row(600, 1.0, 0.0))
    self.assertLen(lines, 1)  # once

  def test_a_healthy_row_or_no_replacements_breaks_the_stretch(self):
    lines = []
    monitor = collapse_monitor.CollapseMonitor(lines.append, min_steps=250)
    for step, args in ((100, (1.0, 0.0)), (200, (0.97, 0.3)), (300, (1.0, 0.0)),
                       (400, (1.0, 0.0, 0.0)), (500, (1.0, 0.0)), (600, (1.0, 0.0))):
      monitor("train", row(step, *args))
    self.assertEqual(lines, [])  # no stretch of 250 steps: broken at 200 and at 400
    monitor("train", row(700, 1.0, 0.0))
    self.assertLen(lines, 1)
    self.assertIn("from step 400 to 700", lines[0])
    replaced_everywhere = []
    monitor = collapse_monitor.CollapseMonitor(replaced_everywhere.append, min_steps=100)
    monitor("train", row(100, 0.0, 1.0))
    monitor("train", row(200, 0.01, 1.0))
    self.assertIn("collapsed onto 'replaced'", replaced_everywhere[0])
    mlm = collapse_monitor.CollapseMonitor(lines.append, min_steps=0)
    mlm("train", {"step": 100, "mlm_accuracy": 0.3})  # a method without a discriminator
    self.assertLen(lines, 1)

  def test_rows_before_detection_starts_are_not_read(self):
    """A warm-up (RTD from step 300) that looks collapsed warns nothing and does not latch: a
    collapse after the start still warns, from the start on."""
    lines = []
    monitor = collapse_monitor.CollapseMonitor(lines.append, min_steps=200, start_step=300)
    for step in (100, 200, 300):
      monitor("train", row(step, 1.0, 0.0))
    self.assertEqual(lines, [])
    monitor("train", row(400, 1.0, 0.0))
    self.assertEqual(lines, [])  # 100 steps after the start
    monitor("train", row(500, 1.0, 0.0))
    self.assertLen(lines, 1)
    self.assertIn("from step 300 to 500", lines[0])

  def test_a_resumed_run_counts_from_its_checkpoint(self):
    """A run resumed at step 4,000 (the "start" notice): its first row holds the means of steps
    4,001-4,200, so it is not a stretch from step 0 (AMOS's seed 1 warned on that row, "from
    step 0 to 4200", before detection had even started at 3,000)."""
    lines = []
    monitor = collapse_monitor.CollapseMonitor(lines.append, min_steps=1000, start_step=3000)
    monitor("start", {"step": 4000, "train_flops": 8e13})
    for step in (4200, 4400, 4600, 4800):
      monitor("train", row(step, 1.0, 0.0))
    self.assertEqual(lines, [])
    monitor("train", row(5000, 1.0, 0.0))
    self.assertLen(lines, 1)
    self.assertIn("from step 4000 to 5000", lines[0])

  def test_a_runs_log_tells_whether_its_detector_collapsed(self):
    """`logged_collapse` reads the lines a run writes (the reporter's training lines and the
    monitor's warning): None without a detector, ("", 0) before a warning, then its class and
    the stretch's first step."""
    lines = []
    reporter = reporting.Reporter(self.get_temp_dir(), lambda step: 1e9 * step, lines.append)
    reporter.add_listener(collapse_monitor.CollapseMonitor(lines.append, min_steps=200,
                                                           start_step=100))
    writer = tf.summary.create_noop_writer()

    def train_row(step, values):
      reporter.train_row(writer, step, 1000, values, 1e-3, 100.0, 64, 0, 0.1)

    train_row(100, {"mlm_loss": 3.2, "mlm_accuracy": 0.3})
    self.assertIsNone(collapse_monitor.logged_collapse("\n".join(lines)))  # BERT-MLM's lines
    train_row(200, row(200, 1.0, 0.0))
    self.assertEqual(collapse_monitor.logged_collapse("\n".join(lines)), ("", 0))
    train_row(300, row(300, 1.0, 0.0))  # 200 steps from detection's start at 100: it warns
    self.assertEqual(collapse_monitor.logged_collapse("\n".join(lines)), ("original", 100))
    critic = "step 200/1000 critic_accuracy_original=0.9 critic_accuracy_replaced=0.3"
    self.assertEqual(collapse_monitor.logged_collapse(critic), ("", 0))  # SCRIPT's critic

  def test_scripts_critic_is_watched_too(self):
    """SCRIPT logs its critic's accuracies apart (`critic_`): a collapsed critic warns as a
    collapsed ELECTRA discriminator does."""
    lines = []
    monitor = collapse_monitor.CollapseMonitor(lines.append, min_steps=200)
    for step in (100, 200, 300):
      monitor("train", {"step": step, "critic_accuracy_original": 1.0,
                        "critic_accuracy_replaced": 0.0, "replaced_fraction": 0.99,
                        "critic_auc": 0.55})
    self.assertLen(lines, 1)
    self.assertStartsWith(lines[0], "WARNING: the discriminator has collapsed onto 'original' "
                          "from step 0 to 200: accuracy 1.000 on original and 0.000 on "
                          "replaced tokens, AUC 0.550")
    model = script.build_script_pretrainer(test_electra.CONFIG)
    self.assertIs(collapse_monitor.remedy_for(model), collapse_monitor.REMEDY_OTHER_METHOD)
    self.assertContainsSubset({"critic_accuracy_original", "critic_accuracy_replaced"},
                              set(model.build_metrics()))

  def test_the_advice_fits_the_run_and_names_files_that_exist(self):
    """A run with the masked-LM warm-up is not told to use it; every file named exists."""
    with_warmup = electra.build_electra_pretrainer(
        test_electra.CONFIG, rtd_start_step=3, discriminator_mlm_weight=1.0, masked_warmup=True)
    self.assertIs(collapse_monitor.remedy_for(with_warmup), collapse_monitor.REMEDY_WITH_WARMUP)
    self.assertIs(collapse_monitor.remedy_for(electra.build_electra_pretrainer(
        test_electra.CONFIG)), collapse_monitor.REMEDY)
    self.assertIn("already", collapse_monitor.REMEDY_WITH_WARMUP)
    # SCRIPT with its own warm-up (gin/recipes/script_warmup.gin) is not told it has none.
    own = collapse_monitor.remedy_for(
        script.build_script_pretrainer(test_electra.CONFIG, critic_start_step=3000))
    self.assertStartsWith(own, "this run's detector already started after a masked-LM warm-up "
                               "of its own (build_script_pretrainer.critic_start_step = 3000)")
    self.assertNotIn("takes no masked-LM warm-up", own)
    for remedy in (collapse_monitor.REMEDY, collapse_monitor.REMEDY_WITH_WARMUP,
                   collapse_monitor.REMEDY_OTHER_METHOD, own):
      paths = re.findall(r"gin/\S+?\.gin", remedy)
      self.assertNotEmpty(paths)
      for path in paths:
        self.assertTrue(os.path.isfile(os.path.join(testutil.REPO, path)), path)

  def test_a_collapsed_run_warns_and_a_healthy_one_does_not(self):
    """Tiny runs: a unigram generator's replacements need the context, which this discriminator
    does not find, so it settles at the prior ("original" everywhere); a uniform generator's are
    told by the token alone, and it learns them."""
    tmp = tempfile.mkdtemp()
    records = test_trainer.make_records(os.path.join(tmp, "records"), paragraphs=200)
    warnings = {}
    for distribution in ("unigram", "uniform"):
      gin.clear_config()
      gin.parse_config(["pretraining_model.method = 'electra_noise_generator'",
                        f"build_noise_generator_electra.distribution = '{distribution}'"])
      trainer, logged = test_trainer.text_trainer(os.path.join(tmp, distribution), records, None,
                                                  steps=200, log_every_steps=50)
      self.assertTrue(any(isinstance(listener, collapse_monitor.CollapseMonitor)
                          for listener in trainer.reporter.listeners))  # every run has one
      warnings[distribution] = []
      trainer.reporter.add_listener(collapse_monitor.CollapseMonitor(
          warnings[distribution].append, min_steps=100))  # the run's own waits 1,000 steps
      trainer.train()
      last = logged[-1]
      if distribution == "unigram":
        self.assertGreater(last["rtd_accuracy_original"], 0.98)
        self.assertLess(last["rtd_accuracy_replaced"], 0.02)
      else:
        self.assertGreater(last["rtd_accuracy_replaced"], 0.5)
        self.assertGreater(last["rtd_auc"], 0.9)
    self.assertLen(warnings["unigram"], 1)
    self.assertIn("collapsed onto 'original'", warnings["unigram"][0])
    self.assertEqual(warnings["uniform"], [])


if __name__ == "__main__":
  tf.test.main()
