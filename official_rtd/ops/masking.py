"""Masked-LM position selection and corruption, shared by static (data prep) and dynamic masking.

One implementation serves `create_pretraining_data` (static N× masks, written to records) and the
`tf.data` reader (dynamic masks on unmasked records), so both follow exactly the same policy:

* candidates are all non-special tokens (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`, `[MASK]` never are);
* `num_to_predict = clip(round(mask_prob · num_candidates), 1, max_predictions_per_seq)`
  (`rounding="ceil"`: ⌈mask_prob · num_candidates⌉, Electric's k);
* positions are chosen uniformly at random without replacement, or whole words at a time with
  `whole_word_mask` (a word is a piece plus its `##` continuations; whole words are taken in random
  order while they fit in `num_to_predict`, so a sequence can end up with slightly fewer);
* each chosen position becomes `[MASK]` with probability `p_mask`, a random non-special token with
  probability `p_random`, and keeps its token otherwise: `electra` = 85/0/15 (ELECTRA's
  `pretrain_helpers.mask`), `bert` = 80/10/10, `mask_only` = 100/0/0 (BabyBERTa, Huebner et al.
  2021: only `[MASK]`ed positions are predicted; Wettig et al. 2023: 80/10/10 costs points);
* with `final_mask_prob`, the rate moves linearly from `mask_prob` at step 0 to `final_mask_prob`
  at `schedule_steps` and stays there (a masking-rate schedule, e.g. 30% -> 15%).

All randomness is stateless (`seed` is a `[2]` int tensor), so a seed fixes the masks exactly.
"""
import dataclasses
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from official_rtd.utils import ranges

STRATEGIES = {"electra": (0.85, 0.0), "bert": (0.8, 0.1), "mask_only": (1.0, 0.0)}


# Valid values of MaskingConfig's numbers (`ranges.Range`; None, an unset final rate, passes).
MASKING_CONFIG_RANGES = {"mask_prob": (0, 1, False), "final_mask_prob": (0, 1, False),
                         "schedule_steps": (0, None, True),
                         "max_predictions_per_seq": (1, None, True)}


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
  """How many positions to mask and how to corrupt them."""
  mask_prob: float = 0.15
  max_predictions_per_seq: int = 20
  strategy: str = "electra"
  whole_word_mask: bool = False
  rounding: str = "round"
  final_mask_prob: Optional[float] = None  # None: a constant rate
  schedule_steps: int = 0  # steps (batches of one input pipeline) from mask_prob to the final rate

  def __post_init__(self):
    if self.rounding not in ("round", "ceil"):
      raise ValueError(f"rounding must be 'round' or 'ceil', got {self.rounding!r}")
    if self.strategy not in STRATEGIES:
      raise ValueError(f"mask strategy must be one of {sorted(STRATEGIES)}, got {self.strategy!r}")
    ranges.check_ranges(self, MASKING_CONFIG_RANGES, "{name}={value}")

  def rate_at(self, step) -> tf.Tensor:
    """The masking rate (float64 scalar) at `step` (a scalar tensor; None: step 0)."""
    start = tf.constant(self.mask_prob, tf.float64)
    if self.final_mask_prob is None or step is None:
      return start
    if self.schedule_steps == 0:
      return tf.constant(self.final_mask_prob, tf.float64)
    done = tf.minimum(tf.cast(step, tf.float64) / self.schedule_steps, 1.0)
    return start + (self.final_mask_prob - self.mask_prob) * done

  @property
  def p_mask(self) -> float:
    return STRATEGIES[self.strategy][0]

  @property
  def p_random(self) -> float:
    return STRATEGIES[self.strategy][1]


@dataclasses.dataclass(frozen=True)
class TokenTables:
  """Per-vocab-id facts that masking needs; build with `TokenTables.from_vocab`."""
  mask_id: int
  is_special: np.ndarray       # [vocab_size] bool
  is_continuation: np.ndarray  # [vocab_size] bool, `##` pieces

  @classmethod
  def from_vocab(cls, vocab) -> "TokenTables":
    return cls(mask_id=vocab.mask_id, is_special=vocab.is_special(),
               is_continuation=vocab.is_continuation())

  @property
  def replacement_ids(self) -> np.ndarray:
    """Ids a `bert`-strategy random replacement draws from: every non-special token."""
    return np.flatnonzero(~self.is_special)


def _word_index(candidates: tf.Tensor, continuation: tf.Tensor) -> tf.Tensor:
  """`[batch, seq_len]` index of the word each candidate token belongs to; non-candidates get
  `seq_len` (a dump slot). A `##` piece right after a non-candidate starts its own word."""
  seq_len = tf.shape(candidates)[1]
  prev_candidate = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
  word_start = candidates & (~continuation | ~prev_candidate)
  index = tf.cumsum(tf.cast(word_start, tf.int32), axis=1) - 1
  return tf.where(candidates, index, seq_len)


def _scatter_rows(values: tf.Tensor, index: tf.Tensor, width) -> tf.Tensor:
  """`[batch, width]` zeros plus `values[b, j]` at `out[b, index[b, j]]` (repeated indices add).

  A sparse `scatter_nd`: masking runs on the host (data prep, `tf.data`), where the dense one-hot
  `sampling.scatter_positions` (built for TPU) gives the same masks but makes the op 55% slower.
  """
  rows = tf.broadcast_to(tf.range(tf.shape(index)[0])[:, tf.newaxis], tf.shape(index))
  out = tf.scatter_nd(tf.stack([rows, index], -1), tf.cast(values, tf.int32),
                      tf.stack([tf.shape(index)[0], width]))
  return tf.cast(out, values.dtype)


