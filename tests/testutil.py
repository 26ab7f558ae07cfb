"""Paths and small helpers shared by the tests."""
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_CORPUS = os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt")
SAMPLE_VOCAB = os.path.join(REPO, "tests", "testdata", "vocab_sample.txt")


def sample_paragraphs(count: int, start: int = 4):
  """`count` real paragraphs (non-empty lines) of the shipped Gutenberg sample."""
  with open(SAMPLE_CORPUS, encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip()]
  return lines[start:start + count]


def write_text(path: str, text, mode="w"):
  with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
    f.write(text)
  return path


def requires(path: str):
  """Skips a test class when a data directory (e.g. ../shared, present in CI) is missing."""
  import unittest  # pylint: disable=g-import-not-at-top
  return unittest.skipUnless(os.path.isdir(path), f"{path} is not available")
