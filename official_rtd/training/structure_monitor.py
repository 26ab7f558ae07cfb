"""Structure onset: does a pre-training run's encoder read word order yet?

On a fixed held-out batch (rows `[CLS] ... [SEP]` with no padding), every `every_steps` steps and
at the end of a run, four figures tell a bag-of-words encoder from one that has found structure:

* `attn_prev_max`, `attn_next_max`: over every layer and head, the largest mean attention weight
  on the previous (next) token, averaged over the query positions that have one. A uniform head
  gives 1/seq_len; a previous-token head approaches 1.
* `attn_entropy_ratio`: the attention entropy ÷ log(keys), averaged over layers and heads
  (1: every query averages the sequence).
* `order_sensitivity`: 1 − cosine of a token's last-layer vector with its context in order and
  shuffled (0: blind to order); `attention_maps.order_sensitivity`.

The trainer calls `StructureMonitor.figures(encoder)` through its reporting hook (`on_report`);
the figures go to the log line, TensorBoard (`train/onset_*`) and `onset.jsonl` in the run
directory, which `compare_runs` plots.
"""
import dataclasses
from typing import Dict, List, Optional

import gin
import numpy as np

from official_rtd.data import pretrain_dataloader
from official_rtd.modeling.networks import attention_maps
from official_rtd.ops import sampling
from official_rtd.utils import ranges

PREFIX = "onset_"
FIGURES = ("attn_prev_max", "attn_next_max", "attn_entropy_ratio", "order_sensitivity")


def neighbour_weights(probabilities: np.ndarray, offset: int) -> np.ndarray:
  """`[heads]` mean over rows and query positions i (with 0 <= i + offset < seq_len) of the
  weight `probabilities[b, h, i, i + offset]`. `probabilities`: `[batch, heads, seq, seq]` of
  unpadded rows."""
  p = np.asarray(probabilities, np.float64)
  seq = p.shape[-1]
  queries = np.arange(max(0, -offset), min(seq, seq - offset))
  return p[:, :, queries, queries + offset].mean(axis=(0, 2))


def onset_figures(encoder, ids: np.ndarray, order_rows: Optional[int] = None) -> Dict[str, float]:
  """The four figures (module docstring) of `encoder` on `ids` (`[n, seq_len]` unpadded rows);
  the order sensitivity on the first `order_rows` rows (all by default)."""
  ids = np.asarray(ids, np.int32)
  inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}
  prev, nxt, entropy = [], [], []
  for probabilities in attention_maps.attention_maps(encoder, inputs):
    p = probabilities.numpy()
    prev.append(neighbour_weights(p, -1))
    nxt.append(neighbour_weights(p, 1))
    entropy.append(attention_maps.entropy_ratio(probabilities, inputs["input_mask"]))
  rows = ids if order_rows is None else ids[:order_rows]
  return {"attn_prev_max": float(np.max(prev)), "attn_next_max": float(np.max(nxt)),
          "attn_entropy_ratio": float(np.mean(entropy)),
          "order_sensitivity": attention_maps.order_sensitivity(encoder, rows)}


def heldout_rows(batches, cls_id: int, sep_id: int, num_rows: int, width: int) -> np.ndarray:
  """`[num_rows, width]` rows `[CLS] pieces [SEP]` cut from the unmasked, unpadded tokens of
  `batches` (dicts of numpy `input_word_ids`/`input_mask`, e.g. held-out records: their own
  `[CLS]`/`[SEP]` are dropped and the text run on); fewer rows if the text runs out."""
  special = {cls_id, sep_id}
  stream: List[int] = []
  need = num_rows * (width - 2)
  for batch in batches:
    ids, mask = np.asarray(batch["input_word_ids"]), np.asarray(batch["input_mask"])
    for row, real in zip(ids, mask):
      stream += [int(t) for t in row[real > 0] if int(t) not in special]
    if len(stream) >= need:
      break
  n = min(num_rows, len(stream) // (width - 2))
  body = np.array(stream[:n * (width - 2)], np.int32).reshape(n, width - 2)
  return np.concatenate([np.full([n, 1], cls_id, np.int32), body,
                         np.full([n, 1], sep_id, np.int32)], axis=1)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class OnsetConfig:
  """The structure-onset monitor of `run_pretraining` (`--noonset_monitor` turns it off):
  `num_rows` rows of `width` pieces (at most the run's sequence length) from the held-out
  records (`--eval_input`; without them the first training records, read in order), measured
  every `every_steps` steps and at the end; the order sensitivity on the first `order_rows`."""
  every_steps: int = 200
  num_rows: int = 16
  width: int = 64
  order_rows: int = 8

  def __post_init__(self):
    ranges.check_ranges(self, ONSET_CONFIG_RANGES, "OnsetConfig.{name} = {value}")


# Valid values of OnsetConfig's numbers (`ranges.Range`).
ONSET_CONFIG_RANGES = {"every_steps": (0, None, True), "num_rows": (1, None, True),
                       "width": (3, None, True), "order_rows": (1, None, True)}


def rows_from_records(input_config: pretrain_dataloader.PretrainInputConfig, vocab, width: int,
                      num_rows: int) -> np.ndarray:
  """`heldout_rows` of records (`input_config`'s, read in order, masks undone)."""
  config = dataclasses.replace(input_config, is_training=False, global_batch_size=64,
                               skip_batches=0)

  def batches():
    for batch in pretrain_dataloader.load_pretraining_dataset(config):
      ids = sampling.original_ids(batch)
      yield {"input_word_ids": ids.numpy(), "input_mask": batch["input_mask"].numpy()}
  return heldout_rows(batches(), vocab.cls_id, vocab.sep_id, num_rows, width)


@dataclasses.dataclass
class StructureMonitor:
  """The figures of the run's encoder on `ids`, every `every_steps` steps (and at the end)."""
  ids: np.ndarray
  every_steps: int = 200
  order_rows: Optional[int] = 8

  def due(self, step: int, last_step: int) -> bool:
    return step == last_step or (self.every_steps > 0 and step % self.every_steps == 0)

  def figures(self, encoder) -> Dict[str, float]:
    return {PREFIX + k: v for k, v in onset_figures(encoder, self.ids, self.order_rows).items()}

