"""A TensorFlow Datasets text dataset as pre-training input, in work units like `corpus.TextRange`.

Each example is one document; its text feature's lines (split at newlines, stripped, blank lines
dropped) are the document's lines. The dataset must already be prepared in the data directory:
nothing here downloads or builds it.
"""
import dataclasses
import functools
from typing import Callable, List, Optional

from official_rtd.data import corpus


def _tfds():
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  return tfds


@functools.lru_cache(maxsize=8)
def load_builder(name: str, data_dir: Optional[str]):
  """The prepared builder of `name` ("dataset[/config][:version]").

  Raises:
    corpus.CorpusError: the dataset is unknown in `data_dir`, or known but not prepared there.
  """
  tfds = _tfds()
  where = data_dir or "TFDS's default data directory"
  try:
    builder = tfds.builder(name, data_dir=data_dir or None, try_gcs=False)
  except Exception as e:  # pylint: disable=broad-except  (TFDS raises several types)
    first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    raise corpus.CorpusError(f"--input_tfds={name}: not found in {where} ({first_line})") from None
  if not builder.is_prepared():
    raise corpus.CorpusError(
        f"--input_tfds={name} is not prepared in {where}: prepare it first (e.g. `tfds build "
        f"{name} --data_dir=DIR`, then pass --tfds_data_dir=DIR); create_pretraining_data never "
        "downloads")
  return builder


@dataclasses.dataclass(frozen=True)
class TfdsSlice:
  """Examples [start, stop) of one split: the unit of work (picklable, for Beam workers)."""
  key: str
  name: str
  data_dir: Optional[str]
  split: str
  text_key: str
  start: int
  stop: int

  @property
  def size(self) -> int:
    return self.stop - self.start

  def read(self, on_decode_error: str = "fail", warn: Callable[[str], None] = print
           ) -> corpus.Chunk:
    builder = load_builder(self.name, self.data_dir)
    dataset = builder.as_dataset(split=f"{self.split}[{self.start}:{self.stop}]",
                                 shuffle_files=False)
    chunk = corpus.Chunk(self.key, [])
    for index, example in enumerate(dataset.as_numpy_iterator(), start=self.start):
      raw = example[self.text_key]
      try:
        text = raw.decode("utf-8")
      except UnicodeDecodeError:
        where = f"--input_tfds={self.name} {self.split}[{index}]"
        if on_decode_error == "fail":
          raise corpus.CorpusError(f"{where}: the {self.text_key!r} text is not valid UTF-8 "
                                   "(use --on_decode_error=skip to skip it)") from None
        warn(f"{where}: skipping a document that is not valid UTF-8")
        chunk.lines_skipped += 1
        continue
      lines = [line.strip() for line in text.split("\n")]
      lines = [line for line in lines if line]
      if lines:
        chunk.lines += lines + [corpus.DOCUMENT_BREAK]
        chunk.num_bytes += len(raw)
        chunk.documents += 1
    return chunk


def plan_units(name: str, data_dir: Optional[str], split: str, text_key: str,
               chunk_bytes: int) -> List[TfdsSlice]:
  """Slices of about `chunk_bytes` (from the split's recorded size) covering the split in order.

  Raises:
    corpus.CorpusError: unknown or unprepared dataset, split or text feature.
  """
  builder = load_builder(name, data_dir)
  splits = builder.info.splits
  if split not in splits:
    raise corpus.CorpusError(f"--input_tfds={name} has no split {split!r} (--tfds_split); it has "
                             f"{', '.join(sorted(splits.keys()))}")
  features = builder.info.features
  if text_key not in features.keys():
    raise corpus.CorpusError(f"--input_tfds={name} has no feature {text_key!r} "
                             f"(--tfds_text_key); it has {', '.join(sorted(features.keys()))}")
  info = splits[split]
  per_unit = max(1, round(chunk_bytes * info.num_examples / max(info.num_bytes, 1)))
  return [TfdsSlice(f"tfds:{split}:{i}", name, data_dir or None, split, text_key, start,
                    min(start + per_unit, info.num_examples))
          for i, start in enumerate(range(0, info.num_examples, per_unit))]
