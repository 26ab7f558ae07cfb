"""BAM multi-task fine-tuning and distillation: task sampling, masked losses, soft targets, the
λ schedule, teacher files, and end to end (teacher → student, resume of a killed run,
single-task fine-tuning from the multi-task model) on real GLUE rows with a tiny encoder."""
import collections
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from official_rtd.data import glue_data
from official_rtd.data import tagging_data
from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import multihead
from official_rtd.finetune import runner as runner_lib
from official_rtd.finetune import task as task_lib
from official_rtd.finetune.bam import multitask
from official_rtd.finetune.tagging import task as tagging
from official_rtd.interop import export
from tests import testutil
from tests.finetune.glue.test_task import GLUE
from tests.finetune.glue.test_task import head_of
from tests.finetune.squad.test_task import write_export
from tests.finetune.tagging.test_task import first_sentences

RTE = glue_data.get_task("rte")
POS_DIR = os.path.join(testutil.SHARED_DATA, "tagging", "pos_ptb")


def tiny_data(root, train_rows=(48, 80), pos_sentences=(60, 20)):
  """RTE and STS-B heads (train, dev 24 rows) and PTB POS sentences under `root`."""
  for folder, rows in zip(("RTE", "STS-B"), train_rows):
    os.makedirs(os.path.join(root, folder))
    head_of(os.path.join(GLUE, folder, "train.tsv"), os.path.join(root, folder, "train.tsv"),
            rows)
    head_of(os.path.join(GLUE, folder, "dev.tsv"), os.path.join(root, folder, "dev.tsv"), 24)
  os.makedirs(os.path.join(root, "pos_ptb"))
  for name, count in zip(("train.tsv", "dev.tsv"), pos_sentences):
    first_sentences(os.path.join(POS_DIR, name), os.path.join(root, "pos_ptb", name), count)
  return root


