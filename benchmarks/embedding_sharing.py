r"""Embedding sharing between ELECTRA's generator and discriminator at equal train FLOPs: shared
(ELECTRA), gdes (DeBERTa-v3's gradient-disentangled sharing) and none.

  python benchmarks/embedding_sharing.py --work_dir=/tmp/sharing --train_flops_budget=2e13 \
      --seeds=1,2,3

Tiny ELECTRA (`gin/models/tiny.gin`: hidden 128, 2 layers, generator 1/4, batch 32 × 64) on the
shipped Gutenberg sample (vocab 8,000 learned from it, dupe 10); every run gets the same budget
(the three modes cost the same section 5.2.2 FLOPs per step). Each final checkpoint is evaluated
with `run_pretraining --mode=eval` on a book not in the training text (fixed masks, dupe 1): the
generator's MLM loss, the discriminator's RTD AUC and the fixed-noise detection AUC. Also printed,
for each run's token tables: the mean cosine similarity of the rows of E_G and of the
discriminator's E_D to each other (DeBERTa-v3's measure: how far apart the tokens are), and the
mean cosine similarity of E_G[i] and E_D[i] (how far the two tables drifted apart). Finished runs
are reused, so an interrupted benchmark resumes. Results: benchmarks/RESULTS.md.
"""
import json
import os

from absl import app
from absl import flags
from absl import logging
import numpy as np

import common
import heldout  # pylint: disable=g-bad-import-order
from official_rtd.data import pretraining_data

flags.DEFINE_string("work_dir", "/tmp/embedding_sharing", "Vocab, records and runs.")
flags.DEFINE_list("modes", ["shared", "gdes", "none"], "embedding_sharing values to compare.")
flags.DEFINE_list("seeds", ["1", "2", "3"], "TrainConfig.seed of each run.")
flags.DEFINE_float("train_flops_budget", 2e13, "Train FLOPs per run (section 5.2.2 count).")
flags.DEFINE_string("heldout_book", "The Wonderful Wizard of Oz",
                    "A ../shared/data/corpus book (MANIFEST title) not in the training text.")
FLAGS = flags.FLAGS


def pretrain_and_eval(mode, seed, records_dir, heldout_records, work_dir):
  """Trains (or reuses) one run and evaluates its last checkpoint; returns the eval row."""
  import gin  # pylint: disable=g-import-not-at-top

  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(work_dir, "runs", f"{mode}_seed{seed}")
  done = os.path.join(model_dir, "heldout_eval.json")
  if os.path.exists(done):
    with open(done, encoding="utf-8") as f:
      return json.load(f)
  params = [f"build_electra_pretrainer.embedding_sharing = '{mode}'",
            f"TrainConfig.train_flops_budget = {FLAGS.train_flops_budget}",
            f"TrainConfig.seed = {seed}", "TrainConfig.save_checkpoints_steps = 500"]
  gin_files = ["gin/models/tiny.gin", "gin/tasks/electra.gin"]
  gin.clear_config()
  runs.run_pretraining(gin_files, params, records_dir, model_dir, log=logging.info)
  gin.clear_config()
  _, rows = runs.run_pretraining(gin_files, params, records_dir, model_dir, mode="eval",
                                      eval_input=heldout_records, log=logging.info)
  row = dict(rows[-1], **table_similarities(model_dir))
  with open(done, "w", encoding="utf-8") as f:
    json.dump(row, f)
  return row


def mean_pairwise_cosine(table: np.ndarray) -> float:
  """Mean cosine similarity of distinct rows of `[vocab, E]`."""
  unit = table / np.linalg.norm(table, axis=1, keepdims=True)
  total = unit.sum(0)
  n = len(unit)
  return float((total @ total - n) / (n * (n - 1)))


def table_similarities(model_dir):
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  model, _ = runs.load_model(model_dir)
  generator = model.generator.get_embedding_table().numpy()
  discriminator = model.exported_encoder.for_export().get_embedding_table().numpy()
  unit = lambda t: t / np.linalg.norm(t, axis=1, keepdims=True)
  return {"cos_within_generator": mean_pairwise_cosine(generator),
          "cos_within_discriminator": mean_pairwise_cosine(discriminator),
          "cos_generator_vs_discriminator": float(np.mean(np.sum(
              unit(generator) * unit(discriminator), 1)))}


def main(_):
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  os.chdir(heldout.REPO)
  work_dir = FLAGS.work_dir
  os.makedirs(work_dir, exist_ok=True)
  records_dir = pretraining_data.vocab_and_records(work_dir, [heldout.SAMPLE], 8000, logging.info)
  heldout_records = heldout.book_records(FLAGS.heldout_book, os.path.join(work_dir, "vocab.txt"),
                                         os.path.join(work_dir, "heldout"), log=logging.info)
  rows = {(m, s): pretrain_and_eval(m, s, records_dir, heldout_records, work_dir)
          for m in FLAGS.modes for s in FLAGS.seeds}
  print(f"\ntiny ELECTRA, {FLAGS.train_flops_budget:.3g} train FLOPs per run, held-out: "
        f"{FLAGS.heldout_book}; median [min, max] over seeds {','.join(FLAGS.seeds)}")
  columns = ("mlm_loss", "rtd_auc", "fixed_noise_auc", "cos_within_generator",
             "cos_within_discriminator", "cos_generator_vs_discriminator")
  table = common.TableWriter(["embedding_sharing", "steps", *columns])
  for mode in FLAGS.modes:
    runs = [rows[(mode, s)] for s in FLAGS.seeds]
    cells = []
    for column in columns:
      figures = common.spread(r[column] for r in runs)
      cells.append(f"{figures.median:.4f} [{figures.min:.4f}, {figures.max:.4f}]")
    table.row(mode, runs[0]["step"], *cells)


if __name__ == "__main__":
  app.run(main)
