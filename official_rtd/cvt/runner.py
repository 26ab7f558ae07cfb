"""`run_cvt`: reads the tagging tasks (and the `dep` treebank) and the unlabeled corpus, trains
CVT (or a baseline) for N trials, evaluates each task's dev set with the EMA weights, and writes
`eval_results.json`.

Each trial checkpoints model, optimizer and EMA every `save_checkpoints_steps` in
`trial_<k>/checkpoint` and resumes from there (the labeled batches replay exactly; the unlabeled
stream restarts, re-seeded by the step), and keeps its final EMA weights in `trial_<k>/model`.
It shares the fine-tuning trial loop (`finetune.trials`: trials, steps, median and spread) but not
`finetune.runner.Runner`, because CVT trains its own CNN-BiLSTM from word and character ids
rather than fine-tuning an exported encoder: no export to load, no per-size defaults, no `Task`.
"""
import dataclasses
import json
import os
import shutil
from typing import Callable, Dict, List

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd import textio
from official_rtd.cvt import data as data_lib
from official_rtd.cvt import model as model_lib
from official_rtd.cvt import parsing
from official_rtd.cvt import training
from official_rtd.finetune import conllu
from official_rtd.finetune import fingerprint
from official_rtd.finetune import tagging
from official_rtd.finetune import tagging_data
from official_rtd.finetune import trials as trials_lib


VOCAB_NAME = "vocab.json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class CvtRunConfig:
  tasks: str
  data_dir: str
  model_dir: str
  unlabeled_data: str = ""
  mode: str = "cvt"
  word_embeddings: str = ""
  init_from_encoder: str = ""
  word_dim: int = 300
  char_dim: int = 50
  lstm1_size: int = 1024
  lstm2_size: int = 512
  projection_size: int = 512
  hidden_size: int = 512
  train_steps: int = 20000
  train_batch_size: int = 64
  max_sentence_length: int = 100
  on_decode_error: str = "fail"
  max_train_sentences: int = 0
  learning_rate: float = 0.5
  warmup_steps: int = 0
  ema_decay: float = 0.998
  eval_every_steps: int = 1000
  save_checkpoints_steps: int = 1000
  log_every_steps: int = 100
  num_trials: int = 1
  seed: int = 0


