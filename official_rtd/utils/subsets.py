"""Random subsets of rows (`--max_train_examples`, `--train_fraction`, ...), reproducible for a
seed, the rows kept in their order."""
from typing import List, Sequence, Union

import numpy as np


def random_rows(count: int, size: int, seed: Union[int, np.random.Generator]) -> List[int]:
  """Ascending indices of `size` of `count` rows drawn without replacement (`seed`: an int, or a
  numpy `Generator`, whose state the draw advances); all of them when `size` is 0 or at least
  `count`."""
  if not size or size >= count:
    return list(range(count))
  return sorted(int(i) for i in np.random.default_rng(seed).permutation(count)[:size])


def random_subset(items: Sequence, size: int, seed: Union[int, np.random.Generator]) -> list:
  """`size` of `items` drawn at random (`random_rows`), in their order."""
  return [items[i] for i in random_rows(len(items), size, seed)]
