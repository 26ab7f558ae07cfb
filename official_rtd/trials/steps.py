"""A trial's resumable step loop (`run_steps`, and `train` for a Keras model and a loss), restore of
a checkpoint written under any layout, and batched prediction: shared by fine-tuning and CVT."""
import dataclasses
import time
from typing import Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

from official_rtd.modeling.layers import dropout
from official_rtd.training import periodic
from official_rtd.training import precision
from official_rtd.utils import checkpoint_files
from official_rtd.utils import interruptible
from official_rtd.utils import progress


def train(model, optimizer, dataset, num_steps: int, loss_fn, log: Callable[[str], None],
          log_every_steps: int, label: str, jit_compile: bool = False,
          checkpoint_dir: str = "", save_every_steps: int = 0, callback=None,
          callback_every_steps: int = 0, seed: int = 0,
          older_layouts: Optional[Dict[str, tf.Module]] = None) -> float:
  """Runs `num_steps` steps of `loss_fn(model, batch, progress)` over `dataset` (`progress`: the
  0-based step / (num_steps - 1), a float32 scalar in [0, 1]), logging the running loss
  and an ETA; returns the mean loss of the last 10 steps (of this process). A float16
  `LossScaleOptimizer` (see `training.precision`) gets a scaled loss; `jit_compile` XLA-compiles
  forward and backward.

  With `checkpoint_dir` and `save_every_steps`, model and optimizer are saved there every
  `save_every_steps` steps, and a run that finds a checkpoint resumes from it: the dataset must be
  deterministic (seeded shuffles), so skipping the steps done replays the same batches.
  `callback(step)` runs every `callback_every_steps` steps before the last (e.g. a dev
  evaluation). Dropout masks are drawn from (`seed`, step) (`dropout.step_seeded`), so a resumed
  run ends bit-identical to an uninterrupted one. `older_layouts` (`task.Task.older_layouts`)
  restore a checkpoint that older code wrote under other variable names.
  """

  def forward_backward(batch, step_seed, fraction):
    with tf.GradientTape() as tape, dropout.step_seeded(step_seed):
      loss = loss_fn(model, batch, fraction)
      scaled = precision.scaled(optimizer, loss)
    return loss, precision.unscaled(optimizer, tape.gradient(scaled, model.trainable_variables))

  compute = (tf.function(forward_backward, jit_compile=True, autograph=False) if jit_compile
             else forward_backward)

  @tf.function(autograph=False)
  def train_step(batch, step):
    fraction = tf.cast(step - 1, tf.float32) / max(num_steps - 1, 1)
    loss, grads = compute(batch, tf.stack([tf.constant(seed, tf.int64), step]), fraction)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  def begin(done):
    batches = iter(dataset.skip(done).take(num_steps - done))

    def step(k):
      batch = next(batches)
      loss = float(train_step(batch, tf.constant(k, tf.int64)))
      if not np.isfinite(loss):
        rate = optimizer.learning_rate
        rate = float(rate(k - 1)) if callable(rate) else float(rate)
        raise ValueError(f"{label}: the training loss is {loss} at step {k} (learning rate "
                         f"{rate:.3g}): the trial diverged and was stopped; nothing of it was "
                         "kept as a result. Lower --learning_rate")
      return {"loss": loss}, int(tf.nest.flatten(batch)[0].shape[0])
    return step

  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
  older = {marker: tf.train.Checkpoint(model=view, optimizer=optimizer)
           for marker, view in (older_layouts or {}).items()}
  losses = run_steps(begin, StepLoop(
      num_steps, log, log_every_steps, label, checkpoint, checkpoint_dir, save_every_steps,
      callback, callback_every_steps, older))["loss"]
  return float(np.mean(losses[-10:])) if losses else float("nan")