@testutil.requires(GLUE)
@testutil.requires(POS_DIR)
class LossesTest(tf.test.TestCase):
  """`multitask_loss` against numpy: masked per-task losses, soft targets, tagging words."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    tmp = tempfile.mkdtemp()
    cls.export = export.Export(write_export(os.path.join(tmp, "e")))
    config = configs.GlueConfig(init_checkpoint=cls.export.path, model_dir=tmp, tasks="rte,sts-b,pos",
                                data_dir=tiny_data(os.path.join(tmp, "data")), max_seq_length=12)
    classes = {n: task_lib.get_multitask(n) for n in ("rte", "sts-b", "pos")}
    cls.members = [c(c.member_config(config, n), cls.export, lambda _: None, name=n)
                   for n, c in classes.items()]

  def setUp(self):
    super().setUp()
    self.model = multihead.MultiTaskModel(self.export.encoder(), self.members, dropout_rate=0.0)
    pos = self.members[2].train_windows
    self.features = {k: v[:6] for k, v in pos.inputs.items()}
    self.outputs = {k: v.numpy() for k, v in self.model(self.features).items()}
    self.labels = np.array([0, 1, 1, 0, 1, 0])
    self.scores = np.array([0.0, 1.5, 5.0, 2.5, 4.0, 3.0], np.float32)
    self.tags = pos.word_labels[:6]

  def targets(self, task_ids, teacher=None, has_teacher=0.0):
    zeros = np.zeros(6, np.float32)
    tags = len(self.members[2].labels)
    return {"task_id": np.asarray(task_ids, np.int32),
            "rte": {"gold": np.eye(2, dtype=np.float32)[self.labels],
                    "teacher": np.zeros([6, 2], np.float32), "has_teacher": zeros},
            "sts-b": {"gold": (self.scores / 5.0)[:, None], "teacher": np.zeros([6, 1], np.float32),
                      "has_teacher": zeros},
            "pos": {"labels": self.tags,
                    "teacher": np.zeros([6, 12, tags], np.float32) if teacher is None else teacher,
                    "has_teacher": zeros + has_teacher}}

  def loss(self, task_ids, lam=1.0, **kwargs):
    return multihead.multitask_loss(self.model, self.outputs, self.features,
                                    self.targets(task_ids, **kwargs), lam)

  def word_losses(self, target_distribution):
    """[6] summed cross-entropy over each window's words, in numpy; and the words."""
    logits = self.outputs["pos"]
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    lengths = self.features["word_lengths"]
    owned = np.arange(12)[None, :] < lengths[:, None]
    return (-(target_distribution * log_p).sum(-1) * owned).sum(-1), lengths

  def test_masked_losses_equal_single_task_losses(self):
    logits = self.outputs["rte"]
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    rte_losses = -log_p[np.arange(6), self.labels]
    self.assertAllClose(self.loss([0] * 6), rte_losses.mean())
    sts = self.outputs["sts-b"]
    self.assertTrue(np.all((sts > 0) & (sts < 1)))
    self.assertAllClose(self.loss([1] * 6), np.mean((sts - self.scores / 5.0) ** 2))
    one_hot = np.eye(len(self.members[2].labels))[np.maximum(self.tags, 0)]
    word_losses, words = self.word_losses(one_hot)
    self.assertAllClose(self.loss([2] * 6), word_losses.sum() / words.sum())  # run_tagging's
    # A mixed batch: each sentence task adds its examples' losses / 6; POS adds its share of the
    # batch (2/6) times its per-word mean.
    ids = np.array([0, 1, 2, 0, 1, 2])
    expected = (rte_losses[ids == 0].sum() / 6
                + ((sts - self.scores / 5.0) ** 2)[ids == 1].sum() / 6
                + 2 / 6 * word_losses[ids == 2].sum() / words[ids == 2].sum())
    self.assertAllClose(self.loss(ids), expected)

  def test_soft_target_loss_by_hand(self):
    logits = np.array([[1.0, 2.0]], np.float32)
    gold = np.array([[1.0, 0.0]], np.float32)
    teacher = np.array([[0.2, 0.8]], np.float32)
    target = distillation.soft_targets(gold, teacher, np.array([1.0], np.float32), 0.25)
    self.assertAllClose(target, [[0.25 + 0.75 * 0.2, 0.75 * 0.8]])  # [0.4, 0.6]
    log_p = np.log(np.exp(logits) / np.exp(logits).sum())
    hand = -(0.4 * log_p[0, 0] + 0.6 * log_p[0, 1])  # = 0.4·1.3133 + 0.6·0.3133 = 0.7133
    self.assertAllClose(hand, 0.7132616, atol=1e-6)
    losses, _ = self.members[0].example_losses(
        None, logits, {}, {"gold": gold, "teacher": teacher, "has_teacher": np.ones(1, np.float32)},
        0.25)
    self.assertAllClose(losses, [hand])
    # Without a teacher the target is the gold label whatever λ is.
    self.assertAllClose(distillation.soft_targets(gold, teacher, np.array([0.0], np.float32),
                                                  0.25), gold)

  def test_tagging_soft_targets_per_word(self):
    tags = len(self.members[2].labels)
    rng = np.random.default_rng(1)
    teacher = rng.dirichlet(np.ones(tags), [6, 12]).astype(np.float32)
    one_hot = np.eye(tags)[np.maximum(self.tags, 0)]
    word_losses, words = self.word_losses(0.25 * one_hot + 0.75 * teacher)
    self.assertAllClose(self.loss([2] * 6, lam=0.25, teacher=teacher, has_teacher=1.0),
                        word_losses.sum() / words.sum(), rtol=1e-5)


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
    p = multihead.sampling_probabilities([100, 1600], 0.75)
    self.assertAllClose(p, [100 ** 0.75, 1600 ** 0.75] / np.sum([100 ** 0.75, 1600 ** 0.75]))
    self.assertAllClose(p, [1 / 9, 8 / 9])  # 1600^.75 / 100^.75 = 16^.75 = 8
    self.assertAllClose(multihead.sampling_probabilities([100, 1600], 0.0), [0.5, 0.5])
    self.assertAllClose(multihead.sampling_probabilities([100, 1600], 1.0), [1 / 17, 16 / 17])

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
@testutil.requires(POS_DIR)
class BamEndToEndTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.tmp = tempfile.mkdtemp()
    cls.export_dir = write_export(os.path.join(cls.tmp, "export"))
    cls.glue = tiny_data(os.path.join(cls.tmp, "glue"))

  def config(self, model_dir, **kwargs):
    values = dict(init_checkpoint=self.export_dir, model_dir=model_dir, data_dir=self.glue,
                  max_seq_length=32, train_batch_size=16, num_train_epochs=1,
                  log_every_steps=100)
    values.update(kwargs)
    return configs.GlueConfig(**values)

  def distilled_students(self, task, teacher_dir, **kwargs):
    """`(λ, model_dir)` of two students of `teacher_dir` on `task` with λ fixed at 0 (pure
    distillation) and 1 (the gold labels alone), each writing its training-set predictions."""
    for lam in (0.0, 1.0):
      student_dir = os.path.join(self.tmp, f"{task}_student_lambda_{lam}")
      runner_lib.Runner(self.config(student_dir, tasks=task, teacher_dirs=f"{task}:{teacher_dir}",
                                    teacher_annealing="fixed", teacher_lambda=lam,
                                    num_train_epochs=4, learning_rate=2e-3,
                                    write_train_predictions=True, **kwargs),
                        lambda _: None).run()
      yield lam, student_dir

  def test_sampled_task_frequencies(self):
    runner = runner_lib.Runner(self.config(os.path.join(self.tmp, "freq"),
                                           tasks="rte,sts-b"), lambda _: None)
    self.assertEqual(runner.batch_size, 16)
    self.assertEqual(runner.convention, "corrected")  # BAM's lr·α^d
    self.assertEqual((runner.learning_rate, runner.decay), (1e-4, 0.9))
    dataset = runner.task.train_dataset(0, runner.batch_size)
    ids = np.concatenate([b[1]["task_id"].numpy() for b in dataset.take(400)])
    expected = multihead.sampling_probabilities([48, 80], 0.75)
    frequency = np.bincount(ids, minlength=2) / len(ids)
    # 6,400 draws: the standard error of a frequency is below 0.007.
    self.assertAllClose(frequency, expected, atol=0.025)
    tasks = {0: "rte", 1: "sts-b"}
    batch = next(iter(dataset))
    self.assertGreater(len(set(batch[1]["task_id"].numpy().tolist())), 1)  # mixed batches
    for i, task_id in enumerate(batch[1]["task_id"].numpy()):
      rte, sts = batch[1]["rte"]["gold"][i].numpy(), batch[1]["sts-b"]["gold"][i].numpy()
      if tasks[task_id] == "rte":  # its own target set, the other task's zeros
        self.assertEqual((rte.sum(), sts[0]), (1.0, 0.0))
      else:
        self.assertBetween(sts[0], 0.0, 1.0)
        self.assertEqual(rte.sum(), 0.0)

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
    # --task_data_dirs: entries that are not task:dir, or name a task not in --tasks; a tagging
    # task without a folder for its data; a name no member registers.
    with self.assertRaisesRegex(ValueError, "--task_data_dirs entry 'pos' is not task:dir"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,pos", task_data_dirs="pos"),
                        lambda _: None)
    with self.assertRaisesRegex(ValueError, r"--task_data_dirs names \['ner'\], not in --tasks"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,pos", task_data_dirs="ner:/x"),
                        lambda _: None)
    with self.assertRaisesRegex(ValueError, "no data for chunk: .*chunk_conll2000 is not a folder; "
                                "give --task_data_dirs=chunk:DIR"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,chunk"), lambda _: None)
    with self.assertRaisesRegex(ValueError, "--tasks names 'squad', which cannot join a "
                                "multi-task run"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,squad"), lambda _: None)

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
    for lam, student_dir in self.distilled_students("rte", teacher_dir, max_seq_length=16,
                                                    eval_batch_size=48):
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

  def test_tagging_beside_glue_with_a_run_tagging_teacher(self):
    pos_dir = os.path.join(self.glue, "pos_ptb")
    teacher_dir = os.path.join(self.tmp, "pos_teacher")
    runner_lib.Runner(tagging.TaggingConfig(
        task="pos", data_dir=pos_dir, init_checkpoint=self.export_dir, model_dir=teacher_dir,
        max_seq_length=32, train_batch_size=16, num_train_epochs=1, max_train_examples=40,
        allow_unseen_dev_tags=True, write_train_predictions=True), lambda _: None).run()
    sentences = tagging_data.read_conll(os.path.join(pos_dir, "train.tsv"))
    with np.load(os.path.join(teacher_dir, "train_predictions_pos.npz")) as data:
      lengths, logits, labels = data["sentence_lengths"], data["logits"], list(data["labels"])
    # Every training sentence (not only the 40 trained on), one row of tag logits per word.
    self.assertEqual(lengths.tolist(), [len(s.words) for s in sentences])
    self.assertEqual(logits.shape, (sum(lengths), len(labels)))
    summary = runner_lib.Runner(self.config(os.path.join(self.tmp, "rte_pos"), tasks="rte,pos",
                                            teacher_dirs=f"pos:{teacher_dir}",
                                            max_seq_length=32), lambda _: None).run()
    self.assertEqual((summary["primary_metric"], summary["teachers"]), ("tasks.average", ["pos"]))
    dev = summary["trials"][0]["dev"]
    self.assertAllClose(dev["tasks"]["average"],
                        100 * np.mean([dev["rte"]["accuracy"], dev["pos"]["accuracy"]]))
    self.assertAllClose(dev["glue"]["average"], 100 * dev["rte"]["accuracy"])
    # A teacher of other sentences is refused before training, naming its file.
    bad = os.path.join(self.tmp, "bad_pos_teacher")
    os.makedirs(bad)
    tagging.write_teacher_file(os.path.join(bad, "train_predictions_pos.npz"), "pos", labels,
                          [np.zeros([len(s.words), len(labels)]) for s in sentences[:-1]])
    with self.assertRaisesRegex(ValueError, "bad_pos_teacher/train_predictions_pos.npz does not "
                                "match.*holds 59 sentences but the pos training set has 60"):
      runner_lib.Runner(self.config(self.tmp, tasks="rte,pos", teacher_dirs=f"pos:{bad}"),
                        lambda _: None)

  def test_pure_distillation_of_a_tagging_teacher(self):
    """λ = 0 with a teacher that gives every word the training set's rarest tag: the student's
    words follow it; with the gold tags alone (λ = 1) they do not."""
    sentences = tagging_data.read_conll(os.path.join(self.glue, "pos_ptb", "train.tsv"))
    counts = collections.Counter(t for s in sentences for t in s.tags)
    labels = sorted(counts)
    rare = min(labels, key=lambda tag: (counts[tag], tag))
    row = np.where(np.array(labels) == rare, 8.0, 0.0)
    teacher_dir = os.path.join(self.tmp, "rare_tag_teacher")
    os.makedirs(teacher_dir)
    tagging.write_teacher_file(os.path.join(teacher_dir, "train_predictions_pos.npz"), "pos", labels,
                          [np.tile(row, [len(s.words), 1]) for s in sentences])
    share = {}
    for lam, student_dir in self.distilled_students("pos", teacher_dir, max_seq_length=32):
      with np.load(os.path.join(student_dir, "train_predictions_pos.npz")) as data:
        predicted = data["logits"].argmax(-1)
      share[lam] = float(np.mean(predicted == labels.index(rare)))
    self.assertGreater(share[0.0], 0.8)
    self.assertLess(share[1.0], 0.2)

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
    # Student: Single→Multi with teacher annealing, interrupted at step 5 (after its dev
    # evaluation at step 4) and resumed there: the evaluation stays on the trial's dev curve.
    student_dir = os.path.join(self.tmp, "student")
    config = self.config(student_dir, tasks="rte,sts-b",
                         teachers_from=os.path.join(self.tmp, "teachers"),
                         save_checkpoints_steps=2, log_every_steps=1, eval_every_steps=4,
                         write_train_predictions=True)

    def killing_log(line):
      if " step 5/" in line:
        raise KeyboardInterrupt

    runner = runner_lib.Runner(config, killing_log)
    self.assertEqual(runner.task.teachers, ["rte"])
    self.assertEqual(runner.steps, 8)  # (48 + 80) / 16, 1 epoch
    with self.assertRaises(KeyboardInterrupt):
      runner.run()
    self.assertTrue(os.path.isdir(os.path.join(student_dir, "trial_0", "checkpoint")))
    logs = []
    summary = runner_lib.Runner(config, logs.append).run()
    self.assertTrue(any("resuming at step 5" in line for line in logs), logs)  # saved at Ctrl-C
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
    student = runner_lib.Runner(config, lambda _: None).task
    source = multihead.MultiTaskModel(export.load_encoder(self.export_dir, restore=False),
                                      student.members)
    source(student.example_features())
    tf.train.Checkpoint(model=source).read(runner.task.source_checkpoint).expect_partial()
    self.assertAllClose(restored.heads["rte"].kernel, source.heads["rte"].kernel)
    self.assertAllClose(restored.encoder.trainable_variables[0],
                        source.encoder.trainable_variables[0])
    with self.assertRaisesRegex(ValueError, r"was not trained on \['mrpc'\]"):
      runner_lib.Runner(self.config(self.tmp, tasks="mrpc",
                                    single_task_finetune=student_dir), lambda _: None)


if __name__ == "__main__":
  tf.test.main()
