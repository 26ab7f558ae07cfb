"""Warm start (`run_pretraining --warm_start_from`, gin `TrainConfig.warm_start_from`): a new
run's weights from another run's checkpoint or an imported one (`import_checkpoint`), before its
first step.

Only the model's weights are read: the optimizer, the step and so the learning-rate schedule start
fresh. Variables are matched by their object path in the checkpoint (`generator/embeddings/...`,
`discriminator/transformer_layers/3/...`), the path TensorFlow's object-based checkpoints store. A
variable reachable by several paths (weights shared between the generator and the discriminator)
is restored from the first of them the checkpoint holds with the right shape. Every variable that
cannot be restored is named in one error, unless one of its path components is listed in
`allow_missing` (those keep their fresh initialisation); GDES's E_Δ (`.../embeddings/delta/...`)
starts at zero when the source has none, which is what a shared-embeddings source implies. The
other way round, a GDES source into a model without E_Δ is refused (its discriminator's embeddings
were E_G + E_Δ) unless `delta` is in `allow_missing`.
"""
import collections
import os
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.utils import checkpoint_files

ROOT = "model"  # the trainer's `tf.train.Checkpoint(model=...)`
SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
SLOT = "/.OPTIMIZER_SLOT/"  # the source's Adam/LAMB moments: never read
FRESH_BY_DEFAULT = ("delta",)  # DisentangledEmbeddings.delta: E_Δ = 0 is a shared source's value


class WarmStartError(ValueError):
  """An init checkpoint that does not fit the run; names what is wrong."""


def resolve_checkpoint(init_checkpoint: str) -> str:
  """A checkpoint prefix: the latest checkpoint of a directory, or the prefix itself."""
  path = (tf.train.latest_checkpoint(init_checkpoint) if tf.io.gfile.isdir(init_checkpoint)
          else init_checkpoint)
  if not path or not tf.io.gfile.exists(path + ".index"):
    raise WarmStartError(f"--warm_start_from={init_checkpoint}: no checkpoint there (give a "
                         "run_pretraining model_dir, an import_checkpoint output_dir or a "
                         "checkpoint prefix)")
  return path


def check_vocab(init_checkpoint: str, checkpoint_path: str, vocab: vocab_lib.Vocab) -> None:
  """The run's vocab (its records') must be the one the checkpoint was trained with."""
  directory = (init_checkpoint if tf.io.gfile.isdir(init_checkpoint)
               else os.path.dirname(checkpoint_path))
  try:
    source = vocab_lib.find_vocab(directory)
  except vocab_lib.VocabError:
    raise WarmStartError(f"--warm_start_from={init_checkpoint}: no vocabulary "
                         f"({' / '.join(vocab_lib.FILE_NAMES.values())}) in {directory}, so the "
                         "records' vocab cannot be checked against the checkpoint's") from None
  source_vocab = vocab_lib.load_vocab(source)
  if source_vocab.sha256 != vocab.sha256:
    raise WarmStartError(
        f"the records were built with {vocab.path} ({vocab.size} tokens, sha256 "
        f"{vocab.sha256[:12]}) but --warm_start_from={init_checkpoint} with {source} "
        f"({source_vocab.size} tokens, sha256 {source_vocab.sha256[:12]}): rebuild the records "
        f"with create_pretraining_data --vocab_file={source}")


def _escape(name: str) -> str:
  """A path component as object-based checkpoints write it."""
  return name.replace(".", "..").replace("/", ".S")


def variable_paths(root) -> Dict[int, Tuple[tf.Variable, List[str]]]:
  """`{id(variable): (variable, [paths])}` of every variable `root` tracks, each by every path
  that reaches it, shortest first (the first is the one TensorFlow writes the value under)."""
  view = tf.train.TrackableView(root)
  found: Dict[int, Tuple[tf.Variable, List[str]]] = {}

  def visit(obj, prefix: str, ancestors: frozenset):
    for name, child in view.children(obj).items():
      path = f"{prefix}{_escape(name)}"
      if isinstance(child, tf.Variable):
        found.setdefault(id(child), (child, []))[1].append(path)
      elif id(child) not in ancestors:
        visit(child, path + "/", ancestors | {id(child)})

  visit(root, "", frozenset([id(root)]))
  for _, paths in found.values():
    paths.sort(key=lambda p: p.count("/"))  # stable: ties keep the traversal order
  return found


def _allowed(paths: Sequence[str], names: Sequence[str]) -> bool:
  return any(part in names for path in paths for part in path.split("/"))


