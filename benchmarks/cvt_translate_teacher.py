r"""Translation CVT with its teacher replaced, to find where the unlabeled steps' harm comes from
(issue 73; the fine-tuning results page, "Translation's unlabeled steps diagnosed").

  python benchmarks/cvt_translate_teacher.py --teacher=reference <run_cvt flags>

Runs `run_cvt` (every flag of it) with one change to the unlabeled step:
  --teacher=reference  the auxiliary decoders learn the reference translations of a second
                       stream of labeled batches instead of the teacher's beam output on
                       unlabeled sentences: the same decoders, dropout and gradients as CVT,
                       with correct targets
  --teacher=finished   the teacher's beam output without the hypotheses that never reached
                       `</s>` (cut at --max_decode_length): those teach nothing
"""
from absl import flags
import tensorflow as tf

from official_rtd.tools import run_cvt
from official_rtd.cvt import inputs as inputs_lib
from official_rtd.cvt import training
from official_rtd.cvt import translator

flags.DEFINE_enum("teacher", "reference", ["reference", "finished"],
                  "What the auxiliary decoders learn on an unlabeled step (see the docstring).")
FLAGS = flags.FLAGS


def reference_batches(self, seed: int):
  """(inputs, targets) of labeled batches, in another order than the labeled steps'."""
  for _, batch, targets in self.labeled_batches(10007 + seed):
    yield batch, targets


def steps_learning_references(init):
  def __init__(self, model, tasks, config, removed_id):
    init(self, model, tasks, config, removed_id)
    (name, task), = tasks.items()

    def step(inputs, targets):
      with tf.GradientTape() as tape:
        states = self.model(inputs, self.config.unlabeled_dropout)
        loss = task.student_loss(self.model.heads[name], states, inputs, targets,
                                 self.config.unlabeled_dropout, auxiliary=True)
        weighted = self.config.unlabeled_loss_weight * loss
      self._apply(tape, weighted)
      return loss
    compiled = tf.function(step, input_signature=[training.INPUTS, task.target_spec])
    self.unlabeled = lambda batch: compiled(*batch)
  return __init__


def finished_only(teacher):
  def finished_teacher(self, head, states, inputs):
    out = teacher(self, head, states, inputs)
    unfinished = out["lengths"] >= self.max_decode_length
    return {"targets": out["targets"], "lengths": tf.where(unfinished, 0, out["lengths"])}
  return finished_teacher


def main(config):
  if config.tasks != "translate":
    raise ValueError(f"--tasks={config.tasks}: cvt_translate_teacher replaces translation's "
                     "teacher; give --tasks=translate")
  if FLAGS.teacher == "reference":
    inputs_lib.CvtInputs.unlabeled_batches = reference_batches
    training.CvtSteps.__init__ = steps_learning_references(training.CvtSteps.__init__)
  else:
    translator.TranslationTask.teacher = finished_only(translator.TranslationTask.teacher)
  run_cvt.main(config)


if __name__ == "__main__":
  run_cvt.cli.run_main(main, "cvt_translate_teacher", run_cvt.COMMAND_LINE)
