"""GLUE fine-tuning with the ELECTRA protocol (dissertation Table 5.2): N trials, median + spread.

Per trial: the exported encoder + ELECTRA's head, AdamW (ε 1e-6, weight decay 0 by default) with
layer-wise learning-rate decay, 10% linear warmup then linear decay, gradient clipping 1.0, batch 32,
3 epochs (10 for RTE and STS-B); evaluation on dev at the end. Finished trials are kept in
`<model_dir>/trial_<k>/results.json`, so a killed run resumes with the next unfinished trial.
"""
import dataclasses
import json
import math
import os
from typing import Callable, Dict, List

import numpy as np
import tensorflow as tf

from official_rtd.data import records
from official_rtd.data import tokenizer as tokenizer_lib
from official_rtd.data import vocab as vocab_lib
from official_rtd.finetune import classifier
from official_rtd.finetune import configs
from official_rtd.finetune import glue_data
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import trials as trials_lib
from official_rtd.training import export
from official_rtd.training import precision

LONG_TASKS = ("rte", "sts-b")  # 10 epochs instead of 3


GlueConfig = configs.GlueConfig


def encode(examples: List[glue_data.Example], tokenizer: tokenizer_lib.WordPieceTokenizer,
           max_seq_length: int, swap: bool = False) -> Dict[str, np.ndarray]:
  """`[CLS] a [SEP] (b [SEP])` ids, longest-first truncation; `swap` puts b first."""
  vocab = tokenizer.vocab
  firsts = tokenizer.tokenize_to_lists([e.text_b if swap else e.text_a for e in examples])
  has_b = examples[0].text_b is not None
  seconds = (tokenizer.tokenize_to_lists([e.text_a if swap else e.text_b for e in examples])
             if has_b else [[] for _ in examples])
  n = len(examples)
  ids = np.full([n, max_seq_length], vocab.pad_id, np.int32)
  types = np.zeros([n, max_seq_length], np.int32)
  for row, (a, b) in enumerate(zip(firsts, seconds)):
    budget = max_seq_length - (3 if has_b else 2)
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
      (a if len(a) >= len(b) else b).pop()
    tokens = [vocab.cls_id, *a, vocab.sep_id] + ([*b, vocab.sep_id] if has_b else [])
    ids[row, :len(tokens)] = tokens
    types[row, len(a) + 2:len(tokens)] = 1
  return {"input_word_ids": ids, "input_mask": (ids != vocab.pad_id).astype(np.int32),
          "input_type_ids": types}


