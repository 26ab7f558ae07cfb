"""Token tagging (POS, chunking, NER) with the ELECTRA fine-tuning protocol of `run_glue`.

Per trial: the exported encoder + a tagging head (`tagger.py`; `--crf` adds a linear-chain CRF,
decoded with Viterbi), AdamW with layer-wise LR decay, 10% warmup, 3 epochs; dev evaluation at the
end: token accuracy (POS) or conlleval span precision/recall/F1, overall and per type (chunk,
NER). Span tasks train on `--tag_scheme` tags (BIOES by default, as google-research/electra);
predictions are written back as IOB2, which conlleval reads next to the gold file's IOB1 or IOB2.
Finished trials are kept in `<model_dir>/trial_<k>/` (results.json, predictions.txt), so a killed
run resumes with the next unfinished trial; `<model_dir>/predictions.txt` is the best trial's.
"""
import os
from typing import Callable, List

from official_rtd.data import records
from official_rtd.finetune import configs
from official_rtd.finetune import metrics as metrics_lib
from official_rtd.finetune import tag_schemes
from official_rtd.finetune import tagger
from official_rtd.finetune import task as task_lib
from official_rtd.finetune import tagging_data
from official_rtd.finetune import trials as trials_lib
from official_rtd.ops import crf as crf_lib

PREDICTIONS_NAME = "predictions.txt"
PROTOCOLS = ("electra", "shao")
TaggingConfig = configs.TaggingConfig


