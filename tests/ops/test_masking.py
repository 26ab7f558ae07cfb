"""Statistics and invariants of the shared masked-LM masking op."""
import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.ops import masking
from tests import testutil


def _batch(vocab, batch=512, seq_len=128, seed=0):
  """Random real-looking rows: [CLS] pieces [SEP] pieces [SEP] [PAD]..., varied lengths."""
  rng = np.random.default_rng(seed)
  ordinary = np.flatnonzero(~vocab.is_special())
  ids = np.full([batch, seq_len], vocab.pad_id, np.int32)
  for row in range(batch):
    length = rng.integers(10, seq_len + 1)
    ids[row, :length] = rng.choice(ordinary, length)
    ids[row, 0] = vocab.cls_id
    ids[row, length // 2] = vocab.sep_id
    ids[row, length - 1] = vocab.sep_id
  return ids


class MaskTokensTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.vocab = vocab_lib.load_vocab(testutil.SAMPLE_VOCAB)
    self.tables = masking.TokenTables.from_vocab(self.vocab)
    self.ids = _batch(self.vocab)

  def _mask(self, config, seed=(1, 2), ids=None):
    ids = self.ids if ids is None else ids
    out = masking.mask_tokens(tf.constant(ids), config, self.tables, tf.constant(seed))
    return {k: v.numpy() for k, v in out.items()}

  def _selected(self, out):
    """[batch, seq_len] bool of the chosen positions, from positions + weights."""
    selected = np.zeros(self.ids.shape, bool)
    rows, cols = np.nonzero(out["masked_lm_weights"])
    selected[rows, out["masked_lm_positions"][rows, cols]] = True
    return selected

  def test_rate_cap_and_labels(self):
    config = masking.MaskingConfig(mask_prob=0.15, max_predictions_per_seq=20)
    out = self._mask(config)
    candidates = ~self.vocab.is_special()[self.ids]
    n_cand = candidates.sum(1)
    n_pred = out["masked_lm_weights"].sum(1)
    expected = np.clip(np.round(n_cand * 0.15), 1, 20)
    self.assertAllEqual(n_pred, expected)
    selected = self._selected(out)
    self.assertFalse((selected & ~candidates).any(), "a special token was masked")
    rows, cols = np.nonzero(out["masked_lm_weights"])
    positions = out["masked_lm_positions"]
    self.assertAllEqual(out["masked_lm_ids"][rows, cols], self.ids[rows, positions[rows, cols]])
    # Positions ascend, padding is zero.
    for row in range(len(positions)):
      real = positions[row, :int(n_pred[row])]
      self.assertAllEqual(real, np.sort(real))
      self.assertFalse(positions[row, int(n_pred[row]):].any())
    # Unselected tokens are untouched.
    self.assertAllEqual(out["input_word_ids"][~selected], self.ids[~selected])

  def test_ceil_rounding(self):
    config = masking.MaskingConfig(mask_prob=0.15, max_predictions_per_seq=20, rounding="ceil")
    out = self._mask(config)
    n_cand = (~self.vocab.is_special()[self.ids]).sum(1)
    self.assertAllEqual(out["masked_lm_weights"].sum(1), np.clip(np.ceil(n_cand * 0.15), 1, 20))
    with self.assertRaisesRegex(ValueError, "rounding"):
      masking.MaskingConfig(rounding="floor")

  def _split(self, out):
    selected = self._selected(out)
    new, old = out["input_word_ids"][selected], self.ids[selected]
    is_mask = new == self.vocab.mask_id
    kept = new == old
    return is_mask.mean(), (~is_mask & ~kept).mean(), kept.mean(), selected.sum()

  def test_electra_split_85_15(self):
    mask, rand, kept, n = self._split(self._mask(masking.MaskingConfig(strategy="electra")))
    self.assertGreater(n, 5000)
    self.assertAllClose([mask, rand, kept], [0.85, 0.0, 0.15], atol=0.02)

  def test_bert_split_80_10_10(self):
    out = self._mask(masking.MaskingConfig(strategy="bert"))
    mask, rand, kept, _ = self._split(out)
    # A random replacement equals the original with probability ~1/vocab: counted as kept.
    self.assertAllClose([mask, rand, kept], [0.8, 0.1, 0.1], atol=0.02)
    replaced = self._selected(out) & (out["input_word_ids"] != self.ids) & (
        out["input_word_ids"] != self.vocab.mask_id)
    self.assertFalse(self.vocab.is_special()[out["input_word_ids"][replaced]].any())

  def test_mask_only_never_keeps_or_replaces(self):
    out = self._mask(masking.MaskingConfig(strategy="mask_only"))
    selected = self._selected(out)
    self.assertGreater(selected.sum(), 5000)
    # Every predicted position is [MASK] (never the original token, never a random one), and
    # every [MASK] in the output is a predicted position.
    self.assertTrue((out["input_word_ids"][selected] == self.vocab.mask_id).all())
    self.assertAllEqual(out["input_word_ids"] == self.vocab.mask_id, selected)

  def test_rate_schedule_linear_by_step(self):
    config = masking.MaskingConfig(mask_prob=0.3, max_predictions_per_seq=64,
                                   final_mask_prob=0.15, schedule_steps=100)
    n_cand = (~self.vocab.is_special()[self.ids]).sum(1)
    # rate(step) = 0.3 + (0.15 - 0.3) · min(step / 100, 1), in float64 as the op computes it.
    for step, rate in ((0, 0.3), (50, 0.3 - 0.15 * 0.5), (80, 0.3 - 0.15 * 0.8), (100, 0.15),
                       (400, 0.15)):
      out = masking.mask_tokens(tf.constant(self.ids), config, self.tables, tf.constant([1, 2]),
                                step=tf.constant(step, tf.int64))
      expected = np.clip(np.round(n_cand * rate), 1, 64)
      self.assertAllEqual(out["masked_lm_weights"].numpy().sum(1), expected, msg=f"step {step}")
    with self.assertRaisesRegex(ValueError, "final_mask_prob"):
      masking.MaskingConfig(final_mask_prob=1.5)

  def test_seed_determinism(self):
    config = masking.MaskingConfig(strategy="bert")
    a, b, c = self._mask(config, (3, 4)), self._mask(config, (3, 4)), self._mask(config, (3, 5))
    for key in a:
      self.assertAllEqual(a[key], b[key])
    self.assertNotAllEqual(a["masked_lm_positions"], c["masked_lm_positions"])

  def test_positions_uniform_over_candidates(self):
    """Every candidate position is chosen at about the same rate."""
    ids = np.tile(self.ids[:1], [4096, 1])
    out = self._mask(masking.MaskingConfig(mask_prob=0.15), ids=ids)
    counts = self._selected_counts(out, ids.shape)
    cand = ~self.vocab.is_special()[ids[0]]
    rate = counts[cand] / len(ids)
    expected = np.clip(np.round(cand.sum() * 0.15), 1, 20) / cand.sum()
    self.assertAllClose(rate, np.full_like(rate, expected), atol=0.035)
    self.assertEqual(counts[~cand].sum(), 0)

  def _selected_counts(self, out, shape):
    counts = np.zeros(shape[1])
    rows, cols = np.nonzero(out["masked_lm_weights"])
    np.add.at(counts, out["masked_lm_positions"][rows, cols], 1)
    return counts

  def test_whole_word_mask_takes_whole_words(self):
    cont = self.vocab.is_continuation()
    starts = np.flatnonzero(~cont & ~self.vocab.is_special())
    pieces = np.flatnonzero(cont)
    # Rows of 3-piece words: start ##a ##b.
    words = 30
    row = [self.vocab.cls_id]
    for i in range(words):
      row += [starts[i], pieces[i], pieces[i + 1]]
    row.append(self.vocab.sep_id)
    ids = np.tile(np.array(row, np.int32), [256, 1])
    out = self._mask(masking.MaskingConfig(mask_prob=0.15, max_predictions_per_seq=30,
                                           whole_word_mask=True), ids=ids)
    selected = np.zeros(ids.shape, bool)
    r, c = np.nonzero(out["masked_lm_weights"])
    selected[r, out["masked_lm_positions"][r, c]] = True
    word_selected = selected[:, 1:-1].reshape(256, words, 3)
    self.assertTrue((word_selected.all(-1) == word_selected.any(-1)).all(),
                    "a word was only partly masked")
    # round(0.15 * 90) = 14 pieces -> 4 whole words (12 pieces) per row.
    self.assertAllEqual(selected.sum(1), np.full(256, 12))

  def _reference_selection(self, ids, config, seed):
    """Per row, the masked positions by the policy written out with a full stable sort: words
    (a candidate plus, with whole-word masking, its `##` continuations) in the order of the op's
    random scores, kept while the running token count is within num_to_predict."""
    seeds = tf.random.experimental.stateless_split(tf.constant(seed, tf.int64), num=3)
    score = tf.random.stateless_uniform(ids.shape, seeds[0]).numpy()
    candidate = ~self.vocab.is_special()[ids]
    continuation = self.vocab.is_continuation()[ids] & config.whole_word_mask
    expected = []
    for row in range(len(ids)):
      words = []
      for p in np.flatnonzero(candidate[row]):
        if continuation[row, p] and p > 0 and candidate[row, p - 1]:
          words[-1].append(p)
        else:
          words.append([p])
      k = min(np.clip(np.round(candidate[row].sum() * config.mask_prob), 1,
                      config.max_predictions_per_seq), candidate[row].sum())
      kept, total = [], 0
      for w in np.argsort(score[row, :len(words)], kind="stable"):
        total += len(words[w])
        if total > k:
          break
        kept += words[w]
      expected.append(sorted(kept))
    return expected

  def test_selection_equals_full_sort_reference(self):
    """The op's top-k selection and scatters pick exactly what a full sort of the scores does."""
    for config in [masking.MaskingConfig(),
                   masking.MaskingConfig(mask_prob=0.4, max_predictions_per_seq=30),
                   masking.MaskingConfig(whole_word_mask=True, strategy="bert")]:
      out = self._mask(config, seed=(7, 8))
      expected = self._reference_selection(self.ids, config, (7, 8))
      for row, positions in enumerate(expected):
        n = len(positions)
        self.assertAllEqual(out["masked_lm_positions"][row, :n], positions)
        self.assertAllEqual(out["masked_lm_weights"][row], [1.0] * n + [0.0] * (len(
            out["masked_lm_weights"][row]) - n))
        self.assertAllEqual(out["masked_lm_positions"][row, n:], np.zeros_like(
            out["masked_lm_positions"][row, n:]))

  def test_unbatched_and_invalid_config(self):
    out = masking.mask_tokens(tf.constant(self.ids[0]), masking.MaskingConfig(), self.tables,
                              tf.constant([0, 1]))
    self.assertEqual(out["masked_lm_positions"].shape, [20])
    with self.assertRaisesRegex(ValueError, "strategy"):
      masking.MaskingConfig(strategy="xlnet")
    with self.assertRaisesRegex(ValueError, "mask_prob"):
      masking.MaskingConfig(mask_prob=0.0)


if __name__ == "__main__":
  tf.test.main()
