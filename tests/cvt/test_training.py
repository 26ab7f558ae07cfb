"""CVT's losses and optimisation pieces against hand computations: KL with a fixed teacher,
label smoothing, the EMA and the learning-rate schedule."""
import numpy as np
import tensorflow as tf

from official_rtd.cvt import data
from official_rtd.cvt import losses
from official_rtd.cvt import model as model_lib
from official_rtd.cvt import tagger
from official_rtd.cvt import task as task_lib
from official_rtd.cvt import training
from tests.cvt.test_encoder import SENTENCE
from tests.cvt.test_encoder import SMALL
from tests.cvt.test_encoder import Tagger


class ToyTagging(task_lib.PerWordTask):
  """A 7-tag task with no data: the contract's model and losses only."""
  primary_metric = "accuracy"
  auxiliary_modules = tagger.AUXILIARY

  def source_words(self, example):
    return example

  def targets(self, example):
    return [0] * len(example)

  num_labels = 7

  def build_head(self, config):
    return tagger.TaggerModules(config.hidden_size, 7, name="toy_modules")

  def predict(self, head, states, inputs):
    return {"tags": tf.argmax(head(states, inputs["lengths"])["primary"], -1)}

  def evaluate(self, rows, path, log):
    return {}


def toy_model():
  tf.random.set_seed(0)
  vocab = data.WordCharVocab.build([SENTENCE + ["zebra"]])
  tasks = {"toy": ToyTagging("toy", None, None)}
  return model_lib.CvtModel(SMALL, len(vocab.words), len(vocab.chars), tasks), tasks, vocab


