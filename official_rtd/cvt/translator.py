"""CVT for sequence-to-sequence learning (dissertation §4.2.4): translation with an LSTM
encoder–decoder and bilinear attention (Luong et al., 2015), on the shared CNN-BiLSTM encoder.

Source states h^j = h1_j ⊕ h2_j (the encoder's top). The decoder LSTM (an LSTMP, like the
encoder's) reads the previous target word's embedding; its state h̄^t feeds each decoder's
  attention   α_j ∝ exp(h^j W_α h̄^t),  c_t = Σ_j α_j h^j
              a_t = tanh(W_a [c_t, h̄_t])                       (dropout on h̄_t, the LSTM output)
  softmax     p(y^t | y^<t, x) = softmax(W_s a_t)
Auxiliary decoders share the embeddings and the LSTM with the primary one, each with its own
attention and softmax:
  attention   the same, with a fraction (`attention_dropout`) of α zeroed (not renormalised)
  future      p_future(y^t | y^<t, x) = softmax(W_s^future a^future_{t−1}): the state that has
              read y^<t−1 predicts y^t, one word further than the primary
On unlabeled source sentences the primary decoder's beam search gives hard targets for both
(label smoothing 0.1 on them). Target words seen 5 or fewer times in training are UNK in training
only. Multi30k's raw text is tokenized with sacremoses (Moses) and predictions are detokenized;
BLEU is sacrebleu's: its standard signature on the detokenized output and the tokenized BLEU the
paper reports (Moses tokens, no further tokenization).
"""
import collections
import functools
import os
from typing import Dict, List, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from official_rtd.utils import textio
from official_rtd.cvt import data as data_lib
from official_rtd.cvt import encoder as encoder_lib
from official_rtd.cvt import losses
from official_rtd.cvt import task as task_lib

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SOURCE, TARGET = "en", "de"


@functools.lru_cache(maxsize=None)
def _moses(language: str):
  import sacremoses  # pylint: disable=g-import-not-at-top
  return sacremoses.MosesTokenizer(lang=language), sacremoses.MosesDetokenizer(lang=language)


def tokenize(line: str, language: str) -> List[str]:
  """Moses tokens of raw text (no HTML escaping, so `&` stays `&`)."""
  return _moses(language)[0].tokenize(line.strip(), escape=False)


def detokenize(tokens: Sequence[str], language: str) -> str:
  return _moses(language)[1].detokenize(list(tokens))


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> Dict[str, object]:
  """sacrebleu's corpus BLEU on detokenized text (its default 13a tokenization, with the
  signature) and on Moses-tokenized text as is (`tokenize="none"`: the paper's tokenized BLEU)."""
  import sacrebleu  # pylint: disable=g-import-not-at-top
  metric = sacrebleu.metrics.BLEU()
  detokenized = metric.corpus_score(list(hypotheses), [list(references)])
  tokenized = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(
      [" ".join(tokenize(h, TARGET)) for h in hypotheses],
      [[" ".join(tokenize(r, TARGET)) for r in references]])
  return {"bleu": detokenized.score, "tokenized_bleu": tokenized.score,
          "signature": str(metric.get_signature())}


class TargetVocab:
  """Target words: `<pad>`, `<unk>`, `<s>`, `</s>`, then the training words seen more than
  `min_count − 1` times (the rest are UNK when training)."""

  def __init__(self, words: Sequence[str]):
    self.words = list(words)
    self.ids = {w: i for i, w in enumerate(self.words)}

  @classmethod
  def build(cls, sentences: Sequence[Sequence[str]], min_count: int):
    counts = collections.Counter(w for s in sentences for w in s)
    return cls([PAD, UNK, BOS, EOS] + sorted(w for w, n in counts.items() if n >= min_count))

  def encode(self, tokens: Sequence[str]) -> List[int]:
    """Ids of `tokens` followed by `</s>`."""
    return [self.ids.get(t, 1) for t in tokens] + [self.ids[EOS]]

  def decode(self, ids: Sequence[int]) -> List[str]:
    """Tokens up to (not including) the first `</s>`."""
    out = []
    for i in ids:
      if i == self.ids[EOS]:
        break
      out.append(self.words[i])
    return out