class GlueRunner:
  """Loads data and the export once, then runs trials."""

  def __init__(self, config: GlueConfig, log: Callable[[str], None] = print):
    self.config = config
    self.log = log
    self.task = glue_data.get_task(config.task)
    if bool(config.data_dir) == bool(config.tfds_data_dir):
      raise ValueError("give exactly one of --data_dir (GLUE TSV files) and --tfds_data_dir")
    trials_lib.check_convention(config.lr_decay_convention)
    precision.check(config.mixed_precision)
    precision.warn_if_emulated(config.mixed_precision, log)
    if config.double_unordered and self.task.name not in ("mrpc", "sts-b"):
      raise ValueError("--double_unordered applies to MRPC and STS-B only")
    self.export_config = export.read_export_config(config.init_checkpoint)
    encoder = self.export_config["encoder"]
    if config.max_seq_length > encoder["max_position_embeddings"]:
      raise ValueError(f"--max_seq_length={config.max_seq_length} exceeds the encoder's "
                       f"max_position_embeddings {encoder['max_position_embeddings']}")
    size = trials_lib.model_size(encoder, config.model_size)
    default_lr, default_decay = trials_lib.SIZE_DEFAULTS[size]
    self.learning_rate = config.learning_rate or default_lr
    self.decay = config.layerwise_lr_decay or default_decay
    self.epochs = config.num_train_epochs or (10 if self.task.name in LONG_TASKS else 3)
    self.vocab = vocab_lib.load_vocab(os.path.join(config.init_checkpoint, export.VOCAB_NAME))
    self.tokenizer = tokenizer_lib.WordPieceTokenizer(
        self.vocab, self.export_config.get("do_lower_case", True))
    load = (glue_data.load_tfds_split if config.tfds_data_dir else glue_data.load_split)
    source = config.tfds_data_dir or config.data_dir
    self.train_examples = load(source, self.task, "train")[0][1]
    if config.max_train_examples:
      rng = np.random.default_rng(config.seed)
      keep = rng.permutation(len(self.train_examples))[:config.max_train_examples]
      self.train_examples = [self.train_examples[i] for i in sorted(keep)]
    self.dev_splits = load(source, self.task, "dev")
    self.test_splits = load(source, self.task, "test") if config.do_predict else []
    log(f"run_glue: {self.task.name}, {len(self.train_examples)} train examples, "
        f"{size} defaults: lr {self.learning_rate:g}, layer-wise decay {self.decay} "
        f"({config.lr_decay_convention} convention), {self.epochs:g} epochs, "
        f"{config.num_trials} trial(s)")

  # --- one trial ---------------------------------------------------------------------------------
  def _build(self, trial: int, num_steps: int):
    def make_model(encoder):
      model = classifier.SequenceClassifier(encoder, self.task.num_classes, name="glue")
      model({k: v[:1] for k, v in encode(self.train_examples[:1], self.tokenizer, 8).items()})
      return model

    return trials_lib.build_trial_model(self.config, trial, self.learning_rate, self.decay,
                                        num_steps, make_model)

  def _train_features(self):
    features = encode(self.train_examples, self.tokenizer, self.config.max_seq_length)
    labels = np.array(glue_data.labels_of(self.train_examples), np.float32)
    if self.config.double_unordered:
      swapped = encode(self.train_examples, self.tokenizer, self.config.max_seq_length, swap=True)
      features = {k: np.concatenate([features[k], swapped[k]]) for k in features}
      labels = np.concatenate([labels, labels])
    return features, labels

  def run_trial(self, trial: int) -> dict:
    cfg = self.config
    features, labels = self._train_features()
    steps_per_epoch = max(len(labels) // cfg.train_batch_size, 1)
    num_steps = int(math.ceil(steps_per_epoch * self.epochs))
    model, optimizer = self._build(trial, num_steps)
    dataset = (tf.data.Dataset.from_tensor_slices((features, labels))
               .shuffle(len(labels), seed=cfg.seed + trial).repeat()
               .batch(cfg.train_batch_size, drop_remainder=True).prefetch(2))
    final_loss = trials_lib.train(
        model, optimizer, dataset, num_steps,
        lambda m, batch: classifier.loss(m(batch[0], training=True), batch[1]),
        self.log, cfg.log_every_steps, f"trial {trial + 1}/{cfg.num_trials}", cfg.jit_compile)
    result = {"trial": trial, "seed": cfg.seed + trial, "train_steps": num_steps,
              "final_train_loss": final_loss, "dev": {}}
    for split, examples in self.dev_splits:
      predictions = self.predict(model, examples)
      result["dev"][split] = metrics_lib.task_metrics(
          self.task.name, glue_data.labels_of(examples), predictions)
    result["test_predictions"] = {split: np.asarray(self.predict(model, examples)).tolist()
                                  for split, examples in self.test_splits}
    return result

  def predict(self, model, examples) -> List[float]:
    """Class indices, or scores for STS-B; with `double_unordered` both orders are averaged."""
    orders = [False, True] if self.config.double_unordered else [False]
    regression = self.task.is_regression

    def scores_of(batch):
      out = model(batch, training=False)
      return {"scores": out["predictions"] if regression else tf.nn.softmax(out["logits"])}

    total = None
    for swap in orders:
      features = encode(examples, self.tokenizer, self.config.max_seq_length, swap=swap)
      scores = trials_lib.predict(scores_of, features, self.config.eval_batch_size, self.log,
                                  f"predicting {len(examples)} examples")["scores"]
      total = scores if total is None else total + scores
    scores = total / len(orders)
    return scores.tolist() if self.task.is_regression else scores.argmax(-1).tolist()

  # --- all trials --------------------------------------------------------------------------------
  def run(self) -> dict:
    cfg = self.config
    trials = trials_lib.run_trials(cfg.model_dir, cfg.num_trials, self.run_trial, self.log,
                                   lambda result: json.dumps(result["dev"]))
    summary = self._summarize(trials)
    records.write_json_atomic(os.path.join(cfg.model_dir, "eval_results.json"), summary)
    if cfg.do_predict:
      self._write_submission(trials)
    return summary

  def _summarize(self, trials) -> dict:
    median, spread = {}, {}
    for split in trials[0]["dev"]:
      median[split], spread[split] = trials_lib.median_and_spread([t["dev"][split] for t in trials])
    primary = metrics_lib.PRIMARY[self.task.name]
    return {"task": self.task.name, "init_checkpoint": os.path.abspath(self.config.init_checkpoint),
            "random_init": self.config.random_init, "primary_metric": primary,
            "median": median, "spread": spread,
            "trials": [{k: v for k, v in t.items() if k != "test_predictions"} for t in trials],
            "flags": dataclasses.asdict(self.config),
            "resolved": {"learning_rate": self.learning_rate, "layerwise_lr_decay": self.decay,
                         "num_train_epochs": self.epochs}}

  def _write_submission(self, trials):
    """`<TASK>.tsv` (`index<TAB>prediction`) from the trial with the best dev primary metric."""
    primary = metrics_lib.PRIMARY[self.task.name]
    first_dev = next(iter(trials[0]["dev"]))
    best = max(trials, key=lambda t: t["dev"][first_dev][primary])
    for split, examples in self.test_splits:
      suffix = {"test_matched": "-m", "test_mismatched": "-mm"}.get(split, "")
      path = os.path.join(self.config.model_dir, f"{self.task.submission_name}{suffix}.tsv")
      lines = ["index\tprediction"]
      for example, value in zip(examples, best["test_predictions"][split]):
        shown = (f"{min(max(value, 0.0), 5.0):.3f}" if self.task.is_regression
                 else self.task.labels[int(value)])
        lines.append(f"{example.guid}\t{shown}")
      tmp = f"{path}.tmp-{os.getpid()}"
      with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
      os.replace(tmp, path)
      self.log(f"wrote {len(examples)} test predictions to {path}")