@dataclasses.dataclass
class StepLoop:
  """How `run_steps` runs a trial's steps: `num_steps` in all, a progress line every
  `log_every_steps` (prefixed with `label`); with `checkpoint_dir` and `save_every_steps`,
  `checkpoint` saved there (and at the last step with `save_at_end`) and restored on a re-run,
  through one of `older_checkpoints` (`{key marker: checkpoint}`) when an older layout wrote it;
  `callback(step)` every `callback_every_steps` steps before the last, ending the loop by returning
  True."""
  num_steps: int
  log: Callable[[str], None]
  log_every_steps: int
  label: str
  checkpoint: Optional[tf.train.Checkpoint] = None
  checkpoint_dir: str = ""
  save_every_steps: int = 0
  callback: Optional[Callable[[int], Optional[bool]]] = None
  callback_every_steps: int = 0
  older_checkpoints: Dict[str, tf.train.Checkpoint] = dataclasses.field(default_factory=dict)
  save_at_end: bool = False

  def manager(self) -> Optional[tf.train.CheckpointManager]:
    if self.checkpoint is None or not (self.checkpoint_dir and self.save_every_steps):
      return None
    return tf.train.CheckpointManager(self.checkpoint, self.checkpoint_dir, max_to_keep=1)


def run_steps(begin: Callable, loop: StepLoop) -> Dict[str, List[float]]:
  """The resumable step loop of every fine-tuning trial (`train`) and of CVT, its cadences
  `training.periodic` actions (log, callback, save) as in the pre-training loop.

  `begin(done)` gets the number of steps already done (0, or the step of the checkpoint in
  `loop.checkpoint_dir`, restored first) and returns `step(k) -> ({name: value}, examples)` for
  steps k = done + 1 .. num_steps (the caller replays its data from `done`). Logs each value's
  running mean, examples/s (when counted) and an ETA. A stopped loop saves nothing more; else the
  checkpoint is saved every `save_every_steps` steps before the last, and at the last with
  `save_at_end`, so a larger `num_steps` continues from there. Each step runs whole (Ctrl-C and
  SIGTERM are held until it ends); an interrupt (KeyboardInterrupt, as `tools/cli.py` raises
  SIGTERM too) saves the last step done before it propagates, unless a callback due at that step
  has not run. Returns every value of each name, in order (this process's steps).
  """
  manager = loop.manager()
  done = _restore(loop, manager)
  step_fn = begin(done)
  history: Dict[str, List[float]] = {}
  clock = {"start": time.time(), "examples": 0}
  stopped = []
  actions = _actions(loop, manager, history, clock, stopped, done)
  completed = {"step": done, "acted": True}  # the last step done; whether its actions all ran
  try:
    for step in range(done + 1, loop.num_steps + 1):
      with interruptible.uninterrupted():  # a step (labeled + unlabeled in CVT) runs whole
        values, batch_examples = step_fn(step)
        completed.update(step=step, acted=False)
      for name, value in values.items():
        history.setdefault(name, []).append(value)
      if step == done + 1:  # rates exclude the first step's tracing
        clock["start"] = time.time()
      else:
        clock["examples"] += batch_examples
      periodic.run_due(actions, step, loop.num_steps)
      completed["acted"] = True
      if stopped:
        break
  except KeyboardInterrupt:  # Ctrl-C, or SIGTERM raised as one (tools/cli.py): keep the steps done
    _save_interrupted(loop, manager, actions, completed, done)
    raise
  return history


def _restore(loop: StepLoop, manager) -> int:
  """The step of the checkpoint restored into `loop.checkpoint` (0: none)."""
  if manager is None or not manager.latest_checkpoint:
    return 0
  restore_any_layout(loop.checkpoint, manager.latest_checkpoint, loop.older_checkpoints)
  done = checkpoint_step(manager.latest_checkpoint)
  loop.log(f"{loop.label}: resuming at step {done} from {manager.latest_checkpoint}")
  return done