def _damaged(init_checkpoint: str, path: str, error: Exception) -> WarmStartError:
  what = checkpoint_files.problem(path)
  if what is None:
    what = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
  return WarmStartError(f"--warm_start_from={init_checkpoint}: checkpoint {path} does not read "
                        f"back: {what}; copy it again, or warm-start from another checkpoint")


def warm_start(model, init_checkpoint: str, vocab: vocab_lib.Vocab,
               allow_missing: Sequence[str] = (), log: Callable[[str], None] = print) -> dict:
  """Restores `model`'s weights from `init_checkpoint` (see the module docstring).

  Returns `{"checkpoint", "restored", "fresh", "unused"}`: the prefix read, the number of variables
  restored, the paths left freshly initialised (allowed) and the checkpoint's model tensors no
  variable used.
  Raises:
    WarmStartError: a missing checkpoint or vocab, another vocab, or variables that cannot be
      restored and are not allowed (all named, with shapes).
  """
  path = resolve_checkpoint(init_checkpoint)
  check_vocab(init_checkpoint, path, vocab)
  variables = variable_paths(model).values()
  try:
    reader = tf.train.load_checkpoint(path)
    shapes = {key[len(ROOT) + 1:-len(SUFFIX)]: shape
              for key, shape in reader.get_variable_to_shape_map().items()
              if key.startswith(ROOT + "/") and key.endswith(SUFFIX) and SLOT not in key}
  except (tf.errors.OpError, IndexError, ValueError, RuntimeError) as e:
    raise _damaged(init_checkpoint, path, e) from None
  if not shapes:
    raise WarmStartError(f"{path} holds no '{ROOT}/...' weights: it is not a run_pretraining or "
                         "import_checkpoint checkpoint")
  known = sorted({part for p in list(shapes) + [p for _, paths in variables for p in paths]
                  for part in p.split("/") if not part.isdigit()} | set(FRESH_BY_DEFAULT))
  unknown = [name for name in allow_missing if name not in known]
  if unknown:
    raise WarmStartError(
        f"--warm_start_allow_missing: {', '.join(unknown)} names no component of this model's "
        f"or the checkpoint's variables; the names are: {', '.join(known)}")
  plan, problems, fresh = [], [], []
  for variable, paths in variables:
    want = list(variable.shape)
    source = next((p for p in paths if p in shapes and list(shapes[p]) == want), None)
    if source is not None:
      plan.append((variable, source))
    elif _allowed(paths, tuple(allow_missing) + FRESH_BY_DEFAULT):
      fresh.append(paths[0])
    else:
      found = [f"{p} {list(shapes[p])}" for p in paths if p in shapes]
      problems.append(f"{paths[0]} {want}: " + (f"the checkpoint has {', '.join(found)}"
                                                if found else "missing"))
  if problems:
    raise WarmStartError(
        f"--warm_start_from={init_checkpoint} ({path}) does not fit this model: "
        f"{len(problems)} variable(s) cannot be restored: " + "; ".join(problems) + ". Shapes "
        "differ when the sizes differ (compose the source's operative_config.gin); list the "
        "components that should start fresh with --warm_start_allow_missing (e.g. mws_head)")
  used = {source for _, source in plan}
  unused = sorted(set(shapes) - used)
  dropped_delta = [p for p in unused if "delta" in p.split("/")]
  if dropped_delta and "delta" not in allow_missing:
    raise WarmStartError(
        f"--warm_start_from={init_checkpoint} ({path}) was trained with embedding_sharing = "
        f"'gdes': its discriminator reads E_G + E_Δ ({dropped_delta[0]}, ...), which this "
        "model's embeddings cannot hold, so E_Δ would be dropped. Warm-start a model with "
        "embedding_sharing = 'gdes', or add delta to --warm_start_allow_missing to drop "
        "E_Δ knowingly (the discriminator then starts from the generator's E_G)")
  try:
    values = [reader.get_tensor(f"{ROOT}/{source}{SUFFIX}") for _, source in plan]
  except (tf.errors.OpError, IndexError, ValueError, RuntimeError) as e:
    raise _damaged(init_checkpoint, path, e) from None
  for (variable, _), value in zip(plan, values):
    variable.assign(value.astype(variable.dtype.as_numpy_dtype))
  top = collections.Counter(p.split("/")[0] for p in unused)
  log(f"warm start from {path}: {len(plan)} variables restored "
      f"({int(sum(np.prod(v.shape) for v, _ in plan)):,} weights); optimizer, step and "
      f"learning-rate schedule start fresh"
      + (f"; fresh (allowed): {', '.join(fresh)}" if fresh else "")
      + (f"; unused in the checkpoint: {dict(top)}" if unused else ""))
  return {"checkpoint": path, "restored": len(plan), "fresh": fresh, "unused": unused}
