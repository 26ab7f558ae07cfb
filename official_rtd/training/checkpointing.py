"""A pre-training run's checkpoints: restore (with a one-line diagnosis of what does not fit),
periodic saves, milestones kept for good, the save of an interrupted step, and the rollback of
`TrainConfig.on_nonfinite = "rollback"`.

The checkpoint holds the model, the optimizer (with its step), the train step's state and, with
`ema_decay`, the weight average. Non-chief workers of a multi-worker run save into a scratch
folder of their own (every worker must take part in a save), removed after each save.
"""
import os
import re
import shutil
from typing import Callable, Iterator, List, Optional

import tensorflow as tf

from official_rtd.training.errors import TrainingSetupError
from official_rtd.utils import checkpoint_files

MILESTONES = "milestones"


def keep_milestone(path: str, directory: str) -> str:
  """Hard-links (or copies: across file systems, or on GCS) the files of checkpoint `path` into
  `directory`, where the checkpoint manager's retention never deletes them; returns the new
  prefix."""
  tf.io.gfile.makedirs(directory)
  for name in tf.io.gfile.glob(path + ".*"):
    target = os.path.join(directory, os.path.basename(name))
    if not tf.io.gfile.exists(target):
      try:
        os.link(name, target)
      except OSError:
        tf.io.gfile.copy(name, target)
  return os.path.join(directory, os.path.basename(path))


class Checkpointer:
  """The run's `tf.train.Checkpoint` of `parts` in `model_dir`.

  Args:
    keep_checkpoint_max: checkpoints kept (the oldest are deleted).
    keep_checkpoint_every_steps: > 0: also keep every multiple of this step in `milestones/`.
    worker_id: a non-chief worker's id (None: the chief), whose saves go to a scratch folder.
  """

  def __init__(self, model_dir: str, parts: dict, keep_checkpoint_max: int,
               keep_checkpoint_every_steps: int = 0, worker_id: Optional[int] = None,
               log: Callable[[str], None] = print):
    self.model_dir = model_dir
    self.is_chief = worker_id is None
    self.keep_every = keep_checkpoint_every_steps
    self.log = log
    self.checkpoint = tf.train.Checkpoint(**parts)
    directory = model_dir if self.is_chief else os.path.join(model_dir,
                                                             f".tmp_worker_{worker_id}")
    self.manager = tf.train.CheckpointManager(self.checkpoint, directory,
                                              max_to_keep=keep_checkpoint_max)

  def latest(self) -> Optional[str]:
    """The newest checkpoint of the run whose files exist (`checkpoint_files.latest`)."""
    return checkpoint_files.latest(self.model_dir)

  def restore_latest(self) -> Optional[str]:
    """Restores the latest checkpoint, if any, and returns it.

    Raises:
      TrainingSetupError: it is damaged (naming the newest intact one) or does not fit the model
        (another size or method); nothing is written.
    """
    latest = self.latest()
    if not latest:
      return None
    try:
      with checkpoint_files.quiet_restore_warnings():
        self.checkpoint.restore(latest).assert_consumed()
    except (AssertionError, ValueError, IndexError, tf.errors.OpError) as e:
      raise restore_error(latest, e) from None
    return latest

  def rollback(self) -> Optional[str]:
    """Restores the latest checkpoint (`on_nonfinite = "rollback"`); None when there is none."""
    latest = self.latest()
    if latest:
      self.checkpoint.restore(latest).assert_consumed()
    return latest

  def save(self, step: int) -> None:
    """Saves `step` (and keeps it as a milestone when it is a multiple of
    `keep_checkpoint_every_steps`)."""
    path = checkpoint_files.save(self.manager, step)
    if not self.is_chief:
      shutil.rmtree(self.manager.directory, ignore_errors=True)
      return
    self.log(f"saved checkpoint {path}")
    if self.keep_every and step % self.keep_every == 0:
      self.log(f"kept milestone {keep_milestone(path, os.path.join(self.model_dir, MILESTONES))}")

  def save_on_interrupt(self, step: int, weights_finite: Callable[[], bool],
                        multi_worker: bool = False) -> None:
    """Writes a checkpoint of the last finished step (unless one exists, or a weight is not
    finite), so an interrupted or preempted run loses no step; one process only (under
    MultiWorkerMirrored every worker must take part in a save)."""
    latest = self.latest()
    if step == 0 or (latest and latest.endswith(f"-{step}")) or multi_worker:
      return
    if not weights_finite():
      self.log(f"interrupted at step {step}: not saved (non-finite weights); the last checkpoint "
               f"is {latest}")
      return
    self.save(step)
    self.log(f"interrupted at step {step}: saved that step; re-run the same command to resume")

  def evaluation_paths(self, all_checkpoints: bool = False) -> List[str]:
    """The latest checkpoint, or every one kept with the milestones, in step order, each once."""
    state = tf.train.get_checkpoint_state(self.model_dir)
    paths = list(state.all_model_checkpoint_paths) if state else []
    if all_checkpoints:
      kept = {os.path.basename(p) for p in paths}
      milestones = [p[:-len(".index")] for p in tf.io.gfile.glob(
          os.path.join(self.model_dir, MILESTONES, "ckpt-*.index"))]
      paths += [p for p in milestones if os.path.basename(p) not in kept]
      paths.sort(key=lambda p: int(p.rsplit("-", 1)[1]))
    if not paths:
      raise TrainingSetupError(f"no checkpoint to evaluate in {self.model_dir}")
    return paths if all_checkpoints else paths[-1:]

  def restored_in_turn(self, all_checkpoints: bool = False,
                       log: Optional[Callable[[str], None]] = None) -> Iterator[str]:
    """Restores the latest checkpoint (or every one kept, `evaluation_paths`) into the run's
    objects, yielding each path once restored; with `all_checkpoints`, a damaged one (an
    interrupted save of older code, a truncated copy) is named in `log` (default: the
    checkpointer's) and skipped.

    Raises:
      TrainingSetupError: no checkpoint reads back.
    """
    paths, restored = self.evaluation_paths(all_checkpoints), 0
    for path in paths:
      try:
        with checkpoint_files.quiet_restore_warnings():
          self.checkpoint.restore(path).assert_existing_objects_matched().expect_partial()
      except (AssertionError, ValueError, IndexError, tf.errors.OpError) as e:
        if not all_checkpoints:
          raise restore_error(path, e) from None
        # Diagnosed only on failure: `problem` reads every value once.
        what = checkpoint_files.problem(path) or next(
            (line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        (log or self.log)(f"skipped checkpoint {path}: {what}")
        continue
      restored += 1
      yield path
    if not restored:
      raise TrainingSetupError(f"none of the {len(paths)} checkpoints in {self.model_dir} reads "
                               "back")


def restore_error(path: str, error: BaseException) -> TrainingSetupError:
  """One line for a checkpoint that does not restore: damaged (naming the newest intact one), or
  of another model (other sizes, another method or other method settings than the gin files
  now give)."""
  damaged = checkpoint_files.damaged_message(path)
  if damaged:
    return TrainingSetupError(damaged)
  missing = re.findall(r"tf\.Variable '([^']+)'", str(error))
  detail = (f"this model's {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''} "
            "are not in it" if missing else
            next((line for line in str(error).splitlines() if line.strip()),
                 type(error).__name__)[:300])
  return TrainingSetupError(
      f"{path} does not restore into this model (a run of other sizes, another method or other "
      f"method settings?): {detail}; the directory was left as it is")