class LossesTest(tf.test.TestCase):

  def test_kl_by_hand(self):
    teacher = np.log(np.array([[[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]]], np.float32))
    student = np.log(np.array([[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]], np.float32))
    mask = np.array([[1.0, 0.0]], np.float32)  # the second token is padding
    hand = 0.7 * np.log(0.7 / 0.5) + 0.2 * np.log(0.2 / 0.25) + 0.1 * np.log(0.1 / 0.25)
    self.assertAllClose(losses.kl_divergence(teacher, student, mask), hand)
    self.assertAllClose(hand, 0.23553 - 0.04463 - 0.09163, atol=1e-5)  # 0.0993

  def test_label_smoothing_by_hand(self):
    logits = np.array([[[2.0, 0.0, 0.0, 0.0]]], np.float32)
    log_p = logits[0, 0] - np.log(np.exp(logits[0, 0]).sum())
    targets = np.array([0.925, 0.025, 0.025, 0.025])  # (1 − 0.1)·onehot + 0.1 / 4
    self.assertAllClose(losses.smoothed_cross_entropy(logits, np.array([[0]]),
                                                        np.ones([1, 1], np.float32), 0.1),
                        -(targets * log_p).sum())

  def test_word_dropout_removes_the_word_and_its_characters(self):
    model = Tagger()
    vocab = model.vocab
    inputs = data.make_batch([SENTENCE], vocab).inputs()
    removed = vocab.words[data.REMOVED]
    keep = tf.constant([[t != 1 for t in range(len(SENTENCE))]])
    student = training.remove_words(inputs, keep, removed)
    self.assertAllEqual(student["words"][0, 1], removed)
    self.assertAllEqual(student["chars"][0, 1], tf.zeros_like(inputs["chars"][0, 1]))
    self.assertAllEqual(student["chars"][0, 0], inputs["chars"][0, 0])  # kept words untouched
    # The removed word's spelling no longer reaches the model: another word there, removed,
    # gives the same predictions everywhere.
    other = dict(inputs, words=tf.tensor_scatter_nd_update(inputs["words"], [[0, 1]], [1]),
                 chars=tf.tensor_scatter_nd_update(inputs["chars"], [[0, 1, 0]], [3]))
    a = model(training.remove_words(inputs, keep, removed), names=("primary",))
    b = model(training.remove_words(other, keep, removed), names=("primary",))
    self.assertAllClose(a["primary"], b["primary"], atol=1e-6)

  def test_unlabeled_step_holds_the_primary_prediction_fixed(self):
    """The step's loss is eq. 4.1's Σ_j KL(p_θ ‖ p^j_θ) (mean over tokens), computed here in
    numpy from the model's outputs before the step; the primary module never moves, the
    auxiliary modules do."""
    model, tasks, vocab = toy_model()
    inputs = data.make_batch([SENTENCE], vocab).inputs()
    steps = training.CvtSteps(model, tasks, training.CvtTrainConfig(unlabeled_dropout=0.0),
                              vocab.words[data.REMOVED])
    steps.build(inputs, {"toy": np.zeros([1, len(SENTENCE)], np.int32)})
    views = {name: tf.nn.softmax(logits).numpy()[0]
             for name, logits in model.heads["toy"](model(inputs), inputs["lengths"]).items()}
    expected = 0.0
    p = views["primary"]
    for name, q in views.items():
      if name != "primary":
        expected += np.mean(np.sum(p * (np.log(p) - np.log(q)), -1))
    primary = model.heads["toy"].modules["primary"].trainable_variables
    auxiliary = model.heads["toy"].modules["fwd"].trainable_variables
    before = [v.numpy() for v in primary + auxiliary]
    self.assertAllClose(steps.unlabeled(inputs), expected, rtol=1e-5)
    for old, variable in zip(before[:len(primary)], primary):
      self.assertAllEqual(old, variable.numpy())  # an unlabeled step never moves the primary
    self.assertTrue(any(np.abs(old - variable.numpy()).max() > 0
                        for old, variable in zip(before[len(primary):], auxiliary)))
    self.assertEqual(int(steps.optimizer.iterations), 1)

  def test_the_teacher_is_the_full_view_without_dropout_or_gradient(self):
    """Issue 73: with the students' dropout on (0.5) and L_CVT weighted (0.5), the targets are
    still a numpy softmax of the primary module's logits computed without dropout, twice the same
    (no dropout in the teacher), and no gradient of the weighted L_CVT reaches the primary
    module; the auxiliary modules' gradients are the unweighted ones times the weight."""
    model, tasks, vocab = toy_model()
    inputs = data.make_batch([SENTENCE], vocab).inputs()
    config = training.CvtTrainConfig(unlabeled_dropout=0.5, unlabeled_loss_weight=0.5)
    steps = training.CvtSteps(model, tasks, config, vocab.words[data.REMOVED])
    steps.build(inputs, {"toy": np.zeros([1, len(SENTENCE)], np.int32)})
    head, task = model.heads["toy"], tasks["toy"]
    logits = head(model(inputs, 0.0), inputs["lengths"], names=("primary",))["primary"].numpy()
    numpy_softmax = np.exp(logits - logits.max(-1, keepdims=True))
    numpy_softmax /= numpy_softmax.sum(-1, keepdims=True)
    for _ in range(2):
      teacher = task.teacher(head, model(inputs, 0.0), inputs)
      self.assertAllClose(tf.nn.softmax(teacher), numpy_softmax, atol=1e-6)
    # A student equal to the teacher has zero loss against these targets: they are the softmax.
    self.assertAllClose(losses.kl_divergence(teacher, np.log(numpy_softmax),
                                             np.ones([1, len(SENTENCE)], np.float32)),
                        0.0, atol=1e-6)
    primary = head.modules["primary"].trainable_variables
    fwd = head.modules["fwd"].trainable_variables
    with tf.GradientTape(persistent=True) as tape:
      tf.random.set_seed(5)
      states = model(inputs, config.unlabeled_dropout)
      loss = task.student_loss(head, states, inputs, teacher, config.unlabeled_dropout, True)
      weighted = config.unlabeled_loss_weight * loss
    self.assertTrue(all(g is None for g in tape.gradient(weighted, primary)))
    for full, scaled in zip(tape.gradient(loss, fwd), tape.gradient(weighted, fwd)):
      self.assertAllClose(0.5 * full, scaled)

  def test_ema_update(self):
    variable = tf.Variable([1.0, 2.0])
    ema = training.ExponentialMovingAverage([variable], 0.9)
    variable.assign([3.0, 2.0])
    ema.update()  # d = min(0.9, 1/10) = 0.1: 0.1·[1, 2] + 0.9·[3, 2]
    self.assertAllClose(ema.shadows[0], [2.8, 2.0])
    variable.assign([4.0, 0.0])
    ema.update()  # d = min(0.9, 2/11): (2/11)·[2.8, 2] + (9/11)·[4, 0]
    self.assertAllClose(ema.shadows[0], [2 / 11 * 2.8 + 9 / 11 * 4, 4 / 11])
    for _ in range(100):  # d reaches the decay: (1 + n) / (10 + n) >= 0.9 from n = 80
      ema.update()
    variable.assign([5.0, 5.0])
    before = ema.shadows[0].numpy()
    ema.update()
    self.assertAllClose(ema.shadows[0], 0.9 * before + 0.1 * np.array([5.0, 5.0]))
    ema.swap()
    self.assertAllClose(variable, 0.9 * before + 0.1 * np.array([5.0, 5.0]))
    ema.swap()
    self.assertAllClose(variable, [5.0, 5.0])

  def test_learning_rate_schedule(self):
    schedule = training.LearningRate(training.CvtTrainConfig())
    self.assertAllClose([schedule(0), schedule(100), schedule(10000)],
                        [0.5, 0.5 / 1.05, 0.5 / 1.5])
    warm = training.LearningRate(training.CvtTrainConfig(warmup_steps=10))
    self.assertAllClose(warm(4), 0.5 * 0.5 / (1 + 0.005 * 2))


