"""`run_cvt`: reads each task (`--tasks`, registered in `all_tasks.py`) and the unlabeled corpus,
trains CVT (or a baseline) for N trials, evaluates each task's dev set with the EMA weights, and
writes `eval_results.json`.

Each trial checkpoints model, optimizer and EMA every `save_checkpoints_steps` in
`trial_<k>/checkpoint` and resumes from there (the labeled batches replay exactly; the unlabeled
stream restarts, re-seeded by the step). Every `eval_every_steps` it evaluates the dev sets; the
best evaluation so far (the mean of the tasks' primary figures) keeps its EMA weights in
`trial_<k>/model` and its predictions files, and with `patience` set the trial stops after that
many evaluations without a new best (the dev-selected checkpoint the dissertation reports).
It shares the fine-tuning trial loop (`finetune.trials`: trials, steps, median and spread) but not
`finetune.runner.Runner`, because CVT trains its own CNN-BiLSTM from word and character ids
rather than fine-tuning an exported encoder.
"""
import dataclasses
import itertools
import json
import os
import shutil
from typing import Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.utils import checkpoint_files
from official_rtd.utils import textio
from official_rtd.cvt import all_tasks  # pylint: disable=unused-import
from official_rtd.cvt import data as data_lib
from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import model as model_lib
from official_rtd.cvt import run_dir
from official_rtd.cvt import settings
from official_rtd.cvt import task as task_lib
from official_rtd.cvt import training
from official_rtd.finetune import fingerprint
from official_rtd.finetune import trials as trials_lib

CvtRunConfig = settings.CvtRunConfig  # the run's settings (TensorFlow-free, for --help)


