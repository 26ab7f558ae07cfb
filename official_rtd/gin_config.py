"""Parsing the gin configuration of a pre-training run: model files (`gin/models/`), task files
(`gin/tasks/`) and bindings, with every configurable registered first."""
import os
from typing import Sequence

import gin

REPO_GIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gin")


def resolve_gin_file(path: str) -> str:
  """`path` if it exists, else the same name in the repository's `gin/` directory."""
  if os.path.exists(path):
    return path
  candidate = os.path.join(REPO_GIN_DIR, path.removeprefix("gin/"))
  if os.path.exists(candidate):
    return candidate
  raise FileNotFoundError(f"gin file {path} not found (also looked in {REPO_GIN_DIR})")


def parse_gin(gin_files: Sequence[str], gin_params: Sequence[str] = ()):
  """Registers our configurables and parses the files, then the bindings; errors become one
  clear line (a ValueError)."""
  from official_rtd import configurables  # pylint: disable=g-import-not-at-top,unused-import
  files = [resolve_gin_file(f) for f in gin_files]
  gin.add_config_file_search_path(REPO_GIN_DIR)  # for `include 'tasks/electra.gin'`
  try:
    gin.parse_config_files_and_bindings(files, list(gin_params or []), finalize_config=False)
  except (ValueError, KeyError, SyntaxError, OSError) as e:
    message = " ".join(str(e).split())
    raise ValueError(f"bad gin configuration: {message}") from None
