"""BAM multi-task fine-tuning and distillation: task sampling, masked losses, soft targets, the
λ schedule, teacher files, and end to end (teacher → student, resume of a killed run,
single-task fine-tuning from the multi-task model) on real GLUE rows with a tiny encoder."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import glue
from official_rtd.finetune import glue_data
from official_rtd.finetune import multitask
from official_rtd.finetune import runner as runner_lib
from official_rtd.training import export
from tests import testutil
from tests.finetune.test_glue import GLUE, head_of
from tests.finetune.test_squad import write_export

RTE, STSB = glue_data.get_task("rte"), glue_data.get_task("sts-b")


class LossesTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.model = multitask.MultiTaskClassifier(
        export.load_encoder(write_export(os.path.join(tempfile.mkdtemp(), "e"))), [RTE, STSB],
        dropout_rate=0.0)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, [6, 12]).astype(np.int32)
    self.features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                     "input_type_ids": np.zeros_like(ids)}
    self.outputs = self.model(self.features)

  def test_masked_losses_equal_single_task_losses(self):
    labels = np.array([0, 1, 1, 0, 1, 0])
    one_hot = np.eye(2, dtype=np.float32)[labels]
    rte_only = multitask.multitask_loss(self.outputs, np.zeros(6, np.int32), one_hot,
                                        [RTE, STSB])
    expected = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=self.outputs["rte"]))
    self.assertAllClose(rte_only, expected)
    scores = np.array([0.0, 1.5, 5.0, 2.5, 4.0, 3.0], np.float32)
    targets = np.zeros([6, 2], np.float32)
    targets[:, 0] = scores / 5.0
    sts_only = multitask.multitask_loss(self.outputs, np.ones(6, np.int32), targets, [RTE, STSB])
    self.assertAllClose(sts_only, np.mean((self.outputs["sts-b"].numpy() - scores / 5.0) ** 2))
    self.assertTrue(np.all((self.outputs["sts-b"].numpy() > 0) & (self.outputs["sts-b"] < 1)))
    # A mixed batch: each example contributes its own task's loss, summed and divided by 6.
    mixed_ids = np.array([0, 1, 0, 1, 0, 1], np.int32)
    mixed_targets = np.where(mixed_ids[:, None] == 0, one_hot, targets)
    per_example = np.where(
        mixed_ids == 0,
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                       logits=self.outputs["rte"]).numpy(),
        (self.outputs["sts-b"].numpy() - scores / 5.0) ** 2)
    self.assertAllClose(multitask.multitask_loss(self.outputs, mixed_ids, mixed_targets,
                                                 [RTE, STSB]), per_example.mean())

  def test_soft_target_loss_by_hand(self):
    logits = np.array([[1.0, 2.0]], np.float32)
    gold = np.array([[1.0, 0.0]], np.float32)
    teacher = np.array([[0.2, 0.8]], np.float32)
    target = distillation.soft_targets(gold, teacher, np.array([1.0], np.float32), 0.25)
    self.assertAllClose(target, [[0.25 + 0.75 * 0.2, 0.75 * 0.8]])  # [0.4, 0.6]
    log_p = np.log(np.exp(logits) / np.exp(logits).sum())
    hand = -(0.4 * log_p[0, 0] + 0.6 * log_p[0, 1])  # = 0.4·1.3133 + 0.6·0.3133 = 0.7133
    self.assertAllClose(hand, 0.7132616, atol=1e-6)
    loss = multitask.multitask_loss({"rte": logits, "sts-b": np.zeros([1], np.float32)},
                                    np.zeros(1, np.int32), target, [RTE, STSB])
    self.assertAllClose(loss, hand)
    # Without a teacher the target is the gold label whatever λ is.
    self.assertAllClose(distillation.soft_targets(gold, teacher, np.array([0.0], np.float32),
                                                  0.25), gold)


class ScheduleAndSamplingTest(tf.test.TestCase):

  def test_lambda_schedule(self):
    linear = distillation.annealing_schedule("linear", 0.0)
    self.assertAllClose([linear(p) for p in (0.0, 0.5, 1.0)], [0.0, 0.5, 1.0])
    fixed = distillation.annealing_schedule("fixed", 0.5)
    self.assertAllClose([fixed(p) for p in (0.0, 1.0)], [0.5, 0.5])
    with self.assertRaisesRegex(ValueError, "--teacher_annealing must be one of"):
      distillation.annealing_schedule("cosine", 0.0)
    with self.assertRaisesRegex(ValueError, r"--lambda=1.5 must be in \[0, 1\]"):
      distillation.annealing_schedule("fixed", 1.5)

  def test_sampling_probabilities(self):
    p = multitask.sampling_probabilities([100, 1600], 0.75)
    self.assertAllClose(p, [100 ** 0.75, 1600 ** 0.75] / np.sum([100 ** 0.75, 1600 ** 0.75]))
    self.assertAllClose(p, [1 / 9, 8 / 9])  # 1600^.75 / 100^.75 = 16^.75 = 8
    self.assertAllClose(multitask.sampling_probabilities([100, 1600], 0.0), [0.5, 0.5])
    self.assertAllClose(multitask.sampling_probabilities([100, 1600], 1.0), [1 / 17, 16 / 17])

  def test_teacher_paths(self):
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "mrpc"))
    paths = distillation.teacher_paths(["rte", "mrpc", "cola"], "rte:/t/rte_run", root)
    self.assertEqual(paths, {"rte": "/t/rte_run/train_predictions_rte.json",
                             "mrpc": f"{root}/mrpc/train_predictions_mrpc.json"})
    with self.assertRaisesRegex(ValueError, "holds no folder named after a task"):
      distillation.teacher_paths(["cola"], "", root)
    with self.assertRaisesRegex(ValueError, "not in --tasks"):
      distillation.teacher_paths(["rte"], "cola:/x", "")
    with self.assertRaisesRegex(ValueError, "is not task:dir"):
      distillation.teacher_paths(["rte"], "rte", "")


@testutil.requires(GLUE)
class BamEndToEndTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.export_dir = write_export(os.path.join(cls.tmp, "export"))
    cls.glue = os.path.join(cls.tmp, "glue")
    for folder, train_rows in (("RTE", 48), ("STS-B", 80)):
      os.makedirs(os.path.join(cls.glue, folder))
      head_of(os.path.join(GLUE, folder, "train.tsv"),
              os.path.join(cls.glue, folder, "train.tsv"), train_rows)
      head_of(os.path.join(GLUE, folder, "dev.tsv"), os.path.join(cls.glue, folder, "dev.tsv"),
              24)

  def config(self, model_dir, **kwargs):
    values = dict(init_checkpoint=self.export_dir, model_dir=model_dir, data_dir=self.glue,
                  max_seq_length=32, train_batch_size=16, num_train_epochs=1,
                  log_every_steps=100)
    values.update(kwargs)
    return configs.GlueConfig(**values)

  def test_sampled_task_frequencies(self):
    runner = runner_lib.Runner(self.config(os.path.join(self.tmp, "freq"),
                                           tasks="rte,sts-b"), lambda _: None)
    self.assertEqual(runner.batch_size, 16)
    self.assertEqual(runner.convention, "corrected")  # BAM's lr·α^d
    self.assertEqual((runner.learning_rate, runner.decay), (1e-4, 0.9))
    dataset = runner.task.train_dataset(0, runner.batch_size)
    ids = np.concatenate([b[1]["task_id"].numpy() for b in dataset.take(400)])
    expected = multitask.sampling_probabilities([48, 80], 0.75)
    frequency = np.bincount(ids, minlength=2) / len(ids)
    # 6,400 draws: the standard error of a frequency is below 0.007.
    self.assertAllClose(frequency, expected, atol=0.025)
    tasks = {0: "rte", 1: "sts-b"}
    batch = next(iter(dataset))
    self.assertGreater(len(set(batch[1]["task_id"].numpy().tolist())), 1)  # mixed batches
    for i, task_id in enumerate(batch[1]["task_id"].numpy()):
      gold = batch[1]["gold"][i].numpy()
      if tasks[task_id] == "rte":
        self.assertEqual(gold.sum(), 1.0)
      else:
        self.assertBetween(gold[0], 0.0, 1.0)

  def test_bad_configuration(self):
    with self.assertRaisesRegex(ValueError, "--task_sampling_exponent=-1.0 must be >= 0"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,sts-b",
                                    task_sampling_exponent=-1.0), lambda _: None)
    with self.assertRaisesRegex(ValueError, "holds no eval_results.json"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte", single_task_finetune=self.tmp),
                        lambda _: None)
    with self.assertRaisesRegex(ValueError, "names a task twice"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,rte"), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--double_unordered, --do_predict and --protocol are "
                                "single-task"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,sts-b", do_predict=True),
                        lambda _: None)

  def test_pure_distillation_follows_the_teacher_not_the_labels(self):
    """λ = 0 (Table 3.4's pure distillation): the student learns the teacher's outputs. The
    teacher here says 'not_entailment' with certainty for every RTE example, although about half
    are gold 'entailment', and trains an STS-B head with the student's prediction function."""
    teacher_dir = os.path.join(self.tmp, "certain_teacher")
    os.makedirs(teacher_dir)
    logits = np.tile([[-8.0, 8.0]], [48, 1])  # class 1 = not_entailment
    distillation.write_predictions(os.path.join(teacher_dir, "train_predictions_rte.json"),
                                   "rte", 2, logits, "softmax")
    labels = glue_data.labels_of(glue_data.load_split(os.path.join(self.glue, "RTE"), RTE,
                                                      "train")[0][1])
    self.assertEqual(RTE.labels[1], "not_entailment")
    self.assertBetween(float(np.mean(labels)), 0.3, 0.7)
    mean_probability = {}
    for lam in (0.0, 1.0):
      student_dir = os.path.join(self.tmp, f"student_lambda_{lam}")
      runner_lib.Runner(self.config(student_dir, tasks="rte", teacher_dirs=f"rte:{teacher_dir}",
                                    teacher_annealing="fixed", teacher_lambda=lam,
                                    num_train_epochs=4, learning_rate=2e-3, max_seq_length=16,
                                    eval_batch_size=48, write_train_predictions=True),
                        lambda _: None).run()
      with open(os.path.join(student_dir, "train_predictions_rte.json")) as f:
        probability = distillation.softmax(np.asarray(json.load(f)["predictions"]))[:, 1]
      mean_probability[lam] = float(probability.mean())
    # λ = 0: towards the teacher's certainty; λ = 1 (the gold labels alone): their frequency.
    self.assertGreater(mean_probability[0.0], 0.8)
    self.assertLess(abs(mean_probability[1.0] - np.mean(labels)), 0.15)

  def test_stsb_teacher_shares_the_students_prediction_function_under_bam_protocol(self):
    warnings = {}
    for protocol in ("electra", "bam"):
      teacher_dir = os.path.join(self.tmp, f"stsb_{protocol}")
      single = runner_lib.Runner(self.config(teacher_dir, task="sts-b", protocol=protocol,
                                             data_dir=os.path.join(self.glue, "STS-B"),
                                             num_train_epochs=None if protocol == "bam" else 1,
                                             write_train_predictions=True,
                                             max_train_examples=32), lambda _: None)
      if protocol == "bam":  # §3.3's single-task settings
        self.assertEqual((single.learning_rate, single.decay, single.convention, single.epochs),
                         (5e-5, 0.9, "corrected", 3))
      single.run()
      with open(os.path.join(teacher_dir, "train_predictions_sts-b.json")) as f:
        teacher = json.load(f)
      self.assertEqual(teacher["prediction_function"],
                       "sigmoid" if protocol == "bam" else "linear")
      if protocol == "bam":
        self.assertTrue(all(0.0 < v < 5.0 for v in teacher["predictions"]))
      logs = []
      runner_lib.Runner(self.config(self.tmp, tasks="rte,sts-b",
                                    teacher_dirs=f"sts-b:{teacher_dir}"), logs.append)
      warnings[protocol] = [l for l in logs if "born-again teachers share" in l]
    self.assertLen(warnings["electra"], 1)
    self.assertIn("its sts-b head is linear", warnings["electra"][0])
    self.assertEmpty(warnings["bam"])

  def test_teacher_student_resume_and_single_task_finetune(self):
    # Teacher: a single-task run_glue that writes its training-set predictions.
    teacher_dir = os.path.join(self.tmp, "teachers", "rte")
    runner_lib.Runner(self.config(teacher_dir, task="rte", data_dir=os.path.join(self.glue, "RTE"),
                                  write_train_predictions=True, num_trials=2),
                      lambda _: None).run()
    teacher_file = os.path.join(teacher_dir, "train_predictions_rte.json")
    with open(teacher_file) as f:
      teacher = json.load(f)
    self.assertEqual((teacher["num_examples"], teacher["num_classes"]), (48, 2))
    self.assertEqual(np.asarray(teacher["predictions"]).shape, (48, 2))
    # A student with the wrong training set is refused before training, naming the file.
    bad = os.path.join(self.tmp, "bad_teacher")
    os.makedirs(bad)
    distillation.write_predictions(os.path.join(bad, "train_predictions_rte.json"), "rte", 2,
                                   np.zeros([47, 2]), "softmax")
    with self.assertRaisesRegex(
        ValueError, "bad_teacher/train_predictions_rte.json does not match.*47 predictions but "
                    "the rte training set has 48"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,sts-b",
                                    teacher_dirs=f"rte:{bad}"), lambda _: None)
    distillation.write_predictions(os.path.join(bad, "train_predictions_rte.json"), "rte", 3,
                                   np.zeros([48, 3]), "softmax")
    with self.assertRaisesRegex(ValueError, "label space has 3 classes but rte has 2"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,sts-b",
                                    teacher_dirs=f"rte:{bad}"), lambda _: None)
    # Student: Single→Multi with teacher annealing, killed after step 3 and resumed at step 2.
    student_dir = os.path.join(self.tmp, "student")
    config = self.config(student_dir, tasks="rte,sts-b",
                         teachers_from=os.path.join(self.tmp, "teachers"),
                         save_checkpoints_steps=2, log_every_steps=1, eval_every_steps=4,
                         write_train_predictions=True)

    def killing_log(line):
      if " step 3/" in line:
        raise KeyboardInterrupt

    runner = runner_lib.Runner(config, killing_log)
    self.assertEqual(sorted(runner.task.teachers), ["rte"])
    self.assertEqual(runner.steps, 8)  # (48 + 80) / 16, 1 epoch
    with self.assertRaises(KeyboardInterrupt):
      runner.run()
    self.assertTrue(os.path.isdir(os.path.join(student_dir, "trial_0", "checkpoint")))
    logs = []
    summary = runner_lib.Runner(config, logs.append).run()
    self.assertTrue(any("resuming at step 2" in line for line in logs), logs)
    self.assertFalse(os.path.exists(os.path.join(student_dir, "trial_0", "checkpoint")))
    self.assertEqual(summary["tasks"], ["rte", "sts-b"])
    self.assertEqual(summary["teachers"], ["rte"])
    dev = summary["trials"][0]["dev"]
    self.assertBetween(dev["rte"]["accuracy"], 0.0, 1.0)
    self.assertIn("spearman", dev["sts-b"])
    primaries = [dev["rte"]["accuracy"], dev["sts-b"]["spearman"]]
    self.assertAllClose(dev["glue"]["average"], 100 * np.mean(primaries))
    self.assertEqual([point["step"] for point in summary["trials"][0]["dev_curve"]], [4])
    # The multi-task run is itself a teacher (Multi→Multi): regression values on the label scale.
    with open(os.path.join(student_dir, "train_predictions_sts-b.json")) as f:
      values = np.asarray(json.load(f)["predictions"])
    self.assertEqual(values.shape, (80,))
    self.assertTrue(np.all((values >= 0) & (values <= 5)))
    # Single-task fine-tuning from the multi-task model (Table 3.3): lr 1e-5, weights restored.
    runner = runner_lib.Runner(self.config(os.path.join(self.tmp, "stft"), tasks="rte",
                                           single_task_finetune=student_dir),
                               lambda _: None)
    self.assertEqual(runner.learning_rate, 1e-5)
    restored = runner.task.build_model(export.load_encoder(self.export_dir, restore=False))
    source = multitask.MultiTaskClassifier(export.load_encoder(self.export_dir, restore=False),
                                           [RTE, STSB])
    source(glue.encode(runner.task.all_train["rte"][:1], runner.task.tokenizer, 8))
    tf.train.Checkpoint(model=source).read(runner.task.source_checkpoint).expect_partial()
    self.assertAllClose(restored.heads["rte"].kernel, source.heads["rte"].kernel)
    self.assertAllClose(restored.encoder.trainable_variables[0],
                        source.encoder.trainable_variables[0])
    with self.assertRaisesRegex(ValueError, r"was not trained on \['mrpc'\]"):
      runner_lib.Runner(self.config(self.tmp, tasks="mrpc",
                                    single_task_finetune=student_dir), lambda _: None)


if __name__ == "__main__":
  tf.test.main()