class CvtRunner:
  """Loads every task and the vocabulary once; `run()` runs the trials."""

  def __init__(self, config: CvtRunConfig, log: Callable[[str], None] = print):
    self.config, self.log = config, log
    training.CvtTrainConfig(mode=config.mode)  # refuses an unknown --mode
    names = [t.strip() for t in config.tasks.split(",") if t.strip()]
    if not names or len(set(names)) != len(names):
      raise ValueError(f"--tasks={config.tasks!r} must name each task once")
    # `dep`: dependency parsing (§4.2.3, `parsing.py`) on a UD treebank; the rest tagging tasks.
    self.treebank = None
    unknown = [n for n in names if n != parsing.TASK_NAME and n not in tagging_data.TASKS]
    if unknown:
      raise ValueError(f"--tasks: unknown {unknown}; one of: "
                       f"{', '.join(sorted(tagging_data.TASKS) + [parsing.TASK_NAME])}")
    self.tasks = [tagging_data.get_task(n) for n in names if n != parsing.TASK_NAME]
    if config.mode != "supervised" and not config.unlabeled_data:
      raise ValueError(f"--mode={config.mode} needs --unlabeled_data (a corpus)")
    if config.train_steps < 1 or config.train_batch_size < 1:
      raise ValueError("--train_steps and --train_batch_size must be >= 1")
    self.train, self.dev, self.labels = {}, {}, {}
    rng = np.random.default_rng(config.seed)
    for task in self.tasks:
      folder = os.path.join(config.data_dir, task.folder)
      train, dev = tagging_data.load_task(
          task, folder if os.path.isdir(folder) else config.data_dir)
      if config.max_train_sentences:
        keep = rng.permutation(len(train))[:config.max_train_sentences]
        train = [train[i] for i in sorted(keep)]
      if task.spans:  # §4.3.1: BIOES for chunking and NER
        train = tagging_data.with_scheme(train, "bioes")
      self.train[task.name], self.dev[task.name] = train, dev
      self.labels[task.name] = sorted({t for s in train for t in s.tags})
    if parsing.TASK_NAME in names:
      folder = os.path.join(config.data_dir, "parsing", "ud_ewt")
      self.treebank = parsing.Treebank(folder if os.path.isdir(folder) else config.data_dir, rng,
                                       config.max_train_sentences)
      self.train[parsing.TASK_NAME] = self.treebank.train
      self.dev[parsing.TASK_NAME] = self.treebank.dev
      self.labels[parsing.TASK_NAME] = self.treebank.relations
    pretrained = self._pretrained_vectors()
    self.vocab = data_lib.WordCharVocab.build(
        [s.words for t in self.train for s in self.train[t]], extra_words=sorted(pretrained))
    self.embeddings = data_lib.embedding_matrix(self.vocab, config.word_dim, pretrained,
                                                config.seed)
    # Labeled and dev sentences are encoded once; batches only pad them.
    self.encoded = {t: [self.vocab.encode(s.words) for s in self.train[t]] for t in self.train}
    self.tag_ids = {t.name: [[self.labels[t.name].index(tag) for tag in s.tags]
                             for s in self.train[t.name]] for t in self.tasks}
    if self.treebank is not None:  # a word's target: its gold edge, head · R + relation
      self.tag_ids[parsing.TASK_NAME] = [self.treebank.targets(s) for s in self.treebank.train]
    self.encoded_dev = {t: [self.vocab.encode(s.words) for s in self.dev[t]] for t in self.dev}
    self.task_names = list(self.train)
    self.model_config = model_lib.CvtConfig(
        word_dim=config.word_dim, char_dim=config.char_dim, lstm1_size=config.lstm1_size,
        lstm2_size=config.lstm2_size, projection_size=config.projection_size,
        hidden_size=config.hidden_size)
    log(f"run_cvt ({config.mode}): " + ", ".join(
        f"{t} {len(self.train[t])} train / {len(self.dev[t])} dev sentences, "
        f"{len(self.labels[t])} {'relations' if t == parsing.TASK_NAME else 'tags'}"
        for t in self.task_names)
        + f"; {len(self.vocab.words)} words ({len(pretrained)} pre-trained vectors), "
        f"{config.train_steps} steps")

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
    words = sorted({data_lib.normalize(w) for t in self.train for s in self.train[t]
                    for w in s.words})
    pieces = tokenizer.tokenize_to_lists(words)
    return {w: table[p].mean(0) for w, p in zip(words, pieces) if p}

  # --- one trial ---------------------------------------------------------------------------------
  def _build(self, trial: int):
    cfg = self.config
    tf_keras.utils.set_random_seed(cfg.seed + trial)
    model = model_lib.CvtTagger(self.model_config, len(self.vocab.words), len(self.vocab.chars),
                                {t.name: len(self.labels[t.name]) for t in self.tasks},
                                word_embeddings=self.embeddings, name="cvt",
                                num_relations=({parsing.TASK_NAME: len(self.treebank.relations)}
                                               if self.treebank is not None else None))
    model(data_lib.make_batch([["a", "b"]], self.vocab).inputs())
    steps = training.CvtSteps(model, training.CvtTrainConfig(
        mode=cfg.mode, learning_rate=cfg.learning_rate, warmup_steps=cfg.warmup_steps,
        ema_decay=cfg.ema_decay), self.vocab.words[data_lib.REMOVED])
    steps.start()
    return model, steps

  def _labeled_batches(self, trial: int):
    """Endless (task, Batch): a task uniformly at random, then a batch of its sentences drawn
    in a seeded random order."""
    rng = np.random.default_rng(self.config.seed + trial)
    orders = {t: [] for t in self.task_names}
    while True:
      task = self.task_names[int(rng.integers(len(self.task_names)))]
      if len(orders[task]) < self.config.train_batch_size:
        orders[task].extend(rng.permutation(len(self.train[task])).tolist())
      chosen = orders[task][:self.config.train_batch_size]
      del orders[task][:self.config.train_batch_size]
      yield task, data_lib.pad_batch([self.encoded[task][i] for i in chosen],
                                     [self.tag_ids[task][i] for i in chosen])

  def _unlabeled_batches(self, seed: int):
    stream = data_lib.unlabeled_sentences(self.config.unlabeled_data.split(","),
                                          self.config.max_sentence_length, seed,
                                          on_decode_error=self.config.on_decode_error,
                                          warn=self.log)
    while True:
      yield data_lib.make_batch([next(stream) for _ in range(self.config.train_batch_size)],
                                self.vocab)

  def run_trial(self, trial: int) -> dict:
    cfg = self.config
    model, steps = self._build(trial)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=steps.optimizer,
                                     ema=steps.ema.shadows, ema_updates=steps.ema.updates)
    checkpoint_dir = trials_lib.trial_dir(cfg.model_dir, trial, "checkpoint")

    def begin(done):
      labeled = self._labeled_batches(trial)
      for _ in range(done):  # replay the labeled stream
        next(labeled)
      unlabeled = (self._unlabeled_batches(cfg.seed + trial + 7919 * done)
                   if cfg.mode != "supervised" else None)

      def step(_):
        task, batch = next(labeled)
        values = {"labeled loss": float(steps.labeled(batch.inputs(), batch.tags, task))}
        if unlabeled is not None:
          values["unlabeled loss"] = float(steps.unlabeled(next(unlabeled).inputs()))
        return values, 0
      return step

    curve = []

    def evaluate_now(step):
      curve.append({"step": step, **self.evaluate(steps)})
      self.log(f"trial {trial + 1} step {step}: dev {json.dumps(curve[-1])}")

    losses = trials_lib.run_steps(begin, cfg.train_steps, self.log, cfg.log_every_steps,
                                  f"trial {trial + 1}/{cfg.num_trials}", checkpoint,
                                  checkpoint_dir, cfg.save_checkpoints_steps, evaluate_now,
                                  cfg.eval_every_steps)
    dev = self.evaluate(steps, trial)
    steps.ema.swap()  # the exported weights are the averages
    tf.train.Checkpoint(model=model).write(trials_lib.trial_dir(cfg.model_dir, trial, "model"))
    steps.ema.swap()
    shutil.rmtree(checkpoint_dir, ignore_errors=True)  # the trial's results replace it
    return {"trial": trial, "seed": cfg.seed + trial, "train_steps": cfg.train_steps,
            "final_labeled_loss": float(np.mean(losses.get("labeled loss", [])[-10:] or [np.nan])),
            "dev": dev, "dev_curve": curve}

  def evaluate(self, steps: training.CvtSteps, trial: int = -1) -> Dict[str, Dict[str, float]]:
    """Each task's dev metrics with the EMA weights (token accuracy or span F1); with `trial`
    set, writes `trial_<k>/predictions_<task>.txt` (`word gold predicted`)."""
    steps.ema.swap()
    try:
      out = {}
      for task in self.tasks:
        sentences = self.dev[task.name]
        predicted: List[List[str]] = []
        for begin in range(0, len(sentences), 128):
          chunk = sentences[begin:begin + 128]
          ids = steps.predict(data_lib.pad_batch(
              self.encoded_dev[task.name][begin:begin + 128]).inputs())[task.name].numpy()
          predicted += [[self.labels[task.name][i] for i in row[:len(s.words)]]
                        for row, s in zip(ids, chunk)]
        predicted = tagging.output_tags(task, predicted)
        out[task.name] = tagging.evaluate(task, sentences, predicted)
        if trial >= 0:
          tagging.write_predictions(
              trials_lib.trial_dir(self.config.model_dir, trial, f"predictions_{task.name}.txt"),
              sentences, predicted)
      if self.treebank is not None:
        out[parsing.TASK_NAME] = self._evaluate_parser(steps, trial)
      return out
    finally:
      steps.ema.swap()

  def _evaluate_parser(self, steps: training.CvtSteps, trial: int) -> Dict[str, float]:
    """UAS/LAS of the dev treebank (MST decoding: well-formed trees); with `trial` set, writes
    `trial_<k>/predictions_dep.conllu`."""
    name, log_probs = parsing.TASK_NAME, []
    for begin in range(0, len(self.treebank.dev), 64):
      batch = data_lib.pad_batch(self.encoded_dev[name][begin:begin + 64]).inputs()
      log_probs += list(steps.primary_logits(batch)[name].numpy())
    metrics, predicted = self.treebank.evaluate(log_probs)
    if trial >= 0:
      conllu.write_conllu(trials_lib.trial_dir(self.config.model_dir, trial,
                                               "predictions_dep.conllu"),
                          self.treebank.dev, predicted)
    return metrics

  def run(self) -> dict:
    """Writes `vocab.json` (what reading `trial_<k>/model` back needs: words, characters, each
    task's tags, the model's sizes), then runs the trials and writes `eval_results.json`."""
    cfg = self.config
    # A re-run resumes only this same run; another run's directory is refused, nothing written.
    with fingerprint.holding(cfg.model_dir, self.log):
      fingerprint.check_or_record(cfg.model_dir, fingerprint.fingerprint(type(self).__name__, cfg),
                                  fingerprint.field_defaults(cfg))
      return self._trials_and_summary()

  def _trials_and_summary(self) -> dict:
    cfg = self.config
    textio.write_json_atomic(os.path.join(cfg.model_dir, VOCAB_NAME), {
        **self.vocab.to_json(), "tags": self.labels,
        "model": dataclasses.asdict(self.model_config)})
    primary = {t.name: "f1" if t.spans else "accuracy" for t in self.tasks}
    if self.treebank is not None:
      primary[parsing.TASK_NAME] = "las"
    trials = trials_lib.run_trials(
        cfg.model_dir, cfg.num_trials, self.run_trial, self.log,
        lambda r: ", ".join(f"{t} {primary[t]}={r['dev'][t][primary[t]]:.4f}" for t in primary))
    median, spread = {}, {}
    for task in primary:
      median[task], spread[task] = trials_lib.median_and_spread([t["dev"][task] for t in trials])
    summary = {"tasks": list(primary), "primary_metrics": primary, "mode": cfg.mode,
               "median": median, "spread": spread, "trials": trials,
               "flags": dataclasses.asdict(cfg), "vocab_words": len(self.vocab.words)}
    textio.write_json_atomic(os.path.join(cfg.model_dir, "eval_results.json"), summary)
    return summary

