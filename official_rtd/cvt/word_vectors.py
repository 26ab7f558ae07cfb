"""Word vectors learned here from unlabeled text (gensim's word2vec, skip-gram), written in
GloVe's text format for `run_cvt --word_embeddings`: the dissertation's taggers start from GloVe
vectors, which cannot be downloaded here. Words are CVT's normalised keys (`data.normalize`:
lowercased, digits as 0), so every vector finds its vocabulary entry."""
import os
from typing import Callable, Iterator, List, Sequence

from official_rtd.cvt import data as data_lib
from official_rtd.utils import textio


class _Sentences:
  """A re-iterable corpus (word2vec reads it once for the vocabulary, then once per epoch)."""

  def __init__(self, patterns: Sequence[str], max_sentences: int, split):
    self.patterns, self.max_sentences, self.split = patterns, max_sentences, split

  def __iter__(self) -> Iterator[List[str]]:
    from official_rtd.data import corpus  # pylint: disable=g-import-not-at-top
    count = 0
    for chunk in corpus.read_chunks(corpus.expand_input_files(self.patterns), 1 << 20):
      for line in chunk.lines:
        for sentence in self.split(line, 1000):
          yield [data_lib.normalize(w) for w in sentence]
          count += 1
          if self.max_sentences and count >= self.max_sentences:
            return


def train(patterns: Sequence[str], output_file: str, dim: int, min_count: int = 3,
          window: int = 5, epochs: int = 5, max_sentences: int = 0, workers: int = 2,
          one_sentence_per_line: bool = False, seed: int = 0,
          log: Callable[[str], None] = print) -> int:
  """Trains skip-gram word2vec on `patterns`' sentences and writes `output_file` (`word v1 ...
  vd` per line) atomically; returns the number of words."""
  from gensim.models import word2vec  # pylint: disable=g-import-not-at-top
  split = ((lambda line, _: [line.split()] if line.split() else []) if one_sentence_per_line
           else data_lib.split_sentences)
  sentences = _Sentences(patterns, max_sentences, split)
  model = word2vec.Word2Vec(vector_size=dim, window=window, min_count=min_count, sg=1,
                            workers=workers, seed=seed)
  model.build_vocab(sentences)
  log(f"word2vec: {len(model.wv)} words of count >= {min_count} in {model.corpus_count} "
      f"sentences; training {epochs} epochs of {model.corpus_total_words} words")
  model.train(sentences, total_examples=model.corpus_count, epochs=epochs,
              report_delay=30.0)
  os.makedirs(os.path.dirname(os.path.abspath(output_file)), exist_ok=True)
  textio.write_lines_atomic(output_file, (
      f"{word} " + " ".join(f"{x:.5f}" for x in model.wv[word]) for word in model.wv.index_to_key))
  return len(model.wv)