@task_lib.register(*tagging_data.TASKS)
class TokenTagging(task_lib.Task):
  """Reads and encodes the data once; a trial's model is the encoder + `tagger.TokenTagger`."""

  run_name = "TaggingRunner"
  protocols = PROTOCOLS
  published = (PREDICTIONS_NAME,)

  def __init__(self, config: TaggingConfig, export, log: Callable[[str], None]):
    super().__init__(config, export, log)
    self.spec = tagging_data.get_task(config.task)
    if config.protocol == "shao":
      if self.spec.name != "pos":
        raise ValueError(f"--protocol=shao is Shao's PTB part-of-speech protocol; --task="
                         f"{self.spec.name} has none (use --protocol=electra)")
      self.default_epochs = trials_lib.PROTOCOL_EPOCHS["shao"]
    if config.tag_scheme not in tag_schemes.SCHEMES:
      raise ValueError(f"--tag_scheme must be one of {tag_schemes.SCHEMES}")
    self.check_max_seq_length()
    if config.max_seq_length < 3:
      raise ValueError(f"--max_seq_length={config.max_seq_length} leaves no room for a word")
    if config.window_stride < 0:
      raise ValueError(f"--window_stride={config.window_stride} must be >= 0 (0: half a window)")
    self.primary_metric = "f1" if self.spec.spans else "accuracy"
    train, self.dev_sentences = tagging_data.load_task(
        self.spec, config.data_dir, config.label_column, config.train_file, config.dev_file,
        config.carve_dev_sentences)
    train = self.subset(train)
    self.check_dev_tags(train)
    if self.spec.spans:
      train = tagging_data.with_scheme(train, config.tag_scheme)
    self.labels = sorted({tag for sentence in train for tag in sentence.tags})
    label_ids = {tag: i for i, tag in enumerate(self.labels)}
    self.train_windows = tagging_data.encode(train, self.tokenizer, config.max_seq_length,
                                             label_ids, config.window_stride)
    self.dev_windows = tagging_data.encode(self.dev_sentences, self.tokenizer,
                                           config.max_seq_length, label_ids, config.window_stride)
    self.train_sentences = train

  def describe(self) -> str:
    cfg = self.config
    words = sum(len(s.words) for s in self.train_sentences)
    return (f"run_tagging ({cfg.protocol} protocol): {self.spec.name}, "
            f"{len(self.train_sentences)} train sentences ({words} words) -> "
            f"{len(self.train_windows)} windows, {len(self.dev_sentences)} dev sentences -> "
            f"{len(self.dev_windows)} windows, {len(self.labels)} tags"
            f"{' (' + cfg.tag_scheme + ')' if self.spec.spans else ''}"
            f"{', CRF' if cfg.crf else ''}")

  def check_dev_tags(self, train):
    """Dev tags (span types) absent from the training sentences are refused, or with
    --allow_unseen_dev_tags logged: the model cannot predict them, so they count as errors."""
    unseen = tagging_data.unseen_dev_tags(train, self.dev_sentences, self.spec.spans)
    if not unseen:
      return
    what = "span types" if self.spec.spans else "tags"
    listed = ", ".join(f"{tag} ({n})" for tag, n in list(unseen.items())[:8])
    subset = (f" (the --max_train_examples={self.config.max_train_examples} used)"
              if self.config.max_train_examples else "")
    if not self.config.allow_unseen_dev_tags:
      raise ValueError(f"dev {what} never seen in the training sentences{subset}: {listed} (dev "
                       "tokens); the model cannot predict them. Use training data that has them, "
                       "or --allow_unseen_dev_tags to count them as errors")
    self.log(f"run_tagging: dev {what} unseen in training{subset}, counted as errors: {listed}")

  # --- training ----------------------------------------------------------------------------------
  def train_arrays(self):
    return self.train_windows.inputs, self.train_windows.word_labels

  def build_model(self, encoder):
    model = tagger.TokenTagger(encoder, len(self.labels), crf=self.config.crf, name="tagging")
    model({k: v[:1] for k, v in self.train_windows.inputs.items()})
    return model

  def loss(self, model, batch, progress):
    del progress  # unused
    return tagger.loss(model, model(batch[0], training=True), batch[1],
                       batch[0]["word_lengths"])

  # --- evaluation --------------------------------------------------------------------------------
  def evaluate(self, model, trial_dir):
    predicted = self.predict(model)
    if trial_dir is not None:
      write_predictions(os.path.join(trial_dir, PREDICTIONS_NAME), self.dev_sentences, predicted)
    return evaluate(self.spec, self.dev_sentences, predicted)

  def brief(self, dev) -> str:
    return f"{self.primary_metric}={dev[self.primary_metric]:.4f}"

  def predict(self, model) -> List[List[str]]:
    """Each dev sentence's predicted tags (IOB2 for span tasks)."""
    logits = trials_lib.predict(lambda batch: model(batch, training=False),
                                self.dev_windows.inputs, self.config.eval_batch_size, self.log,
                                f"tagging {len(self.dev_windows)} windows")["word_logits"]
    lengths = self.dev_windows.inputs["word_lengths"]
    if model.crf:
      transitions = model.transitions.numpy()
      ids = [crf_lib.viterbi_decode(row[:n], transitions) for row, n in zip(logits, lengths)]
    else:
      ids = [row[:n].argmax(-1) for row, n in zip(logits, lengths)]
    by_sentence = tagging_data.words_by_sentence(self.dev_windows, ids, self.dev_sentences)
    return output_tags(self.spec, [[self.labels[i] for i in row] for row in by_sentence])

  def summary_fields(self, median):
    return {"task": self.spec.name, "labels": self.labels}


def output_tags(task: tagging_data.TaggingTask, tags: List[List[str]]) -> List[List[str]]:
  """Predicted tags as written and scored: IOB2 for span tasks (conlleval reads it next to the
  gold file's IOB1 or IOB2), unchanged for POS."""
  return [tag_schemes.convert(row, "iob2") for row in tags] if task.spans else tags


def evaluate(task: tagging_data.TaggingTask, sentences, predicted: List[List[str]]) -> dict:
  """Token accuracy (POS), or overall span precision/recall/F1 and `f1_<type>` per type."""
  gold = [s.tags for s in sentences]
  if not task.spans:
    return {"accuracy": metrics_lib.accuracy([t for s in gold for t in s],
                                             [t for s in predicted for t in s])}
  spans = metrics_lib.span_metrics(gold, predicted)
  out = {k: spans["overall"][k] for k in ("precision", "recall", "f1")}
  out.update({f"f1_{kind}": values["f1"] for kind, values in spans["per_type"].items()})
  return out


def write_predictions(path: str, sentences, predicted: List[List[str]]):
  """`word gold predicted` lines, a blank line after each sentence: the input of `conlleval`."""
  lines = []
  for sentence, tags in zip(sentences, predicted):
    lines.extend(f"{w} {g} {p}" for w, g, p in zip(sentence.words, sentence.tags, tags))
    lines.append("")
  records.write_lines_atomic(path, lines)

