"""Cross-View Training (dissertation §4.1) and its baselines (§4.3.2), for one or several tasks
sharing the encoder (each task's losses: `task.py`).

Steps alternate: a labeled minibatch of a task picked uniformly at random (its primary module's
loss, labels smoothed by 0.1, dropout 0.5), then an unlabeled minibatch: every task's teacher (the
primary module, no dropout, held fixed) and the student loss of its auxiliary modules with
dropout 0.2 (cvt_text's `unlabeled_keep_prob` 0.8: Table 4.1's "0.5 / 0.8" are keep
probabilities), summed over tasks. `word_dropout` instead trains the primary module on the input
with words replaced by REMOVED (p 0.1); `supervised` skips unlabeled steps. SGD with momentum 0.9
(lazy for the word embeddings' rows, as `cvt_text`'s sparse momentum),
lr 0.5 / (1 + 0.005·√t), gradient clipping 1.0; an exponential moving average (0.998) of the
weights is what is evaluated and exported.
"""
import contextlib
import dataclasses
import functools
from typing import Dict, List

import tensorflow as tf
import tf_keras

from official_rtd.cvt import settings
from official_rtd.utils import checkpoint_files

MODES = settings.MODES
CvtTrainConfig = settings.CvtTrainConfig  # the training settings (TensorFlow-free)


class LearningRate(tf_keras.optimizers.schedules.LearningRateSchedule):
  """lr_t = base / (1 + decay·√t) (t: updates so far), times a linear warm-up over
  `warmup_steps` if any."""

  def __init__(self, config: CvtTrainConfig):
    super().__init__()
    self.config = config

  def __call__(self, step):
    config = self.config
    step = tf.cast(step, tf.float32)
    warmup = (tf.minimum(1.0, (step + 1.0) / config.warmup_steps) if config.warmup_steps
              else 1.0)
    return config.learning_rate * warmup / (1.0 + config.lr_decay * tf.sqrt(step))

  def get_config(self):
    return dataclasses.asdict(self.config)


class LazyMomentumSGD(tf_keras.optimizers.SGD):
  """SGD with momentum whose sparse gradients (the word-embedding rows of a batch) update only
  those rows and their velocities, as `cvt_text`'s TF1 `MomentumOptimizer` did (a sparse apply):
  with the vocabulary covering the unlabeled text (54k words) a dense update of the table and its
  velocity cost more than the rest of a labeled step. For the rows of a batch (duplicates summed),
  m ← μ·m − lr·g and w ← w + m; every other row, and its velocity, is left as it is. Dense
  gradients update as SGD does (same slots, so checkpoints are interchangeable)."""

  def update_step(self, gradient, variable):
    if not isinstance(gradient, tf.IndexedSlices):
      return super().update_step(gradient, variable)
    lr = tf.cast(self.learning_rate, variable.dtype)
    momentum = tf.cast(self.momentum, variable.dtype)
    velocity = self.momentums[self._index_dict[self._var_key(variable)]]
    rows, position = tf.unique(gradient.indices)
    summed = tf.math.unsorted_segment_sum(gradient.values, position, tf.shape(rows)[0])
    new_rows = momentum * tf.gather(velocity, rows) - lr * summed
    velocity.scatter_update(tf.IndexedSlices(new_rows, rows))
    return variable.scatter_add(tf.IndexedSlices(new_rows, rows))


class ExponentialMovingAverage:
  """shadow ← d·shadow + (1 − d)·variable after each update, started at the initial weights,
  with d = min(decay, (1 + n) / (10 + n)) after n updates (TensorFlow's `num_updates` rule, so a
  short run is not dominated by its random initialisation: d reaches 0.998 after ~4,500 steps);
  `swap()` exchanges the averages and the model's weights."""

  def __init__(self, variables: List[tf.Variable], decay: float):
    self.variables = variables
    self.decay = decay
    self.updates = tf.Variable(0.0, trainable=False, name="ema_updates")
    self.shadows = [tf.Variable(v, trainable=False, name=f"ema_{i}")
                    for i, v in enumerate(variables)]

  def update(self):
    decay = tf.minimum(self.decay, (1.0 + self.updates) / (10.0 + self.updates))
    for shadow, variable in zip(self.shadows, self.variables):
      shadow.assign(decay * shadow + (1.0 - decay) * variable)
    self.updates.assign_add(1.0)

  def swap(self):
    for shadow, variable in zip(self.shadows, self.variables):
      value = tf.identity(variable)
      variable.assign(shadow)
      shadow.assign(value)


# Batches of any size and length, traced once.
INPUTS = {"words": tf.TensorSpec([None, None], tf.int32),
          "chars": tf.TensorSpec([None, None, None], tf.int32),
          "lengths": tf.TensorSpec([None], tf.int32)}


