"""Cross-View Training (dissertation §4.1) and its baselines (§4.3.2), for one or several tagging
tasks sharing the encoder.

Steps alternate: a labeled minibatch of a task picked uniformly at random (cross-entropy against
labels smoothed by 0.1, on the primary module, dropout 0.5), then an unlabeled minibatch:
  L_CVT = Σ_tasks Σ_j KL(p_θ(y|x) ‖ p^j_θ(y|x)), averaged over tokens,
the primary prediction p_θ computed without dropout and held fixed (stop-gradient), the auxiliary
modules j with dropout 0.2 (cvt_text's `unlabeled_keep_prob` 0.8: Table 4.1's "0.5 / 0.8" are keep
probabilities). `word_dropout` instead trains the primary module on the input with words replaced
by REMOVED (p 0.1); `supervised` skips unlabeled steps. SGD with momentum 0.9, lr
0.5 / (1 + 0.005·√t), gradient clipping 1.0; an exponential moving average (0.998) of the weights
is what is evaluated and exported.
"""
import dataclasses
import functools
from typing import Dict, List

import tensorflow as tf
import tf_keras

MODES = ("cvt", "supervised", "word_dropout")


@dataclasses.dataclass(frozen=True)
class CvtTrainConfig:
  mode: str = "cvt"
  learning_rate: float = 0.5
  lr_decay: float = 0.005
  warmup_steps: int = 0  # the paper's schedule has none; cvt_text ramps over 5,000 steps
  momentum: float = 0.9
  clip_norm: float = 1.0
  label_smoothing: float = 0.1
  labeled_dropout: float = 0.5
  unlabeled_dropout: float = 0.2
  word_dropout: float = 0.1
  ema_decay: float = 0.998

  def __post_init__(self):
    if self.mode not in MODES:
      raise ValueError(f"--mode must be one of {MODES}, got {self.mode!r}")


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


def smoothed_cross_entropy(logits, tags, mask, smoothing: float) -> tf.Tensor:
  """Mean over real tokens of CE((1 − ε)·onehot(y) + ε/K, softmax(logits)), K the number of
  allowed outputs: a parser's disallowed edges (logits −1e9, `parsing.py`) get no smoothing mass."""
  allowed = tf.cast(logits > -1e8, tf.float32)
  uniform = allowed / tf.reduce_sum(allowed, -1, keepdims=True)
  targets = tf.one_hot(tags, tf.shape(logits)[-1]) * (1.0 - smoothing) + smoothing * uniform
  losses = -tf.reduce_sum(targets * tf.maximum(tf.nn.log_softmax(logits), -1e9), -1)
  return tf.reduce_sum(losses * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def kl_divergence(teacher_logits, student_logits, mask) -> tf.Tensor:
  """Mean over real tokens of KL(p_teacher ‖ p_student); the teacher is held fixed."""
  teacher = tf.stop_gradient(tf.nn.softmax(teacher_logits))
  log_teacher = tf.stop_gradient(tf.nn.log_softmax(teacher_logits))
  losses = tf.reduce_sum(teacher * (log_teacher - tf.nn.log_softmax(student_logits)), -1)
  return tf.reduce_sum(losses * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


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
TAGS = tf.TensorSpec([None, None], tf.int32)


def remove_words(inputs, keep, removed_id: int):
  """`inputs` with each word where `keep` (`[batch, time]` bool) is False replaced by the REMOVED
  token (§4.3.2): its word id and its characters (all padding), so neither the word embedding nor
  the character CNN still sees the word."""
  return dict(inputs, words=tf.where(keep, inputs["words"], removed_id),
              chars=tf.where(keep[..., tf.newaxis], inputs["chars"], tf.zeros_like(inputs["chars"])))


class CvtSteps:
  """The compiled labeled and unlabeled steps of a `CvtTagger`."""

  def __init__(self, model, config: CvtTrainConfig, removed_id: int):
    self.model, self.config, self.removed_id = model, config, removed_id
    self.optimizer = tf_keras.optimizers.SGD(learning_rate=LearningRate(config),
                                             momentum=config.momentum)
    self.ema = None  # created after the model's variables (`start`)
    self._labeled = {task: tf.function(functools.partial(self._labeled_step, task=task),
                                       input_signature=[INPUTS, TAGS])
                     for task in model.task_names}
    self.unlabeled = tf.function(self._unlabeled_step, input_signature=[INPUTS])
    self.predict = tf.function(self._predict, input_signature=[INPUTS])
    self.primary_logits = tf.function(self._primary_logits, input_signature=[INPUTS])

  def start(self):
    """Creates the optimizer's slots and the EMA once the model's variables exist."""
    if not self.model.trainable_variables:
      raise ValueError("call the model once (to create its variables) before start()")
    self.optimizer.build(self.model.trainable_variables)
    self.ema = ExponentialMovingAverage(self.model.trainable_variables, self.config.ema_decay)

  def _apply(self, tape, loss):
    variables = self.model.trainable_variables
    gradients, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), self.config.clip_norm)
    # Labeled steps leave the auxiliary modules without gradients, unlabeled ones the primary.
    self.optimizer.apply_gradients(
        [(g, v) for g, v in zip(gradients, variables) if g is not None])
    self.ema.update()

  def labeled(self, inputs, tags, task: str):
    """One supervised step on a batch of `task`; returns the loss."""
    return self._labeled[task](inputs, tags)

  def _labeled_step(self, inputs, tags, task: str):
    mask = tf.sequence_mask(inputs["lengths"], tf.shape(tags)[1], tf.float32)
    with tf.GradientTape() as tape:
      logits = self.model(inputs, self.config.labeled_dropout, tasks=[task],
                          auxiliary=False)[task]["primary"]
      loss = smoothed_cross_entropy(logits, tags, mask, self.config.label_smoothing)
    self._apply(tape, loss)
    return loss

  def _unlabeled_step(self, inputs):
    mask = tf.sequence_mask(inputs["lengths"], tf.shape(inputs["words"])[1], tf.float32)
    teacher = self.model(inputs, 0.0, auxiliary=False)  # no dropout, held fixed
    with tf.GradientTape() as tape:
      if self.config.mode == "word_dropout":
        keep = tf.random.uniform(tf.shape(inputs["words"])) >= self.config.word_dropout
        student_inputs = remove_words(inputs, keep, self.removed_id)
        student = self.model(student_inputs, self.config.unlabeled_dropout, auxiliary=False)
        loss = tf.add_n([kl_divergence(teacher[t]["primary"], student[t]["primary"], mask)
                         for t in teacher])
      else:
        student = self.model(inputs, self.config.unlabeled_dropout)
        loss = tf.add_n([kl_divergence(teacher[t]["primary"], student[t][name], mask)
                         for t in teacher for name in student[t] if name != "primary"])
    self._apply(tape, loss)
    return loss

  def _primary_logits(self, inputs) -> Dict[str, tf.Tensor]:
    """Each task's primary module output (no dropout): tag logits, or a parser's edge
    log-probabilities `[batch, time, (time + 1)·relations]`."""
    return {t: v["primary"] for t, v in self.model(inputs, 0.0, auxiliary=False).items()}

  def _predict(self, inputs) -> Dict[str, tf.Tensor]:
    """Each task's primary tag ids `[batch, time]` (no dropout)."""
    return {t: tf.argmax(v["primary"], -1, output_type=tf.int32)
            for t, v in self.model(inputs, 0.0, auxiliary=False).items()}

