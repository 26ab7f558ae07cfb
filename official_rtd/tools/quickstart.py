r"""Quickstart: pre-trains a tiny ELECTRA on the public-domain corpus sample shipped in the repo.

  rtd_quickstart [--output_dir=/tmp/official_rtd_quickstart] [--num_train_steps=1000]

Builds the vocab and the records first if they are absent, trains (resuming if interrupted), and
prints where the checkpoints and TensorBoard logs are, with the losses at the start and the end.
"""
import dataclasses
import glob
import os

from absl import logging

from official_rtd.tools import cli

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "data", "corpus_sample", "*.txt")


@dataclasses.dataclass(frozen=True)
class QuickstartConfig:
  output_dir: str = "/tmp/official_rtd_quickstart"
  num_train_steps: int = 1000
  vocab_size: int = 8000


COMMAND_LINE = cli.Flags(QuickstartConfig, {
    "output_dir": "Where the vocab, records and model go.",
    "num_train_steps": "Training steps (batch 32, sequence length 64).",
    "vocab_size": "Vocabulary size to learn.",
}, ranges={"num_train_steps": (1, None, True), "vocab_size": (1, None, True)})


def main(config):
  from official_rtd import runs  # pylint: disable=g-import-not-at-top
  from official_rtd.data import pretraining_data  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(config.output_dir, "model")
  records_dir = pretraining_data.vocab_and_records(config.output_dir, sorted(glob.glob(SAMPLE)),
                                                   config.vocab_size, logging.info)
  runs.run_pretraining(["gin/models/tiny.gin", "gin/tasks/electra.gin"],
                            [f"TrainConfig.num_train_steps = {config.num_train_steps}"],
                            records_dir, model_dir, log=logging.info)
  _summarize(model_dir)


def _summarize(model_dir):
  """Reads the TensorBoard scalars back and prints the first and last losses."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  series = {}
  for path in sorted(glob.glob(os.path.join(model_dir, "train", "events.out.*"))):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        series.setdefault(value.tag, []).append(
            (event.step, float(tf.make_ndarray(value.tensor))))
  lines = []
  for tag in ("mlm_loss", "rtd_loss", "mlm_accuracy", "rtd_auc"):
    points = sorted(series.get(tag, []))
    if points:
      lines.append(f"  {tag}: {points[0][1]:.4f} at step {points[0][0]} -> "
                   f"{points[-1][1]:.4f} at step {points[-1][0]}")
  print("\n".join([
      "", "Quickstart finished.",
      f"  checkpoints:      {model_dir}",
      f"  TensorBoard logs: {os.path.join(model_dir, 'train')}  "
      f"(tensorboard --logdir {model_dir})",
      f"  fine-tunable export: {os.path.join(model_dir, 'export')}", *lines]))


def run():
  cli.run_main(main, "rtd_quickstart", COMMAND_LINE)


if __name__ == "__main__":
  run()