def remove_words(inputs, keep, removed_id: int):
  """`inputs` with each word where `keep` (`[batch, time]` bool) is False replaced by the REMOVED
  token (§4.3.2): its word id and its characters (all padding), so neither the word embedding nor
  the character CNN still sees the word."""
  return dict(inputs, words=tf.where(keep, inputs["words"], removed_id),
              chars=tf.where(keep[..., tf.newaxis], inputs["chars"],
                             tf.zeros_like(inputs["chars"])))


class CvtSteps:
  """The compiled labeled, unlabeled and prediction steps of a `CvtModel` and its tasks."""

  def __init__(self, model, tasks: Dict[str, object], config: CvtTrainConfig, removed_id: int):
    self.model, self.tasks, self.config, self.removed_id = model, tasks, config, removed_id
    self.optimizer = LazyMomentumSGD(learning_rate=LearningRate(config), momentum=config.momentum)
    self.ema = None  # created after the model's variables (`start`)
    self._labeled = {name: tf.function(functools.partial(self._labeled_step, name=name),
                                       input_signature=[INPUTS, task.target_spec],
                                       autograph=False)
                     for name, task in tasks.items()}
    self.unlabeled = tf.function(self._unlabeled_step, input_signature=[INPUTS],
                                 autograph=False)
    self._predict = {name: tf.function(functools.partial(self._predict_step, name=name),
                                       input_signature=[INPUTS], autograph=False)
                     for name in tasks}

  def build(self, inputs, targets: Dict[str, tf.Tensor]):
    """Creates every variable (each task's modules, auxiliary ones included) from one small
    batch, then the optimizer's slots and the EMA."""
    states = self.model(inputs, 0.0)
    for name, task in self.tasks.items():
      head = self.model.heads[name]
      task.labeled_loss(head, states, inputs, targets[name], 0.0, 0.0)
      task.student_loss(head, states, inputs, task.teacher(head, states, inputs), 0.0, True)
    self.optimizer.build(self.model.trainable_variables)
    self.ema = ExponentialMovingAverage(self.model.trainable_variables, self.config.ema_decay)

  def _apply(self, tape, loss):
    variables = self.model.trainable_variables
    gradients, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), self.config.clip_norm)
    # Labeled steps leave the auxiliary modules without gradients, unlabeled ones the primary.
    self.optimizer.apply_gradients(
        [(g, v) for g, v in zip(gradients, variables) if g is not None])
    self.ema.update()

  def labeled(self, inputs, targets, name: str):
    """One supervised step on a batch of task `name`; returns the loss."""
    return self._labeled[name](inputs, targets)

  def _labeled_step(self, inputs, targets, name: str):
    with tf.GradientTape() as tape:
      states = self.model(inputs, self.config.labeled_dropout)
      loss = self.tasks[name].labeled_loss(self.model.heads[name], states, inputs, targets,
                                           self.config.labeled_dropout,
                                           self.config.label_smoothing)
    self._apply(tape, loss)
    return loss

  def _unlabeled_step(self, inputs):
    states = self.model(inputs, 0.0)  # the teacher: no dropout, held fixed
    teachers = {name: tf.nest.map_structure(tf.stop_gradient, task.teacher(
        self.model.heads[name], states, inputs)) for name, task in self.tasks.items()}
    cvt = self.config.mode == "cvt"
    student_inputs = inputs
    if not cvt:  # word dropout: the primary module on the input with words REMOVED
      keep = tf.random.uniform(tf.shape(inputs["words"])) >= self.config.word_dropout
      student_inputs = remove_words(inputs, keep, self.removed_id)
    with tf.GradientTape() as tape:
      states = self.model(student_inputs, self.config.unlabeled_dropout)
      loss = tf.add_n([task.student_loss(self.model.heads[name], states, inputs, teachers[name],
                                         self.config.unlabeled_dropout, auxiliary=cvt)
                       for name, task in self.tasks.items()])
      weighted = self.config.unlabeled_loss_weight * loss
    self._apply(tape, weighted)
    return loss

  @contextlib.contextmanager
  def averaged(self):
    """The model holds the EMA weights (the ones evaluated and kept) inside the block."""
    self.ema.swap()
    try:
      yield
    finally:
      self.ema.swap()

  def save_averages(self, model, path: str) -> None:
    """Writes `model` with the EMA weights to `path`."""
    with self.averaged():
      checkpoint_files.write(tf.train.Checkpoint(model=model), path)

  def predict(self, inputs, name: str) -> Dict[str, tf.Tensor]:
    return self._predict[name](inputs)

  def _predict_step(self, inputs, name: str):
    return self.tasks[name].predict(self.model.heads[name], self.model(inputs, 0.0), inputs)
