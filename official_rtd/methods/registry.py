"""Pre-training methods by name. A method module registers its builder once:

  @registry.register("teams", needs=("vocab",))
  @gin.configurable
  def build_teams_pretrainer(encoder_config, vocab, ...): ...

and a task gin file picks it with `pretraining_model.method = "teams"`. `needs` names the run's
resources the builder takes besides `encoder_config`: "vocab" (the run's `Vocab`) and
"token_counts" (the training records' `[vocab]` token counts, computed only for builders that
need them).
"""
import dataclasses
from typing import Callable, Dict, Optional, Tuple

import gin

RESOURCES = ("vocab", "token_counts")


@dataclasses.dataclass(frozen=True)
class Method:
  name: str
  builder: Callable
  needs: Tuple[str, ...] = ()


_METHODS: Dict[str, Method] = {}


def register(name: str, needs: Tuple[str, ...] = ()):
  """Decorator registering `builder(encoder_config, [vocab], [token_counts], **options)`."""
  unknown = set(needs) - set(RESOURCES)
  if unknown:
    raise ValueError(f"method {name!r} needs unknown resources {sorted(unknown)}; known: "
                     f"{RESOURCES}")

  def decorate(builder):
    existing = _METHODS.get(name)
    if existing is not None and existing.builder.__qualname__ != builder.__qualname__:
      raise ValueError(f"method name {name!r} is registered twice")
    _METHODS[name] = Method(name, builder, tuple(needs))
    return builder
  return decorate


def get(name: str) -> Method:
  if name not in _METHODS:
    raise ValueError(f"unknown pre-training method {name!r}; registered: "
                     f"{', '.join(sorted(_METHODS)) or 'none (import official_rtd.configurables)'}")
  return _METHODS[name]


def names():
  return sorted(_METHODS)


def build(name: str, encoder_config, vocab=None, token_counts: Optional[Callable] = None,
          **options):
  """Builds method `name`, passing the resources it needs.

  Args:
    vocab: the run's vocab.
    token_counts: a callable returning the records' token counts (called only if needed).
    **options: the builder's own arguments (overriding gin's).
  """
  method = get(name)
  available = {"vocab": (lambda: vocab) if vocab is not None else None,
               "token_counts": token_counts}
  missing = [need for need in method.needs if available[need] is None]
  if missing:
    raise ValueError(f"method {name!r} needs {', '.join(missing)}")
  resources = {need: available[need]() for need in method.needs}
  return method.builder(encoder_config=encoder_config, **resources, **options)


@gin.configurable
def pretraining_model(encoder_config, vocab=None, token_counts: Optional[Callable] = None,
                      method: str = gin.REQUIRED):
  """The method the task gin file names (`pretraining_model.method = "electra"`), built with the
  run's resources it declares: the vocab, and the training records' token counts (a callable, so
  only methods that need them pay for the counting pass). Returns a `base.PretrainingModel`."""
  return build(method, encoder_config, vocab=vocab, token_counts=token_counts)
