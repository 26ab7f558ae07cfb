"""What a CVT run reads once and every trial draws from: the tasks (`--tasks`), the vocabulary
(labeled words, pre-trained vectors' words, unlabeled text's frequent words), the word vectors, the
encoded labeled and dev sentences, and the batches — labeled, task by task, and unlabeled, from
`--unlabeled_data`, the tasks' left-out training sentences, or both."""
import itertools
from typing import Callable, Dict, List, Optional

import numpy as np

from official_rtd.cvt import all_tasks  # pylint: disable=unused-import  (registers the tasks)
from official_rtd.cvt import data as data_lib
from official_rtd.cvt import settings
from official_rtd.cvt import task as task_lib


class CvtInputs:
  """Reads and encodes everything once (`config`: the run's `settings.CvtRunConfig`)."""

  def __init__(self, config: settings.CvtRunConfig, log: Callable[[str], None] = print):
    self.config, self.log = config, log
    names = [t.strip() for t in config.tasks.split(",") if t.strip()]
    if not names or len(set(names)) != len(names):
      raise ValueError(f"--tasks={config.tasks!r} must name each task once")
    unknown = [n for n in names if n not in task_lib.names()]
    if unknown:
      raise ValueError(f"--tasks: unknown {unknown}; one of: {', '.join(task_lib.names())}")
    rng = np.random.default_rng(config.seed)
    self.tasks: Dict[str, task_lib.CvtTask] = {
        n: task_lib.get(n).read(n, config, rng) for n in names}
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
      stream = self.unlabeled_stream(config.seed, passes=1)
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
    covered = self.vocab.coverage(unlabeled_counts)
    self.description = (
        ", ".join(t.describe() for t in self.tasks.values())
        + f"; {len(self.vocab.words)} words ({len(pretrained)} pre-trained vectors; "
        f"{len(unlabeled)} unlabeled sentences read for the vocabulary, {covered:.1%} of their "
        f"words in it)")

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

  def batch(self, name: str, indices):
    task = self.tasks[name]
    batch = data_lib.pad_batch([self.encoded[name][i] for i in indices])
    return batch.inputs(), task.pad_targets([self.target_ids[name][i] for i in indices])

  def building_batch(self):
    """(inputs, {task: targets}): two sentences of the first task, with every task's targets
    shaped for them (`targets_for`), on which the steps create their variables."""
    first = next(iter(self.tasks))
    inputs, _ = self.batch(first, [0, min(1, len(self.encoded[first]) - 1)])
    return inputs, {n: self.targets_for(n, inputs) for n in self.tasks}

  def targets_for(self, name: str, inputs):
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

  def labeled_batches(self, trial: int):
    """Endless (task, inputs, targets): a task uniformly at random, then the next batch of its
    sentences in random batches, epoch after epoch.

    Not batched by length, unlike the unlabeled stream: with labeled batches of one length each
    (`data.length_batches`) CVT's parser stalled (UD EWT, LSTMs 200/100: dev LAS 0.02 after 250
    steps against 0.38 with random labeled batches and length-batched unlabeled ones; all random:
    0.32; the version before length batches: 0.37)."""
    rng = np.random.default_rng(self.config.seed + trial)
    queues = {t: [] for t in self.task_names}
    size = self.config.train_batch_size
    while True:
      name = self.task_names[int(rng.integers(len(self.task_names)))]
      if not queues[name]:
        order = rng.permutation(len(self.encoded[name])).tolist()
        queues[name] = [order[k:k + size] for k in range(0, len(order), size)]
      yield (name,) + self.batch(name, queues[name].pop())

  def streams(self, trial: int, done: int):
    """(labeled batches, unlabeled batches or None for a supervised run) of trial `trial`
    resumed after `done` steps: the labeled stream replayed exactly, the unlabeled one re-seeded
    by the step."""
    labeled = self.labeled_batches(trial)
    for _ in range(done):
      next(labeled)
    seed = self.config.seed + trial + 7919 * done
    return labeled, (self.unlabeled_batches(seed) if self.config.mode != "supervised" else None)

  def unlabeled_stream(self, seed: int, passes: Optional[int] = None):
    """Unlabeled sentences (endless, or `passes` over each source): `--unlabeled_data`'s, the
    tasks' remainder's (`--unlabeled_remainder`), or both, alternating sentence by sentence."""
    streams = []
    if self.config.unlabeled_data:
      streams.append(data_lib.unlabeled_sentences(
          self.config.unlabeled_data.split(","), self.config.max_sentence_length, seed,
          on_decode_error=self.config.on_decode_error, warn=self.log, split=self.split_unlabeled,
          passes=passes,  # a run with unlabeled steps needs at least one unlabeled batch
          min_sentences=self.config.train_batch_size if self.config.mode != "supervised" else 1))
    if self.config.unlabeled_remainder:
      streams.append(data_lib.shuffled_passes(self.remainder, seed, passes))
    return streams[0] if len(streams) == 1 else data_lib.alternate(streams)

  def unlabeled_batches(self, seed: int):
    """Endless unlabeled minibatches, length-bucketed over pools of 50 batches."""
    stream, rng = self.unlabeled_stream(seed), np.random.default_rng(seed)
    size = self.config.train_batch_size
    while True:
      pool = [self.vocab.encode(s) for s in itertools.islice(stream, size * 50)]
      for indices in data_lib.length_batches([len(w) for w, _ in pool], size, rng):
        yield data_lib.pad_batch([pool[i] for i in indices]).inputs()