def mask_tokens(input_word_ids: tf.Tensor, config: MaskingConfig, tables: TokenTables,
                seed: tf.Tensor, step: Optional[tf.Tensor] = None) -> Dict[str, tf.Tensor]:
  """Selects and corrupts masked-LM positions.

  Args:
    input_word_ids: `[batch, seq_len]` (or `[seq_len]`) token ids, padded with `[PAD]`.
    config: the masking policy.
    tables: vocab facts (`TokenTables.from_vocab`).
    seed: `[2]` int seed for the stateless random ops.
    step: the training step (scalar), for a masking-rate schedule (`config.final_mask_prob`).

  Returns:
    dict with `input_word_ids` (corrupted, same shape/dtype), `masked_lm_positions` and
    `masked_lm_ids` (`[batch, max_predictions_per_seq]`, ascending positions, zero padded) and
    `masked_lm_weights` (`[batch, max_predictions_per_seq]` float32, 1 for real predictions).
  """
  ids = tf.convert_to_tensor(input_word_ids)
  unbatched = ids.shape.rank == 1
  if unbatched:
    ids = ids[tf.newaxis]
  batch, seq_len = tf.shape(ids)[0], tf.shape(ids)[1]
  num_predictions = config.max_predictions_per_seq
  seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3)

  candidates = ~tf.gather(tf.constant(tables.is_special), ids)
  if config.whole_word_mask:
    continuation = tf.gather(tf.constant(tables.is_continuation), ids)
  else:
    continuation = tf.zeros_like(candidates)
  word = _word_index(candidates, continuation)  # [batch, seq_len]

  num_candidates = tf.reduce_sum(tf.cast(candidates, tf.float64), axis=1)  # float64: exact ⌈·⌉
  rounded = tf.math.ceil if config.rounding == "ceil" else tf.round
  num_to_predict = tf.cast(rounded(num_candidates * config.rate_at(step)), tf.int32)
  num_to_predict = tf.clip_by_value(num_to_predict, 1, num_predictions)
  num_to_predict = tf.minimum(num_to_predict, tf.cast(num_candidates, tf.int32))

  # Word lengths per row ([batch, seq_len]; word w of a row is its w-th word, 0 past the last).
  if config.whole_word_mask:
    row_offset = tf.range(batch)[:, tf.newaxis] * (seq_len + 1)  # slot seq_len: non-candidates
    word_length = tf.math.unsorted_segment_sum(
        tf.ones_like(word), word + row_offset, batch * (seq_len + 1))
    word_length = tf.reshape(word_length, [batch, seq_len + 1])[:, :seq_len]
  else:  # every candidate is a word of one token
    word_count = tf.cast(num_candidates, tf.int32)[:, tf.newaxis]
    word_length = tf.cast(tf.range(seq_len)[tf.newaxis] < word_count, tf.int32)

  # Visit words in random order; keep them while the running token count fits. Every word has at
  # least one token, so only the first max_predictions_per_seq words of the order can be kept: a
  # top-k (ties to the lower index, as a stable argsort) instead of a full sort.
  score = tf.random.stateless_uniform([batch, seq_len], seeds[0])
  score = tf.where(word_length > 0, score, 2.0)
  _, order = tf.math.top_k(-score, k=tf.minimum(num_predictions, seq_len))  # [batch, k]
  sorted_length = tf.gather(word_length, order, batch_dims=1)
  keep_sorted = ((tf.cumsum(sorted_length, axis=1) <= num_to_predict[:, tf.newaxis])
                 & (sorted_length > 0))
  keep_word = _scatter_rows(keep_sorted, order, seq_len)
  keep_word = tf.pad(keep_word, [[0, 0], [0, 1]])  # the dump slot is never kept
  selected = tf.gather(keep_word, word, batch_dims=1)  # [batch, seq_len]

  # Ascending selected positions, zero padded to max_predictions_per_seq (at most that many are
  # selected): selected position p goes to slot "number of selected positions before p".
  slot = tf.cumsum(tf.cast(selected, tf.int32), axis=1, exclusive=True)
  slot = tf.where(selected, slot, num_predictions)  # unselected positions go to a dropped column
  masked_lm_positions = _scatter_rows(tf.broadcast_to(tf.range(seq_len), tf.shape(slot)), slot,
                                      num_predictions + 1)[:, :num_predictions]
  num_selected = tf.reduce_sum(tf.cast(selected, tf.int32), axis=1)
  is_real = tf.range(num_predictions)[tf.newaxis] < num_selected[:, tf.newaxis]
  masked_lm_ids = tf.where(is_real, tf.gather(ids, masked_lm_positions, batch_dims=1), 0)

  # Corruption: [MASK] w.p. p_mask, random token w.p. p_random, else unchanged.
  choice = tf.random.stateless_uniform([batch, seq_len], seeds[1])
  use_mask = selected & (choice < config.p_mask)
  corrupted = ids
  if config.p_random > 0:
    use_random = selected & (choice >= config.p_mask) & (choice < config.p_mask + config.p_random)
    replacement_ids = tf.constant(tables.replacement_ids, dtype=ids.dtype)
    random_ids = tf.gather(replacement_ids, tf.random.stateless_uniform(
        [batch, seq_len], seeds[2], maxval=tf.shape(replacement_ids)[0], dtype=tf.int32))
    corrupted = tf.where(use_random, random_ids, corrupted)
  corrupted = tf.where(use_mask, tf.cast(tables.mask_id, ids.dtype), corrupted)

  out = {
      "input_word_ids": corrupted,
      "masked_lm_positions": tf.cast(masked_lm_positions, ids.dtype),
      "masked_lm_ids": masked_lm_ids,
      "masked_lm_weights": tf.cast(is_real, tf.float32),
  }
  if unbatched:
    out = {k: v[0] for k, v in out.items()}
  return out