class CvtRunner:
  """Loads every task and the vocabulary once; `run()` runs the trials."""

  def __init__(self, config: CvtRunConfig, log: Callable[[str], None] = print):
    self.config, self.log = config, log
    training.CvtTrainConfig(mode=config.mode)  # refuses an unknown --mode
    names = [t.strip() for t in config.tasks.split(",") if t.strip()]
    if not names or len(set(names)) != len(names):
      raise ValueError(f"--tasks={config.tasks!r} must name each task once")
    unknown = [n for n in names if n not in task_lib.names()]
    if unknown:
      raise ValueError(f"--tasks: unknown {unknown}; one of: {', '.join(task_lib.names())}")
    if config.mode != "supervised" and not (config.unlabeled_data or config.unlabeled_remainder):
      raise ValueError(f"--mode={config.mode} needs --unlabeled_data (a corpus) or "
                       "--unlabeled_remainder (the training sentences --train_fraction leaves out)")
    if not 0 <= config.unlabeled_start_step < config.train_steps:
      raise ValueError(f"--unlabeled_start_step={config.unlabeled_start_step} must be in "
                       f"[0, --train_steps={config.train_steps})")
    if config.unlabeled_start_step and config.mode == "supervised":
      raise ValueError("--unlabeled_start_step applies to --mode=cvt or word_dropout, not "
                       "--mode=supervised (which has no unlabeled steps)")
    rng = np.random.default_rng(config.seed)
    self.tasks: Dict[str, task_lib.CvtTask] = {n: task_lib.get(n)(n, config, rng) for n in names}
    splitters = {t.split_unlabeled for t in self.tasks.values()}
    if len(splitters) > 1:
      raise ValueError(f"--tasks={config.tasks}: these tasks read unlabeled text differently "
                       "(translation: one sentence per line); run them separately")
    self.split_unlabeled = splitters.pop()
    self.remainder = [list(t.source_words(e)) for t in self.tasks.values() for e in t.remainder
                      if 2 <= len(t.source_words(e)) <= config.max_sentence_length]
    if config.unlabeled_remainder and not self.remainder:
      raise ValueError("--unlabeled_remainder: --train_fraction and --max_train_sentences leave "
                       "no training sentences out (of 2 to --max_sentence_length words); lower "
                       "one of them")
    pretrained = self._pretrained_vectors()
    labeled = [t.source_words(e) for t in self.tasks.values() for e in t.train]
    unlabeled = []
    if (config.unlabeled_data or config.unlabeled_remainder) and config.vocab_unlabeled_sentences:
      # One pass at most: text shorter than --vocab_unlabeled_sentences is not read again, so
      # --vocab_min_count counts real occurrences (a 10k-sentence remainder read 20 times put
      # every word it holds in the vocabulary).
      stream = self._unlabeled_stream(config.seed, passes=1)
      unlabeled = list(itertools.islice(stream, config.vocab_unlabeled_sentences))
    unlabeled_counts = data_lib.word_counts(unlabeled)
    self.vocab = data_lib.WordCharVocab.build(labeled, extra_words=sorted(pretrained),
                                              unlabeled_counts=unlabeled_counts,
                                              min_count=config.vocab_min_count)
    self.embeddings = data_lib.embedding_matrix(self.vocab, config.word_dim, pretrained,
                                                config.seed)
    # Labeled and dev examples are encoded once; batches only pad them.
    self.encoded = {n: [self.vocab.encode(t.source_words(e)) for e in t.train]
                    for n, t in self.tasks.items()}
    self.target_ids = {n: [t.targets(e) for e in t.train] for n, t in self.tasks.items()}
    self.encoded_dev = {n: [self.vocab.encode(t.source_words(e)) for e in t.dev]
                        for n, t in self.tasks.items()}
    self.model_config = encoder_lib.CvtConfig(
        word_dim=config.word_dim, char_dim=config.char_dim, lstm1_size=config.lstm1_size,
        lstm2_size=config.lstm2_size, projection_size=config.projection_size,
        hidden_size=config.hidden_size)
    covered = self.vocab.coverage(unlabeled_counts)
    log(f"run_cvt ({config.mode}): " + ", ".join(t.describe() for t in self.tasks.values())
        + f"; {len(self.vocab.words)} words ({len(pretrained)} pre-trained vectors; "
        f"{len(unlabeled)} unlabeled sentences read for the vocabulary, {covered:.1%} of their "
        f"words in it), {config.train_steps} steps")

  @property
  def task_names(self) -> List[str]:
    return list(self.tasks)

  def _pretrained_vectors(self) -> Dict[str, np.ndarray]:
    """`--word_embeddings` (GloVe format) or `--init_from_encoder`'s token embeddings."""
    cfg = self.config
    if cfg.word_embeddings and cfg.init_from_encoder:
      raise ValueError("give at most one of --word_embeddings and --init_from_encoder")
    if cfg.word_embeddings:
      words, vectors = data_lib.load_glove(cfg.word_embeddings)
      if vectors.shape[1] != cfg.word_dim:
        raise ValueError(f"{cfg.word_embeddings} holds {vectors.shape[1]}-d vectors but "
                         f"--word_dim={cfg.word_dim}")
      return dict(zip(words, vectors))
    if cfg.init_from_encoder:
      return self._encoder_vectors(cfg.init_from_encoder)
    return {}

  def _encoder_vectors(self, export_dir: str) -> Dict[str, np.ndarray]:
    """Each training word's vector: the mean of its word pieces' input embeddings in a
    pre-trained encoder export (whose embedding size must be `--word_dim`)."""
    from official_rtd.interop import export as export_lib  # pylint: disable=g-import-not-at-top
    export = export_lib.Export(export_dir)
    encoder = export.encoder()
    table = encoder.embeddings.embedding_table.numpy()
    if table.shape[1] != self.config.word_dim:
      raise ValueError(f"{export_dir}: token embeddings are {table.shape[1]}-d but "
                       f"--word_dim={self.config.word_dim}")
    tokenizer = export.tokenizer
    words = sorted({data_lib.normalize(w) for t in self.tasks.values() for e in t.train
                    for w in t.source_words(e)})
    pieces = tokenizer.tokenize_to_lists(words)
    return {w: table[p].mean(0) for w, p in zip(words, pieces) if p}

  # --- one trial ---------------------------------------------------------------------------------
  def _batch(self, name: str, indices):
    task = self.tasks[name]
    batch = data_lib.pad_batch([self.encoded[name][i] for i in indices])
    return batch.inputs(), task.pad_targets([self.target_ids[name][i] for i in indices])

  def _build(self, trial: int):
    cfg = self.config
    tf_keras.utils.set_random_seed(cfg.seed + trial)
    model = model_lib.CvtModel(self.model_config, len(self.vocab.words), len(self.vocab.chars),
                               self.tasks, word_embeddings=self.embeddings, name="cvt")
    steps = training.CvtSteps(model, self.tasks, training.CvtTrainConfig(
        mode=cfg.mode, learning_rate=cfg.learning_rate, warmup_steps=cfg.warmup_steps,
        ema_decay=cfg.ema_decay, unlabeled_loss_weight=cfg.unlabeled_loss_weight),
        self.vocab.words[data_lib.REMOVED])
    first = next(iter(self.tasks))
    inputs, _ = self._batch(first, [0, min(1, len(self.encoded[first]) - 1)])
    steps.build(inputs, {n: self._targets_for(n, inputs) for n in self.tasks})
    return model, steps

  def _targets_for(self, name: str, inputs):
    """Targets of task `name` shaped for `inputs` (only to create variables): its first
    examples' targets, padded or cut to the batch's length."""
    rows = len(inputs["lengths"])
    targets = [self.target_ids[name][i % len(self.target_ids[name])] for i in range(rows)]
    padded = self.tasks[name].pad_targets(targets)
    if isinstance(padded, dict):
      return padded
    time_steps = inputs["words"].shape[1]
    out = np.zeros([rows, time_steps], np.int32)
    out[:, :min(time_steps, padded.shape[1])] = padded[:, :time_steps]
    return out

  def _labeled_batches(self, trial: int):
    """Endless (task, inputs, targets): a task uniformly at random, then the next batch of its
    sentences in length-bucketed random batches (`data.length_batches`), epoch after epoch."""
    rng = np.random.default_rng(self.config.seed + trial)
    queues = {t: [] for t in self.task_names}
    lengths = {t: [len(w) for w, _ in self.encoded[t]] for t in self.task_names}
    while True:
      name = self.task_names[int(rng.integers(len(self.task_names)))]
      if not queues[name]:
        queues[name] = data_lib.length_batches(lengths[name], self.config.train_batch_size, rng)
      yield (name,) + self._batch(name, queues[name].pop())

  def _unlabeled_stream(self, seed: int, passes: Optional[int] = None):
    """Unlabeled sentences (endless, or `passes` over each source): `--unlabeled_data`'s, the
    tasks' remainder's (`--unlabeled_remainder`), or both, alternating sentence by sentence."""
    streams = []
    if self.config.unlabeled_data:
      streams.append(data_lib.unlabeled_sentences(
          self.config.unlabeled_data.split(","), self.config.max_sentence_length, seed,
          on_decode_error=self.config.on_decode_error, warn=self.log, split=self.split_unlabeled,
          passes=passes))
    if self.config.unlabeled_remainder:
      streams.append(data_lib.shuffled_passes(self.remainder, seed, passes))
    return streams[0] if len(streams) == 1 else data_lib.alternate(streams)

  def _unlabeled_batches(self, seed: int):
    """Endless unlabeled minibatches, length-bucketed over pools of 50 batches."""
    stream, rng = self._unlabeled_stream(seed), np.random.default_rng(seed)
    size = self.config.train_batch_size
    while True:
      pool = [self.vocab.encode(s) for s in itertools.islice(stream, size * 50)]
      for indices in data_lib.length_batches([len(w) for w, _ in pool], size, rng):
        yield data_lib.pad_batch([pool[i] for i in indices]).inputs()

  def run_trial(self, trial: int) -> dict:
    cfg = self.config
    model, steps = self._build(trial)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=steps.optimizer,
                                     ema=steps.ema.shadows, ema_updates=steps.ema.updates)
    checkpoint_dir = trials_lib.trial_dir(cfg.model_dir, trial, "checkpoint")
    selection_path = trials_lib.trial_dir(cfg.model_dir, trial, run_dir.SELECTION_NAME)
    selection = (textio.load_json(selection_path) if os.path.isfile(selection_path)
                 else {"curve": [], "best": None})

    def begin(done):
      labeled = self._labeled_batches(trial)
      for _ in range(done):  # replay the labeled stream
        next(labeled)
      unlabeled = (self._unlabeled_batches(cfg.seed + trial + 7919 * done)
                   if cfg.mode != "supervised" else None)
      selection["curve"] = [p for p in selection["curve"] if p["step"] <= done]

      def step(k):
        name, inputs, targets = next(labeled)
        values = {"labeled loss": float(steps.labeled(inputs, targets, name))}
        if unlabeled is not None and k > cfg.unlabeled_start_step:
          values["unlabeled loss"] = float(steps.unlabeled(next(unlabeled)))
        return values, 0
      return step

    stopped = []

    def evaluate_now(step):
      """Dev figures at `step`; a new best keeps its weights and predictions. True: stop (no
      new best in `patience` evaluations)."""
      best = selection["best"]
      dev = self.evaluate(steps, trial)  # predictions as `<name>.last`
      score = self.selection_score(dev)
      selection["curve"].append({"step": step, **dev})
      self.log(f"trial_{trial} step {step}: dev {json.dumps(dev)}")
      new_best = best is None or score > best["score"]
      for task in self.tasks.values():
        path = trials_lib.trial_dir(cfg.model_dir, trial, task.predictions_name())
        if new_best:
          os.replace(path + ".last", path)
        else:
          os.remove(path + ".last")
      if new_best:
        self._save_weights(model, steps, trials_lib.trial_dir(cfg.model_dir, trial, "model"))
        selection["best"] = {"step": step, "score": score, "dev": dev}
      textio.write_json_atomic(selection_path, selection)
      since = [p["step"] for p in selection["curve"] if p["step"] > selection["best"]["step"]]
      if cfg.patience and len(since) >= cfg.patience:
        stopped.append(step)
        self.log(f"trial_{trial}: no better dev figure in {cfg.patience} evaluations; "
                 f"stopping at step {step} (best: step {selection['best']['step']})")
      return bool(stopped)

    losses = trials_lib.run_steps(begin, cfg.train_steps, self.log, cfg.log_every_steps,
                                  f"trial_{trial} of {cfg.num_trials}", checkpoint,
                                  checkpoint_dir, cfg.save_checkpoints_steps, evaluate_now,
                                  cfg.eval_every_steps)
    if not stopped:
      evaluate_now(cfg.train_steps)
    best = selection["best"]
    shutil.rmtree(checkpoint_dir, ignore_errors=True)  # the trial's results replace it
    return {"trial": trial, "seed": cfg.seed + trial, "train_steps": cfg.train_steps,
            "steps_run": selection["curve"][-1]["step"], "best_step": best["step"],
            "final_labeled_loss": float(np.mean(losses.get("labeled loss", [])[-10:] or [np.nan])),
            "dev": best["dev"], "final_dev": selection["curve"][-1],
            "dev_curve": selection["curve"]}

  def selection_score(self, dev: Dict[str, Dict[str, float]]) -> float:
    """What picks the best evaluation: the mean over tasks of each one's primary figure."""
    return float(np.mean([dev[n][t.primary_metric] for n, t in self.tasks.items()]))

  @staticmethod
  def _save_weights(model, steps, path: str):
    steps.ema.swap()  # the kept weights are the averages
    try:
      checkpoint_files.write(tf.train.Checkpoint(model=model), path)
    finally:
      steps.ema.swap()

  def evaluate(self, steps: training.CvtSteps, trial: int) -> Dict[str, Dict[str, float]]:
    """Each task's dev metrics with the EMA weights, and its predictions file in `trial_<k>/`,
    named `<predictions name>.last` (the caller keeps or drops it)."""
    steps.ema.swap()
    try:
      return {name: task.evaluate(
          data_lib.predict_rows(self.encoded_dev[name], lambda x, n=name: steps.predict(x, n),
                                self.log, f"{name}: predicted"),
          trials_lib.trial_dir(self.config.model_dir, trial, task.predictions_name() + ".last"),
          self.log) for name, task in self.tasks.items()}
    finally:
      steps.ema.swap()

  def run(self) -> dict:
    """Writes `vocab.json` (what reading `trial_<k>/model` back needs: words, characters, each
    task's labels, the model's sizes), then runs the trials and writes `eval_results.json`."""
    cfg = self.config
    # A re-run resumes only this same run; another run's directory is refused, nothing written.
    with fingerprint.this_run_only(cfg.model_dir, type(self).__name__, cfg, self.log):
      return self._trials_and_summary()

  def _trials_and_summary(self) -> dict:
    cfg = self.config
    textio.write_json_atomic(os.path.join(cfg.model_dir, run_dir.VOCAB_NAME), {
        **self.vocab.to_json(), "tasks": {n: t.vocabulary_json() for n, t in self.tasks.items()},
        "model": dataclasses.asdict(self.model_config)})
    primary = {n: t.primary_metric for n, t in self.tasks.items()}
    trials = trials_lib.run_trials(
        cfg.model_dir, cfg.num_trials, self.run_trial, self.log,
        lambda r: ", ".join(f"{t} {primary[t]}={r['dev'][t][primary[t]]:.4f}" for t in primary)
        + f" (best of {len(r['dev_curve'])} evaluations, step {r['best_step']})")
    median, spread = trials_lib.median_and_spread(
        [{task: t["dev"][task] for task in primary} for t in trials])
    summary = {"tasks": list(primary), "primary_metrics": primary, "mode": cfg.mode,
               "median": median, "spread": spread, "trials": trials,
               "flags": dataclasses.asdict(cfg), "vocab_words": len(self.vocab.words)}
    textio.write_json_atomic(os.path.join(cfg.model_dir, "eval_results.json"), summary)
    return summary
