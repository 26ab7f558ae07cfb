"""Held-out pre-training data for the benchmarks: one whole book of `../shared/data/corpus` that is
not in the training text, turned into records with fixed masks (dupe 1) with the run's vocab."""
import os

from official_rtd.data import pretraining_data
from official_rtd.data import records

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_CORPUS = os.path.join(REPO, "..", "shared", "data", "corpus")
SAMPLE = os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt")


def read_book(title: str, corpus_dir: str = SHARED_CORPUS) -> str:
  """The text (one paragraph per line) of the book `title` in the corpus' MANIFEST."""
  manifest = os.path.join(corpus_dir, "gutenberg_dev_MANIFEST.tsv")
  with open(manifest, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f][1:]
  shards = {}
  for shard, *rest in rows:
    shards.setdefault(shard, []).append(rest[3])
  for shard, titles in shards.items():
    if title in titles:
      with open(os.path.join(corpus_dir, shard), encoding="utf-8") as f:
        documents = [d for d in f.read().split("\n\n") if d.strip()]
      if len(documents) != len(titles):
        raise ValueError(f"{shard}: {len(documents)} documents but {len(titles)} in {manifest}")
      return documents[titles.index(title)].strip("\n") + "\n"
  raise ValueError(f"no book titled {title!r} in {manifest}")


def split_book(title: str, heldout_fraction: float):
  """(first paragraphs, last `heldout_fraction` of the paragraphs) of the book, as texts."""
  lines = read_book(title).splitlines()
  cut = int(round(len(lines) * (1 - heldout_fraction)))
  return "\n".join(lines[:cut]) + "\n", "\n".join(lines[cut:]) + "\n"


def text_records(text: str, vocab_file: str, out: str, dupe_factor: int = 1,
                 max_seq_length: int = 64, max_predictions_per_seq: int = 10, log=print) -> str:
  """`<out>/records` of `text` (masks fixed by the default seed), built once; returns the
  directory."""
  text_file = os.path.join(out, "text.txt")
  records_dir = os.path.join(out, "records")
  if not os.path.exists(os.path.join(records_dir, records.SIDECAR_NAME)):
    os.makedirs(out, exist_ok=True)
    with open(text_file, "w", encoding="utf-8") as f:
      f.write(text)
    pretraining_data.create_pretraining_data(pretraining_data.DataConfig(
        input_files=(text_file,), vocab_file=vocab_file, output_dir=records_dir,
        max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
        dupe_factor=dupe_factor, num_shards=1), log=log)
  return records_dir


def book_records(title: str, vocab_file: str, out: str, log=print) -> str:
  """Held-out records of a whole book (fixed masks, dupe 1)."""
  return text_records(read_book(title), vocab_file, out, log=log)
