"""BAM: multi-task fine-tuning with born-again distillation and teacher annealing (dissertation
ch. 3), `run_glue --tasks=...`, over any mix of registered `task.Head` tasks (the GLUE tasks in
`glue/task.py`, the tagging tasks in `tagging/task.py`), run by `multihead.HeadsRun`.

One shared encoder and a head per task (softmax(W c) on `[CLS]` for classification; sigmoid(wᵀc)
on labels normalised to [0, 1] for regression, scaled back for Pearson/Spearman; a softmax per
word for tagging). Each example's task is drawn with probability ∝ |D_τ|^`--task_sampling_exponent`
(Bowman et al.); one epoch is Σ_τ |D_τ| examples drawn from the mixture. With teachers
(`distillation.py`) the targets are λ·y + (1 − λ)·f_τ(x, θ_τ).
"""
import os
from typing import Callable, Dict, List, Sequence

import tensorflow as tf

from official_rtd.finetune import configs
from official_rtd.finetune import distillation
from official_rtd.finetune import multihead
from official_rtd.finetune import task as task_lib
from official_rtd.trials import run as trial_run
from official_rtd.utils import checkpoint_files
from official_rtd.utils import textio

# §3.3: batch 128, learning rate 1e-4, layer-wise decay α = 0.9 with layer 0 the closest to the
# output (lr·α^d: the "corrected" convention of layerwise_decay.py), 6 epochs.
BAM_DEFAULTS = {"train_batch_size": 128, "learning_rate": 1e-4, "layerwise_lr_decay": 0.9,
                "lr_decay_convention": "corrected"}
SINGLE_TASK_FINETUNE_LEARNING_RATE = 1e-5  # Table 3.3
MODEL_NAME = "model"


@task_lib.register("bam")
class MultiTask(multihead.HeadsRun):
  """BAM over `--tasks`: every member's data and teacher read once; a trial's model is
  `MultiTaskModel`; with `--single_task_finetune` it starts from a multi-task run's best
  trial."""

  run_name = "MultiTaskRunner"
  default_epochs = configs.MULTI_TASK_EPOCHS  # several tasks; one keeps its own
  help_name = "several --tasks"

  @classmethod
  def optimizer_defaults(cls, config) -> Dict:
    """§3.3's for several tasks (one task keeps the per-size ones); Table 3.3's learning rate
    with `--single_task_finetune`."""
    defaults = dict(BAM_DEFAULTS) if len(task_names(config)) > 1 else {}
    if config.single_task_finetune:
      defaults["learning_rate"] = SINGLE_TASK_FINETUNE_LEARNING_RATE
    return defaults

  def __init__(self, config: configs.GlueConfig, export, log: Callable[[str], None]):
    names = task_names(config)
    classes = [task_lib.get_multitask(n) for n in names]  # unknown names refused before reading
    if config.double_unordered or config.do_predict or config.protocol != "electra":
      raise ValueError("--double_unordered, --do_predict and --protocol are single-task (--task) "
                       "options (multi-task runs follow BAM's §3.3)")
    if config.task_sampling_exponent < 0:
      raise ValueError(f"--task_sampling_exponent={config.task_sampling_exponent} must be >= 0")
    unknown = sorted(set(configs.task_data_dirs(config)) - set(names))
    if unknown:
      raise ValueError(f"--task_data_dirs names {unknown}, not in --tasks {names}")
    self.source_checkpoint = (source_checkpoint(config.single_task_finetune, names)
                              if config.single_task_finetune else "")
    super().__init__(config, export, log,
                     [cls(cls.member_config(config, name), export, log, name=name)
                      for cls, name in zip(classes, names)])
    # One member: that task's own default (GLUE's RTE and STS-B 10 epochs, ...).
    self.default_epochs = (configs.MULTI_TASK_EPOCHS if len(names) > 1
                           else classes[0].epochs_default(names[0]))
    self.primary_metric = ("glue.average" if all(m.family == "glue" for m in self.members)
                           else "tasks.average")
    self.published = ([m.teacher_file for m in self.members]
                      if config.write_train_predictions else [])
    paths = distillation.teacher_paths(names, config.teacher_dirs, config.teachers_from,
                                       {m.name: m.teacher_file for m in self.members})
    for member in self.members:
      if member.name in paths:
        member.read_teacher(paths[member.name])
    self.lam = distillation.annealing_schedule(config.teacher_annealing, config.teacher_lambda)
    self.probabilities = multihead.sampling_probabilities(self.sizes,
                                                          config.task_sampling_exponent)

  @property
  def teachers(self) -> List[str]:
    return sorted(m.name for m in self.members if m.teacher_path)

  def describe(self) -> str:
    mixture = ", ".join(f"{m.name} {n} (p={p:.3f})"
                        for m, n, p in zip(self.members, self.sizes, self.probabilities))
    return (f"run_glue (multi-task): {mixture}; teachers for {self.teachers or 'no task'}"
            f" ({self.config.teacher_annealing} annealing)")

  # --- one trial ---------------------------------------------------------------------------------
  def build_model(self, encoder):
    model = super().build_model(encoder)
    if self.source_checkpoint:  # encoder and our tasks' heads from the multi-task run
      status = tf.train.Checkpoint(model=model).read(self.source_checkpoint)
      status.expect_partial().assert_existing_objects_matched()
    return model

  def evaluate(self, model, trial_dir) -> Dict[str, dict]:
    """`HeadsRun.evaluate`; with `trial_dir`, the model's weights are also written there (what
    `--single_task_finetune` starts from)."""
    dev = super().evaluate(model, trial_dir)
    if trial_dir is not None:
      checkpoint_files.write(tf.train.Checkpoint(model=model),
                             os.path.join(trial_dir, MODEL_NAME))
    return dev

  def summary_fields(self, median):
    names = [m.name for m in self.members]
    return {"tasks": names, "sampling_probabilities": dict(zip(names, self.probabilities.tolist())),
            "teachers": self.teachers}


def source_checkpoint(model_dir: str, names: Sequence[str]) -> str:
  """The best trial's weights of a multi-task run, checked to cover every task of `names`."""
  path = trial_run.summary_path(model_dir)
  if not os.path.isfile(path):
    raise ValueError(f"--single_task_finetune={model_dir} holds no {trial_run.SUMMARY_NAME}"
                     " (a finished multi-task run_glue --tasks=... model_dir)")
  source = textio.load_json(path)
  missing = [name for name in names if name not in source.get("tasks", [])]
  if missing:
    raise ValueError(f"--single_task_finetune={model_dir} was not trained on {missing}")
  return trial_run.trial_dir(model_dir, source["best_trial"], MODEL_NAME)


def task_names(config: configs.GlueConfig) -> List[str]:
  """`--tasks` as a list, checked."""
  names = [n.strip() for n in config.tasks.split(",") if n.strip()]
  if not names or config.task:
    raise ValueError("give --tasks (a comma list) and not --task for multi-task fine-tuning")
  if len(set(names)) != len(names):
    raise ValueError(f"--tasks={config.tasks} names a task twice")
  return names