def _actions(loop: StepLoop, manager, history, clock, stopped, done):
  """The loop's periodic actions: the progress line, the callback and the save (the callback and
  the save come before the last step only, the save at it too with `save_at_end`)."""
  def log_row(step):
    elapsed = max(time.time() - clock["start"], 1e-9)
    shown = " ".join(f"{name}={np.mean(values[-loop.log_every_steps:]):.4f}"
                     for name, values in history.items())
    rate = f" examples/s={clock['examples'] / elapsed:.1f}" if clock["examples"] else ""
    eta = progress.format_duration((loop.num_steps - step) * elapsed / max(step - done - 1, 1))
    loop.log(f"{loop.label} step {step}/{loop.num_steps} {shown}{rate} ETA {eta}")

  actions = [periodic.PeriodicAction("log", log_row, periods=(loop.log_every_steps,))]
  if loop.callback and loop.callback_every_steps:  # it may stop the loop (early stopping on dev)
    actions.append(periodic.PeriodicAction(
        "callback", lambda step: stopped.append(step) if loop.callback(step) else None,
        periods=(loop.callback_every_steps,), at_end=False,
        skip=lambda step: step == loop.num_steps))
  if manager:
    actions.append(periodic.PeriodicAction(
        "save", lambda step: checkpoint_files.save(manager, step),
        periods=(loop.save_every_steps,), at_end=loop.save_at_end,
        skip=lambda step: bool(stopped) or (step == loop.num_steps and not loop.save_at_end)))
  return actions


def _save_interrupted(loop: StepLoop, manager, actions, completed, done) -> None:
  """On an interrupt, saves the last step done, unless a callback due at it has not run (its
  resumed run could not repeat it) or it is saved already."""
  owes_callback = not completed["acted"] and any(
      action.name == "callback" and action.due(completed["step"], loop.num_steps)
      for action in actions)
  saved = checkpoint_step(manager.latest_checkpoint) if (
      manager and manager.latest_checkpoint) else done
  if manager and completed["step"] > saved and not owes_callback:
    checkpoint_files.save(manager, completed["step"])
    loop.log(f"{loop.label}: interrupted; step {completed['step']} saved, the same command "
             "resumes there")


def checkpoint_step(path: str) -> int:
  """The step a `CheckpointManager` checkpoint was saved at (`.../ckpt-<step>`)."""
  return int(path.rsplit("-", 1)[1])


def restore_any_layout(checkpoint: tf.train.Checkpoint, path: str,
                       older: Dict[str, tf.train.Checkpoint]) -> None:
  """Restores `path` into `checkpoint`, or into the first of `older` whose marker begins one of
  its keys; every object of the one used must be matched."""
  keys = [name for name, _ in tf.train.list_variables(path)]
  for marker, older_checkpoint in older.items():
    if any(key.startswith(marker) for key in keys):
      older_checkpoint.restore(path).assert_existing_objects_matched()
      return
  checkpoint.restore(path).assert_existing_objects_matched()


def predict(model_fn, inputs: Dict[str, np.ndarray], batch_size: int,
            log: Callable[[str], None], label: str, log_every_seconds: float = 30.0
            ) -> Dict[str, np.ndarray]:
  """`model_fn(batch) -> {name: tensor}` over every row of `inputs`, as numpy arrays.

  The step is XLA-compiled, so element-wise chains fuse instead of streaming through memory
  (SQuAD's joint head: the add → GELU → projection over every (start, end) pair, 4–5× faster on
  CPU); the last batch is padded to `batch_size`, so there is one compilation. Logs rows done,
  rows/s and an ETA every `log_every_seconds`, and the total at the end.
  """
  rows = len(next(iter(inputs.values())))
  step = tf.function(model_fn, jit_compile=True, autograph=False)
  chunks = []
  throttle = progress.Throttle(rows, log_every_seconds)
  first = 0  # rows of the first batch, whose compilation the rates exclude
  for begin in range(0, rows, batch_size):
    batch = {k: v[begin:begin + batch_size] for k, v in inputs.items()}
    real = len(next(iter(batch.values())))
    if real < batch_size:  # pad with copies of the last row
      batch = {k: np.concatenate([v, np.repeat(v[-1:], batch_size - real, 0)])
               for k, v in batch.items()}
    chunks.append({k: v.numpy()[:real] for k, v in step(batch).items()})
    done = begin + real
    if begin == 0:
      throttle.restart()
      throttle.total, first = rows - real, real
    elif done < rows and throttle.due():
      log(f"{label}: {done}/{rows} ({throttle.rate(done - first):.0f}/s), ETA "
          f"{throttle.eta(done - first)}")
  elapsed = time.time() - throttle.start
  log(f"{label}: {rows} in {elapsed:.1f}s"
      + (f" ({(rows - min(batch_size, rows)) / elapsed:.0f}/s after compilation)"
         if rows > batch_size and elapsed > 0 else ""))
  return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