if __name__ == "__main__":
  tf.test.main()


class LazyMomentumTest(tf.test.TestCase):

  def test_sparse_rows_and_dense_weights_against_numpy(self):
    """Two steps on a 5-row table (rows 1 and 3 in the first batch, row 1 twice; row 3 in the
    second) and a dense weight: only the batch's rows and their velocities move; a dense weight
    moves as SGD with momentum does (v ← μv − lr·g, w ← w + v)."""
    table = tf.Variable(np.arange(10, dtype=np.float32).reshape(5, 2))
    dense = tf.Variable(np.ones([2], np.float32))
    optimizer = training.LazyMomentumSGD(learning_rate=0.1, momentum=0.9)
    optimizer.build([table, dense])
    grads = [(tf.IndexedSlices(tf.constant([[1., 2.], [3., 4.], [5., 6.]]),
                               tf.constant([1, 3, 1])), tf.constant([0.5, -1.0])),
             (tf.IndexedSlices(tf.constant([[1., 1.]]), tf.constant([3])),
              tf.constant([1.0, 1.0]))]
    w, v = table.numpy().copy(), np.zeros([5, 2], np.float32)
    d, dv = dense.numpy().copy(), np.zeros([2], np.float32)
    for sparse, dense_grad in grads:
      optimizer.apply_gradients([(sparse, table), (dense_grad, dense)])
      summed = {}
      for row, value in zip(sparse.indices.numpy(), sparse.values.numpy()):
        summed[row] = summed.get(row, 0) + value
      for row, value in summed.items():
        v[row] = 0.9 * v[row] - 0.1 * value
        w[row] += v[row]
      dv = 0.9 * dv - 0.1 * dense_grad.numpy()
      d += dv
    self.assertAllClose(table.numpy(), w)
    self.assertAllClose(dense.numpy(), d)
    self.assertAllEqual(table.numpy()[[0, 2, 4]], np.arange(10).reshape(5, 2)[[0, 2, 4]])
    # Row 1 kept its velocity from step 1 through step 2 (lazy): it did not move in step 2.
    self.assertAllClose(optimizer.momentums[0].numpy()[1], -0.1 * np.array([6., 8.]))