class Attention(tf_keras.layers.Layer):
  """One decoder's bilinear attention and softmax: `call(memory, memory_mask, h, drop_rate)`
  with memory `[batch, src, width]`, h `[batch, tgt, dec]` → (logits `[batch, tgt, vocab]`,
  α `[batch, tgt, src]`)."""

  def __init__(self, hidden_size: int, vocab_size: int, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size, self.vocab_size = hidden_size, vocab_size

  def build(self, input_shape):
    width, dec = input_shape[0][-1], input_shape[1][-1]
    self.w_alpha = self.add_weight("w_alpha", [width, dec], initializer="glorot_uniform")
    self.w_a = self.add_weight("w_a", [width + dec, self.hidden_size], initializer="glorot_uniform")
    self.w_s = self.add_weight("w_s", [self.hidden_size, self.vocab_size], initializer="glorot_uniform")
    self.b_s = self.add_weight("b_s", [self.vocab_size], initializer="zeros")
    super().build(input_shape)

  def call(self, inputs, memory_mask=None, attention_dropout: float = 0.0):
    memory, h = inputs
    scores = tf.einsum("bjw,wd,btd->btj", memory, self.w_alpha, h)  # h^j W_α h̄^t
    scores += (1.0 - tf.cast(memory_mask, scores.dtype))[:, None, :] * -1e9
    alpha = tf.nn.softmax(scores, -1)
    if attention_dropout > 0:  # zero a fraction of the attention weights
      alpha *= tf.cast(tf.random.uniform(tf.shape(alpha)) >= attention_dropout, alpha.dtype)
    context = tf.matmul(alpha, memory)  # c_t = Σ_j α_j h^j
    a = tf.tanh(tf.matmul(tf.concat([context, h], -1), self.w_a))  # a_t = tanh(W_a [c_t, h̄_t])
    return tf.matmul(a, self.w_s) + self.b_s, alpha  # W_s a_t


class TranslatorModules(tf_keras.layers.Layer):
  """Target embeddings, the decoder LSTMP and the three decoders' attention/softmax layers.

  `call(states, lengths, prev_targets, dropout_rate, names, attention_dropout)` runs the decoder
  with teacher forcing on `prev_targets` `[batch, tgt]` (`<s>` then y^1..y^{K−1}) and returns
  `{decoder: logits [batch, tgt, vocab]}`; `step` is one step of the primary decoder for
  search."""

  def __init__(self, config, vocab_size: int, **kwargs):
    super().__init__(**kwargs)
    self.units, self.projection = config.lstm1_size, config.projection_size
    self.embedding = tf_keras.layers.Embedding(vocab_size, config.word_dim, name="embedding")
    self.decoders = {name: Attention(config.hidden_size, vocab_size, name=name)
                     for name in ("primary", "attention_dropout", "future")}

  def build(self, input_shape):
    dim = self.embedding.output_dim
    self.input_kernel = self.add_weight("input_kernel", [1, dim, 4 * self.units],
                                        initializer="glorot_uniform")
    self.recurrent_kernel = self.add_weight("recurrent_kernel",
                                            [1, self.projection, 4 * self.units],
                                            initializer="glorot_uniform")
    self.bias = self.add_weight("bias", [1, 1, 4 * self.units], initializer="zeros")
    self.projection_kernel = self.add_weight("projection_kernel",
                                             [1, self.units, self.projection], initializer="glorot_uniform")
    super().build(input_shape)

  @staticmethod
  def memory(states):
    """Source states h^j `[batch, src, 4·projection]`."""
    return tf.concat([states["h1"], states["h2"]], -1)

  def decoder_states(self, prev_targets, target_lengths, dropout_rate: float):
    """h̄ `[batch, tgt, projection]` after reading each previous target word (teacher forcing)."""
    x = self.embedding(prev_targets)  # [batch, tgt, dim]
    h = encoder_lib.run_lstmp(x[None], tf.sequence_mask(target_lengths, tf.shape(x)[1]),
                              self.input_kernel, self.bias, self.recurrent_kernel,
                              self.projection_kernel)
    return encoder_lib.dropout(h[0], dropout_rate)

  def call(self, states, lengths, prev_targets=None, target_lengths=None,
           dropout_rate: float = 0.0, names: Sequence[str] = ("primary",),
           attention_dropout: float = 0.0):
    memory = encoder_lib.dropout(self.memory(states), dropout_rate)
    memory_mask = tf.sequence_mask(lengths, tf.shape(memory)[1])
    h = self.decoder_states(prev_targets, target_lengths, dropout_rate)
    out = {}
    for name in names:
      rate = attention_dropout if name == "attention_dropout" else 0.0
      out[name] = self.decoders[name]((memory, h), memory_mask, rate)[0]
    return out

  def step(self, memory, memory_mask, prev_word, r, c):
    """One primary-decoder step for search: `prev_word` `[n]`, state r `[n, projection]`, c
    `[n, units]` → (log p(y | ·) `[n, vocab]`, r, c)."""
    x = self.embedding(prev_word)
    gates = tf.matmul(x[None], self.input_kernel) + self.bias  # [1, n, 4·units]
    r, c = encoder_lib.lstmp_cell(gates, r[None], c[None], self.recurrent_kernel,
                                  self.projection_kernel)
    logits, _ = self.decoders["primary"]((memory, r[0][:, None]), memory_mask)
    return tf.nn.log_softmax(logits[:, 0]), r[0], c[0]


def beam_search(modules: TranslatorModules, memory, memory_mask, beam_size: int,
                max_length: int, bos: int, eos: int, banned: Sequence[int] = ()):
  """The primary decoder's beam search: at each step every live hypothesis is extended by every
  word but the `banned` ones and the `beam_size` best by total log-probability are kept; a
  hypothesis ends at `</s>` (kept with its score) or after `max_length` words. Returns (tokens
  `[batch, max_length]`, lengths `[batch]` including `</s>` when reached, scores `[batch]`) of
  the best hypothesis."""
  batch = tf.shape(memory)[0]
  k = beam_size
  tile = lambda x: tf.repeat(x, k, axis=0)  # [batch, ...] → [batch·k, ...]
  memory_k, mask_k = tile(memory), tile(memory_mask)
  vocab = modules.decoders["primary"].vocab_size
  r = tf.zeros([batch * k, modules.projection], memory.dtype)
  c = tf.zeros([batch * k, modules.units], memory.dtype)
  # Only the first copy of each beam is live at the start, so no hypothesis is found k times.
  scores = tf.tile(tf.concat([[0.0], tf.fill([k - 1], -1e9)], 0)[None], [batch, 1])
  tokens = tf.zeros([batch, k, max_length], tf.int32)
  finished = tf.zeros([batch, k], tf.bool)
  prev = tf.fill([batch * k], bos)
  eos_row = tf.one_hot(eos, vocab, on_value=0.0, off_value=-1e9)  # a finished beam stays as is
  ban = tf.reduce_sum(tf.one_hot(list(banned), vocab, on_value=-1e9, off_value=0.0), 0
                      ) if banned else tf.zeros([vocab])

  def body(t, prev, r, c, scores, tokens, finished):
    log_p, r, c = modules.step(memory_k, mask_k, prev, r, c)
    log_p = tf.reshape(log_p, [batch, k, vocab]) + ban
    log_p = tf.where(finished[..., None], eos_row[None, None], log_p)
    total = tf.reshape(scores[..., None] + log_p, [batch, k * vocab])
    scores, best = tf.math.top_k(total, k)
    parent, word = best // vocab, best % vocab
    gather = lambda x: tf.gather(x, parent, batch_dims=1)
    tokens = gather(tokens)
    tokens = tf.where(tf.one_hot(t, max_length, on_value=True, off_value=False)[None, None],
                      word[..., None], tokens)
    was_finished = gather(finished)
    finished = was_finished | tf.equal(word, eos)
    flat_parent = tf.reshape(parent + tf.range(batch)[:, None] * k, [-1])
    r, c = tf.gather(r, flat_parent), tf.gather(c, flat_parent)
    return t + 1, tf.reshape(word, [-1]), r, c, scores, tokens, finished

  _, _, _, _, scores, tokens, finished = tf.while_loop(
      lambda t, prev, r, c, scores, tokens, finished: (t < max_length) & ~tf.reduce_all(finished),
      body, (0, prev, r, c, scores, tokens, finished))
  best = tf.argmax(scores, -1, output_type=tf.int32)
  tokens = tf.gather(tokens, best, batch_dims=1)
  is_eos = tf.equal(tokens, eos)
  first_eos = tf.argmax(tf.cast(is_eos, tf.int32), -1, output_type=tf.int32)
  lengths = tf.where(tf.reduce_any(is_eos, -1), first_eos + 1, max_length)
  return tokens, lengths, tf.gather(scores, best, batch_dims=1)


def shifted(targets, bos: int):
  """Teacher forcing inputs: `<s>` followed by the targets without their last word."""
  return tf.concat([tf.fill([tf.shape(targets)[0], 1], bos), targets[:, :-1]], 1)


def split_lines(line: str, max_words: int) -> List[List[str]]:
  """An unlabeled source line's sentences as Moses tokens, each kept if 2..max_words long: one
  sentence per line, as Multi30k's captions; a line holding a paragraph (Wikipedia's format) is
  split into its sentences (`data.sentence_pieces`) rather than dropped for its length."""
  out = []
  for sentence in data_lib.sentence_pieces(line):
    words = tokenize(sentence, SOURCE)
    if 2 <= len(words) <= max_words:
      out.append(words)
  return out


@task_lib.register("translate")
class TranslationTask(task_lib.CvtTask):
  """Multi30k-style parallel text (`--data_dir` holding translation/multi30k/ or its files:
  train.en, train.de, val.en, val.de), English → German."""
  primary_metric = "bleu"
  label_kind = "target words"
  split_unlabeled = staticmethod(split_lines)
  target_spec = {"targets": tf.TensorSpec([None, None], tf.int32),
                 "lengths": tf.TensorSpec([None], tf.int32)}

  def __init__(self, name, config, rng):
    super().__init__(name, config, rng)
    data_dir = task_lib.task_folder(config, name, [
        os.path.join(config.data_dir, "translation", "multi30k")], "translation/multi30k")
    pairs, train_lines = read_parallel(data_dir, "train", config.on_bad_pair)
    self.train = self.labeled_subset([pair for _, pair in pairs], rng, config)
    dev, self.dev_lines = read_parallel(data_dir, "val", config.on_bad_pair)
    self.dev_line_numbers = [number for number, _ in dev]
    self.dev = [pair for _, pair in dev]
    self.skipped = {"train": train_lines - len(pairs), "dev": self.dev_lines - len(dev)}
    self.vocab = TargetVocab.build([t for _, t, _ in self.train], config.target_min_count)
    self.beam_size, self.max_decode_length = config.beam_size, config.max_decode_length
    self.attention_dropout = config.attention_dropout
    self.teacher_smoothing = 0.1  # §4.3.1: label smoothing on the teacher's hard targets

  @classmethod
  def restored(cls, name, vocabulary, settings):
    task = cls.__new__(cls)
    task_lib.CvtTask.__init__(task, name, None, None)
    task.vocab = TargetVocab(vocabulary["target_words"])
    task.beam_size, task.max_decode_length = settings["beam_size"], settings["max_decode_length"]
    task.attention_dropout = settings["attention_dropout"]
    return task

  def create_variables(self, head, states, inputs):
    """Every decoder (the beam search steps them without building them)."""
    head(states, inputs["lengths"], np.zeros([1, 2], np.int32), np.array([2], np.int32),
         names=("primary", "attention_dropout", "future"))

  def predict_file(self, run, input_path, output_path, input_format, log):
    """Detokenized German of each line of raw English (an empty line stays empty)."""
    del input_format  # text only
    lines = [line.rstrip("\n") for _, line in textio.numbered_lines(input_path)]
    out = translate_lines(lines, run.vocab, run.model, self.vocab, self.beam_size,
                          self.max_decode_length, log)
    textio.write_lines_atomic(output_path, out)
    return len(out)

  def source_words(self, example):
    return example[0]

  def targets(self, example):
    return self.vocab.encode(example[1])

  @property
  def num_labels(self):
    return len(self.vocab.words)

  def vocabulary_json(self):
    return {"target_words": self.vocab.words}

  def pad_targets(self, targets):
    return {"targets": super().pad_targets(targets),
            "lengths": np.array([len(t) for t in targets], np.int32)}

  def build_head(self, config):
    return TranslatorModules(config, len(self.vocab.words), name=f"{self.name}_decoders")

  def _decoder_logits(self, head, states, inputs, targets, dropout_rate, names):
    prev = shifted(targets["targets"], self.vocab.ids[BOS])
    return head(states, inputs["lengths"], prev, targets["lengths"], dropout_rate, names,
                self.attention_dropout)

  def labeled_loss(self, head, states, inputs, targets, dropout_rate, label_smoothing):
    logits = self._decoder_logits(head, states, inputs, targets, dropout_rate, ("primary",))
    mask = tf.sequence_mask(targets["lengths"], tf.shape(targets["targets"])[1], tf.float32)
    return losses.smoothed_cross_entropy(logits["primary"], targets["targets"], mask,
                                         label_smoothing)

  def _search(self, head, states, inputs):
    """Beam search that never writes `<unk>` (nor `<pad>`, `<s>`): a teacher whose targets hold
    UNK teaches the auxiliary decoders, which share the primary's LSTM, to write UNK, and UNK
    is always wrong against a reference (measured: 0.3 BLEU at 500 steps, against 6.1
    supervised, with `<unk>` allowed)."""
    memory = TranslatorModules.memory(states)
    ids = self.vocab.ids
    return beam_search(head, memory, tf.sequence_mask(inputs["lengths"], tf.shape(memory)[1]),
                       self.beam_size, self.max_decode_length, ids[BOS], ids[EOS],
                       banned=(ids[PAD], ids[UNK], ids[BOS]))

  def teacher(self, head, states, inputs):
    tokens, lengths, _ = self._search(head, states, inputs)
    longest = tf.reduce_max(lengths)
    return {"targets": tokens[:, :longest], "lengths": lengths}

  def student_loss(self, head, states, inputs, teacher, dropout_rate, auxiliary):
    names = ("attention_dropout", "future") if auxiliary else ("primary",)
    logits = self._decoder_logits(head, states, inputs, teacher, dropout_rate, names)
    targets, lengths = teacher["targets"], teacher["lengths"]
    mask = tf.sequence_mask(lengths, tf.shape(targets)[1], tf.float32)
    loss = []
    for name in names:
      if name == "future":  # the state that read y^<t predicts y^{t+1}
        loss.append(losses.smoothed_cross_entropy(
            logits[name][:, :-1], targets[:, 1:], mask[:, 1:], self.teacher_smoothing))
      else:
        loss.append(losses.smoothed_cross_entropy(logits[name], targets, mask,
                                                  self.teacher_smoothing))
    return tf.add_n(loss)

  def predict(self, head, states, inputs):
    tokens, lengths, scores = self._search(head, states, inputs)
    return {"tokens": tokens, "lengths": lengths, "scores": scores}

  def translations(self, rows) -> List[str]:
    """Detokenized German of each predicted row."""
    return [detokenize(self.vocab.decode(row["tokens"]), TARGET) for row in rows]

  def predictions_name(self):
    return f"predictions_{self.name}.{TARGET}"

  def describe(self):
    skipped = " and ".join(f"{n} {split} pair{'s' * (n != 1)}"
                           for split, n in self.skipped.items() if n)
    return super().describe() + (f" ({skipped} with a blank side skipped, --on_bad_pair=skip)"
                                 if skipped else "")

  def evaluate(self, rows, path, log):
    """BLEU over the dev pairs; the predictions file has one line per line of `val.en` (a
    skipped pair's line empty), so line i translates line i."""
    hypotheses = self.translations(rows)
    if path:
      lines = [""] * self.dev_lines
      for number, hypothesis in zip(self.dev_line_numbers, hypotheses):
        lines[number - 1] = hypothesis
      textio.write_lines_atomic(path, lines)
    scores = bleu(hypotheses, [raw for _, _, raw in self.dev])
    log(f"{self.name}: BLEU {scores['bleu']:.2f} ({scores.pop('signature')}), tokenized BLEU "
        f"{scores['tokenized_bleu']:.2f}")
    return scores


def read_parallel(data_dir: str, split: str, on_bad_pair: str = "fail"):
  """`([(line number, (source tokens, target tokens, raw target))], lines)` of `<split>.en` /
  `<split>.de`, line i of one translating line i of the other; no pair is dropped for its length.
  A pair with a blank side fails naming `file:line`, or with `on_bad_pair="skip"` is left out
  (its line number is missing from the list; `lines` counts them all)."""
  paths = [os.path.join(data_dir, f"{split}.{lang}") for lang in (SOURCE, TARGET)]
  for path in paths:
    if not os.path.isfile(path):
      raise ValueError(f"--tasks=translate: {path} not found (--data_dir must hold "
                       f"translation/multi30k/ or {split}.{SOURCE} and {split}.{TARGET})")
  sources, targets = (textio.read_text(path).split("\n") for path in paths)
  sources, targets = (lines[:-1] if lines and not lines[-1] else lines
                      for lines in (sources, targets))
  if len(sources) != len(targets):
    raise ValueError(f"{paths[0]} has {len(sources)} lines but {paths[1]} {len(targets)}: line i "
                     "of one must translate line i of the other")
  out = []
  for number, (source, target) in enumerate(zip(sources, targets), 1):
    if not source.strip() or not target.strip():
      if on_bad_pair != "skip":
        blank = paths[0] if not source.strip() else paths[1]
        raise ValueError(f"{blank}:{number}: blank line, so the pair at line {number} of "
                         f"{split}.{SOURCE}/{split}.{TARGET} has no translation; fix the files "
                         "or pass --on_bad_pair=skip (leave such pairs out, counted in the log)")
      continue
    out.append((number, (tokenize(source, SOURCE), tokenize(target, TARGET), target.strip())))
  if not out:
    raise ValueError(f"{paths[0]}: no sentence pairs")
  return out, len(sources)


def translate_lines(lines: Sequence[str], vocab, model, target_vocab: TargetVocab,
                    beam_size: int, max_decode_length: int, log, batch_size: int = 64
                    ) -> List[str]:
  """Detokenized German of each English line (an empty line stays empty), batched by length,
  with progress and an ETA every 30 s."""
  head = model.heads["translate"]

  @tf.function
  def search(inputs):
    memory = TranslatorModules.memory(model(inputs))
    ids = target_vocab.ids
    return beam_search(head, memory, tf.sequence_mask(inputs["lengths"], tf.shape(memory)[1]),
                       beam_size, max_decode_length, ids[BOS], ids[EOS],
                       banned=(ids[PAD], ids[UNK], ids[BOS]))[:2]

  tokens = [tokenize(line, SOURCE) for line in lines]
  todo = [i for i, t in enumerate(tokens) if t]
  out = [""] * len(lines)

  def run_batch(chunk):
    ids, _ = search(data_lib.make_batch([tokens[i] for i in chunk], vocab).inputs())
    for row, i in zip(ids.numpy(), chunk):
      out[i] = detokenize(target_vocab.decode(row), TARGET)

  seconds = data_lib.run_in_length_batches(todo, lambda i: len(tokens[i]), batch_size,
                                           run_batch, log, "translated")
  log(f"translated {len(todo)} sentences in {seconds:.1f} s")
  return out
