"""CVT's losses, averaged over the real positions of a batch (`mask` `[batch, time]`, 1 at real
positions)."""
import tensorflow as tf


def smoothed_cross_entropy(logits, targets, mask, smoothing: float) -> tf.Tensor:
  """Mean over real positions of CE((1 − ε)·onehot(y) + ε/K, softmax(logits)), K the number of
  allowed outputs: a parser's disallowed edges (logits −1e9, `parser.py`) get no smoothing mass."""
  allowed = tf.cast(logits > -1e8, tf.float32)
  uniform = allowed / tf.reduce_sum(allowed, -1, keepdims=True)
  soft = tf.one_hot(targets, tf.shape(logits)[-1]) * (1.0 - smoothing) + smoothing * uniform
  per_position = -tf.reduce_sum(soft * tf.maximum(tf.nn.log_softmax(logits), -1e9), -1)
  return tf.reduce_sum(per_position * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def kl_divergence(teacher_logits, student_logits, mask) -> tf.Tensor:
  """Mean over real positions of KL(p_teacher ‖ p_student); the teacher is held fixed."""
  teacher = tf.stop_gradient(tf.nn.softmax(teacher_logits))
  log_teacher = tf.stop_gradient(tf.nn.log_softmax(teacher_logits))
  per_position = tf.reduce_sum(teacher * (log_teacher - tf.nn.log_softmax(student_logits)), -1)
  return tf.reduce_sum(per_position * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
