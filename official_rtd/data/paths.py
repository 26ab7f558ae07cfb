"""File access for local paths (Python's own, fastest) and URLs such as `gs://` (tf.io.gfile), so
the data tools read and write the same way on one machine and on a distributed runner's workers."""
import glob as glob_lib
import os


def is_url(path: str) -> bool:
  return "://" in path


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def open_binary(path: str, mode: str = "rb"):
  return _gfile().GFile(path, mode) if is_url(path) else open(path, mode)


def glob(pattern: str):
  return sorted(_gfile().glob(pattern) if is_url(pattern) else glob_lib.glob(pattern))


def has_magic(pattern: str) -> bool:
  return glob_lib.has_magic(pattern)


def isfile(path: str) -> bool:
  if is_url(path):
    return _gfile().exists(path) and not _gfile().isdir(path)
  return os.path.isfile(path)


def getsize(path: str) -> int:
  return _gfile().stat(path).length if is_url(path) else os.path.getsize(path)
