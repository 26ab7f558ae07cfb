"""Hugging Face transformers' ELECTRA layout (safetensors, `config.json`, tokenizer files), both
ways: export of our models, import of transformers checkpoints (`import_huggingface`).

Our encoders are Model Garden blocks; transformers' ELECTRA is BERT-style. Per block the mapping is
a reshape/transpose (`Slot`): Model Garden's `query` kernel `[H, heads, head_size]` is
`query.weight` `[H, H]` transposed (PyTorch `Linear` weights are `[out, in]`), `attention_output`
`[heads, head_size, H]` is `attention.output.dense`, the FFN kernels are transposed, LayerNorm
gamma/beta are weight/bias. Cross-layer sharing (ALE) is unrolled into copies. The activation is
`gelu_new` (BERT's tanh approximation, which our encoders use). Measured with transformers 4.49's TF
classes on a random tiny model: hidden states and RTD logits equal ours within 2e-7, generator MLM
logits within 3e-6 (tests/interop/test_huggingface.py).
"""
import json
import os
import re
import shutil
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf

from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import bert_layout
from official_rtd.methods import electra
from official_rtd.methods import registry
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder
from official_rtd.utils import textio

SAFETENSORS_NAME = "model.safetensors"
TF_H5_NAME = "tf_model.h5"
ACTIVATIONS = ("gelu_new", "gelu")  # ours is BERT's tanh GELU; "gelu" (erf) differs by < 1e-3


class ExportFormatError(ValueError):
  """A model that transformers' ELECTRA classes cannot express."""


class HuggingFaceImportError(ValueError):
  """A transformers checkpoint that does not fit our ELECTRA; names the files and tensors."""


class Slot(NamedTuple):
  """One transformers tensor and the variable it is: "copy" (same shape), "bias" (flattened) or
  "kernel" (a Keras `[in..., out...]` kernel as a PyTorch `Linear` `[out, in]` weight)."""
  name: str
  variable: tf.Variable
  kind: str = "copy"
  fan_out: int = 0

  @property
  def hf_shape(self) -> Tuple[int, ...]:
    shape = tuple(self.variable.shape)
    if self.kind == "bias":
      return (int(np.prod(shape)),)
    if self.kind == "kernel":
      return (self.fan_out, int(np.prod(shape)) // self.fan_out)
    return shape

  def to_hf(self) -> np.ndarray:
    value = self.variable.numpy()
    if self.kind == "kernel":
      return np.ascontiguousarray(value.reshape(-1, self.fan_out).T)
    return value.reshape(self.hf_shape)

  def from_hf(self, value: np.ndarray) -> np.ndarray:
    if self.kind == "kernel":
      return np.ascontiguousarray(value.T).reshape(self.variable.shape)
    return value.reshape(self.variable.shape)


def _linear(name: str, layer) -> List[Slot]:
  fan_out = int(np.prod(layer.bias.shape))
  return [Slot(f"{name}.weight", layer.kernel, "kernel", fan_out),
          Slot(f"{name}.bias", layer.bias, "bias")]


def _layer_norm(name: str, layer) -> List[Slot]:
  return [Slot(f"{name}.weight", layer.gamma), Slot(f"{name}.bias", layer.beta)]


def embedding_slots(encoder: TransformerEncoder, prefix: str = "electra.") -> List[Slot]:
  """The token, position and segment tables and the embedding LayerNorm."""
  if encoder.config.position_embedding != "absolute":
    raise ExportFormatError(f"{encoder.config.position_embedding} positions have no equivalent in "
                            "transformers' ELECTRA (absolute position embeddings only)")
  if encoder.config.norm_first:
    raise ExportFormatError("pre-LayerNorm blocks (EncoderConfig.norm_first) have no equivalent in "
                            "transformers' ELECTRA (post-LayerNorm only): use the fine-tuning "
                            "export or --format=saved_model")
  emb = encoder.embeddings
  return [Slot(f"{prefix}embeddings.word_embeddings.weight", emb.embedding_table),
          Slot(f"{prefix}embeddings.position_embeddings.weight",
               emb.position_embeddings.weights[0]),
          Slot(f"{prefix}embeddings.token_type_embeddings.weight", emb.type_embeddings.embeddings),
          *_layer_norm(f"{prefix}embeddings.LayerNorm", emb.layer_norm)]


def encoder_slots(encoder: TransformerEncoder, prefix: str = "electra.",
                  with_embeddings: bool = True) -> List[Slot]:
  """transformers `ElectraModel` tensors of `encoder` (absolute positions only)."""
  slots = embedding_slots(encoder, prefix) if with_embeddings else []
  if encoder.embedding_projection is not None:
    slots += _linear(f"{prefix}embeddings_project", encoder.embedding_projection)
  for i, block in enumerate(encoder.transformer_layers):
    for path, layer in bert_layout.block_layers(block, "."):
      name = f"{prefix}encoder.layer.{i}.{path}"
      slots += _layer_norm(name, layer) if hasattr(layer, "gamma") else _linear(name, layer)
  return slots


def rtd_head_slots(rtd_head) -> List[Slot]:
  return (_linear("discriminator_predictions.dense", rtd_head.dense)
          + _linear("discriminator_predictions.dense_prediction", rtd_head.logit))


def masked_lm_slots(masked_lm) -> List[Slot]:
  """The generator's MLM head; its output embeddings are the input table (always tied)."""
  return (_linear("generator_predictions.dense", masked_lm.dense)
          + _layer_norm("generator_predictions.LayerNorm", masked_lm.layer_norm)
          + [Slot("generator_lm_head.bias", masked_lm.bias)])


def electra_config(encoder: TransformerEncoder, architecture: str) -> dict:
  c = encoder.config
  return {"architectures": [architecture], "model_type": "electra", "vocab_size": c.vocab_size,
          "embedding_size": c.embedding_size, "hidden_size": c.hidden_size,
          "num_hidden_layers": c.num_layers, "num_attention_heads": c.num_attention_heads,
          "intermediate_size": c.intermediate_size, "hidden_act": "gelu_new",
          "hidden_dropout_prob": c.dropout_rate,
          "attention_probs_dropout_prob": c.attention_dropout_rate,
          "max_position_embeddings": c.max_position_embeddings,
          "type_vocab_size": c.type_vocab_size, "initializer_range": c.initializer_range,
          "layer_norm_eps": 1e-12, "position_embedding_type": "absolute",
          "pad_token_id": 0, "summary_type": "first"}


# The tokenizer files of each vocabulary kind, as transformers' `AutoTokenizer` loads them with
# our ids and our `[CLS] a [SEP] b [SEP]` layout: WordPiece as ELECTRA's own tokenizer;
# SentencePiece as DeBERTa-v3's (`spm.model`: the model's ids, no lower-casing, no punctuation
# split); a `tokenizer.json` as a fast tokenizer whose post-processor is set to our layout.
SENTENCEPIECE_NAME = "spm.model"
TOKENIZER_JSON_NAME = "tokenizer.json"
# The vocabulary an import takes from a checkpoint directory, first found: a tokenizer.json
# before a `.model` (the fast tokenizer transformers loads by default holds the ids, which for
# fairseq-converted models are not the `.model`'s).
IMPORT_VOCAB_NAMES = ("vocab.txt", TOKENIZER_JSON_NAME, SENTENCEPIECE_NAME, "spiece.model")


def _write_tokenizer(directory: str, vocab: vocab_lib.Vocab, do_lower_case: bool,
                     max_seq_length: int):
  specials = {f"{role}_token": vocab.token_of(role)
              for role in ("unk", "sep", "pad", "cls", "mask")}
  options = {"model_max_length": max_seq_length}
  if vocab.kind == "wordpiece":
    shutil.copyfile(vocab.path, os.path.join(directory, "vocab.txt"))
    options.update(tokenizer_class="ElectraTokenizer", do_lower_case=do_lower_case)
  elif vocab.kind == "sentencepiece":
    shutil.copyfile(vocab.path, os.path.join(directory, SENTENCEPIECE_NAME))
    options.update(tokenizer_class="DebertaV2Tokenizer", do_lower_case=False, split_by_punct=False,
                   vocab_type="spm", bos_token=specials["cls_token"],
                   eos_token=specials["sep_token"])
  else:
    import tokenizers  # pylint: disable=g-import-not-at-top
    tokenizer = tokenizers.Tokenizer.from_file(vocab.path)
    cls, sep = specials["cls_token"], specials["sep_token"]
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, vocab.cls_id), (sep, vocab.sep_id)])
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(os.path.join(directory, TOKENIZER_JSON_NAME))
    options.update(tokenizer_class="PreTrainedTokenizerFast")
  with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump({**options, **specials}, f, indent=2)
  with open(os.path.join(directory, "special_tokens_map.json"), "w", encoding="utf-8") as f:
    json.dump(specials, f, indent=2)


def _write(directory, tensors, config, vocab: vocab_lib.Vocab, do_lower_case, max_seq_length):
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  os.makedirs(directory)
  path = os.path.join(directory, SAFETENSORS_NAME)
  try:
    save_file({k: np.ascontiguousarray(v, np.float32) for k, v in tensors.items()}, path,
              metadata={"format": "pt"})
  except Exception as e:  # pylint: disable=broad-except; safetensors' own error type
    found = re.search(r"(.*)\(os error (\d+)\)", str(e))
    if not found:
      raise
    raise OSError(int(found.group(2)), os.strerror(int(found.group(2))), path) from None
  textio.umask_mode(path)
  config = dict(config, pad_token_id=vocab.pad_id)
  with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
    json.dump(config, f, indent=2)
  _write_tokenizer(directory, vocab, do_lower_case, max_seq_length)


def export_huggingface(model, vocab: vocab_lib.Vocab, output_dir: str, do_lower_case: bool = True,
                       max_seq_length: int = 512) -> Dict[str, str]:
  """Writes `<output_dir>/discriminator` (`ElectraForPreTraining` when the model has ELECTRA's RTD
  head on its exported encoder, else `ElectraModel`) and, for masked-LM generators,
  `<output_dir>/generator` (`ElectraForMaskedLM`, embeddings copied from the shared table).
  Everything is written to a temporary directory first, then renamed.

  Raises:
    ExportFormatError: for encoders transformers' ELECTRA cannot express (e.g. Electric's
      two-tower generator is skipped, but a non-Transformer exported encoder is an error).
  """
  encoder = model.exported_encoder
  if not isinstance(encoder, TransformerEncoder):
    raise ExportFormatError(f"the {model.name} method's exported encoder is not a BERT-style "
                            "Transformer encoder; transformers' ELECTRA cannot load it")
  encoder = encoder.for_export()
  tmp = f"{output_dir.rstrip('/')}.tmp-{os.getpid()}"
  shutil.rmtree(tmp, ignore_errors=True)
  written = {}
  slots = encoder_slots(encoder)
  heads = model.exported_heads()
  rtd_head = heads.rtd_head
  if rtd_head is not None:
    slots += rtd_head_slots(rtd_head)
    architecture = "ElectraForPreTraining"
  else:
    architecture = "ElectraModel"
  _write(os.path.join(tmp, "discriminator"), {slot.name: slot.to_hf() for slot in slots},
         electra_config(encoder, architecture), vocab, do_lower_case, max_seq_length)
  written["discriminator"] = architecture
  generator, masked_lm = heads.generator, heads.masked_lm
  if generator is not None:
    if not isinstance(generator, TransformerEncoder):
      raise ExportFormatError(f"the {model.name} method's generator is not a BERT-style "
                              "Transformer encoder")
    tensors = {slot.name: slot.to_hf()
               for slot in encoder_slots(generator) + masked_lm_slots(masked_lm)}
    tensors["generator_lm_head.weight"] = generator.get_embedding_table().numpy()
    _write(os.path.join(tmp, "generator"), tensors,
           electra_config(generator, "ElectraForMaskedLM"), vocab, do_lower_case, max_seq_length)
    written["generator"] = "ElectraForMaskedLM"
  shutil.rmtree(output_dir, ignore_errors=True)
  os.replace(tmp, output_dir)
  return written


# --- import --------------------------------------------------------------------------------------
def _pytorch_name(tf_name: str) -> str:
  """A transformers TF weight name (`electra/encoder/layer_._0/attention/self/query/kernel:0`, in
  `tf_model.h5` under `<layer>/<tf model>/`) as the PyTorch state-dict name."""
  parts = tf_name.split(":")[0].split("/")
  if len(parts) > 2 and parts[1].startswith("tf_"):
    parts = parts[2:]
  parts[-1] = {"kernel": "weight", "gamma": "weight", "beta": "bias",
               "embeddings": "weight"}.get(parts[-1], parts[-1])
  return ".".join(parts).replace("_._", ".")


def _from_tf_layout(tensors: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
  """TF-written tensors (kernels `[in, out]`) in the PyTorch layout (weights `[out, in]`)."""
  return {_pytorch_name(name): value.T if name.split(":")[0].endswith("/kernel") else value
          for name, value in tensors.items()}


def read_tensors(directory: str) -> Dict[str, np.ndarray]:
  """The PyTorch-named tensors of a transformers checkpoint directory: `model.safetensors`
  (written by PyTorch or TF classes) or `tf_model.h5`; an `ElectraModel`'s names get `electra.`.

  Raises:
    HuggingFaceImportError: no readable weights file (naming what is there).
  """
  safetensors_path = os.path.join(directory, SAFETENSORS_NAME)
  h5_path = os.path.join(directory, TF_H5_NAME)
  if os.path.isfile(safetensors_path):
    from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
    try:
      tensors = load_file(safetensors_path)
    except Exception as e:  # pylint: disable=broad-except; safetensors raises its own types
      raise HuggingFaceImportError(f"{safetensors_path} is not a readable safetensors file "
                                   f"(truncated or damaged?): {e}") from None
    if any("/" in name for name in tensors):
      tensors = _from_tf_layout(tensors)
  elif os.path.isfile(h5_path):
    import h5py  # pylint: disable=g-import-not-at-top
    raw = {}
    with h5py.File(h5_path, "r") as f:
      f.visititems(lambda name, obj: raw.__setitem__(name, obj[()])
                   if isinstance(obj, h5py.Dataset) else None)
    tensors = _from_tf_layout(raw)
  else:
    present = ", ".join(sorted(os.listdir(directory))) if os.path.isdir(directory) else ""
    raise HuggingFaceImportError(
        f"{directory}: no {SAFETENSORS_NAME} or {TF_H5_NAME} (found: {present or 'no directory'})"
        "; a pytorch_model.bin needs torch to read: convert it with transformers' "
        "save_pretrained(..., safe_serialization=True)")
  if not any(name.startswith("electra.") for name in tensors):
    tensors = {(f"electra.{n}" if n.startswith(("embeddings", "encoder")) else n): v
               for n, v in tensors.items()}
  return tensors


def read_config(directory: str) -> Tuple[dict, EncoderConfig]:
  """`config.json` and the `EncoderConfig` it describes.

  Raises:
    HuggingFaceImportError: a missing file, another model type or an option we do not implement.
  """
  path = os.path.join(directory, "config.json")
  try:
    with open(path, encoding="utf-8") as f:
      config = json.load(f)
  except (OSError, ValueError) as e:
    raise HuggingFaceImportError(f"cannot read {path}: {e}") from None
  problems = []
  if config.get("model_type") != "electra":
    problems.append(f"model_type {config.get('model_type')!r} (expected 'electra')")
  if config.get("position_embedding_type", "absolute") != "absolute":
    problems.append(f"position_embedding_type {config['position_embedding_type']!r} (only "
                    "'absolute')")
  if config.get("hidden_act", "gelu") not in ACTIVATIONS:
    problems.append(f"hidden_act {config['hidden_act']!r} (only {', '.join(ACTIVATIONS)})")
  if abs(config.get("layer_norm_eps", 1e-12) - 1e-12) > 1e-15:
    problems.append(f"layer_norm_eps {config['layer_norm_eps']} (ours is 1e-12)")
  if problems:
    raise HuggingFaceImportError(f"{path}: not importable: {'; '.join(problems)}")
  try:
    encoder_config = EncoderConfig(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
        num_layers=config["num_hidden_layers"], num_attention_heads=config["num_attention_heads"],
        intermediate_size=config["intermediate_size"],
        embedding_size=config.get("embedding_size", config["hidden_size"]),
        max_position_embeddings=config["max_position_embeddings"],
        type_vocab_size=config.get("type_vocab_size", 2),
        dropout_rate=config.get("hidden_dropout_prob", 0.1),
        attention_dropout_rate=config.get("attention_probs_dropout_prob", 0.1),
        initializer_range=config.get("initializer_range", 0.02))
  except KeyError as e:
    raise HuggingFaceImportError(f"{path}: no {e.args[0]!r}") from None
  return config, encoder_config


def _plan(slots: List[Slot], tensors: Dict[str, np.ndarray], source: str, problems: List[str]):
  """[(variable, value)] for `slots`; missing or mis-shaped tensors are added to `problems`."""
  plan = []
  for slot in slots:
    value = tensors.get(slot.name)
    if value is None:
      problems.append(f"{source}: missing {slot.name}")
    elif tuple(value.shape) != slot.hf_shape:
      problems.append(f"{source}: {slot.name} has shape {list(value.shape)}, expected "
                      f"{list(slot.hf_shape)}")
    else:
      plan.append((slot.variable, slot.from_hf(value)))
  return plan


def _same_embeddings(a: Dict[str, np.ndarray], b: Dict[str, np.ndarray]) -> bool:
  names = [n for n in a if n.startswith("electra.embeddings.")]
  return all(n in b and a[n].shape == b[n].shape and np.array_equal(a[n], b[n]) for n in names)


def import_huggingface(checkpoint: str, generator: Optional[str] = None, log=print):
  """Our ELECTRA with a transformers checkpoint's weights: `checkpoint` an `ElectraForPreTraining`
  (or `ElectraModel`: the RTD head then starts fresh) directory, `generator` an
  `ElectraForMaskedLM` one. Embeddings are shared when the two hold identical tables (as released
  ELECTRA checkpoints do), else each keeps its own.

  Raises:
    HuggingFaceImportError: naming every missing or mis-shaped tensor, or the unusable file.
  """
  config, encoder_config = read_config(checkpoint)
  if config.get("hidden_act") == "gelu":
    log(f"{checkpoint}: hidden_act 'gelu' (erf); our encoders use BERT's tanh approximation "
        "(as google-research/electra did): hidden states differ by about 1e-3")
  tensors = read_tensors(checkpoint)
  options = {"generator_size": 0.0}
  generator_tensors = None
  if generator:
    _, generator_config = read_config(generator)
    if generator_config.vocab_size != encoder_config.vocab_size:
      raise HuggingFaceImportError(f"{generator}/config.json: vocab_size "
                                   f"{generator_config.vocab_size}, the discriminator's is "
                                   f"{encoder_config.vocab_size}")
    generator_tensors = read_tensors(generator)
    shared = _same_embeddings(tensors, generator_tensors)
    options = {"generator_config": generator_config,
               "embedding_sharing": "shared" if shared else "none"}
    log(f"generator embeddings {'equal' if shared else 'differ from'} the discriminator's: "
        f"embedding_sharing = {options['embedding_sharing']!r}")
  model = registry.build("electra", encoder_config, **options)
  electra.create_variables(model)
  problems: List[str] = []
  plan = _plan(encoder_slots(model.discriminator), tensors, checkpoint, problems)
  if "discriminator_predictions.dense.weight" in tensors:
    plan += _plan(rtd_head_slots(model.rtd_head), tensors, checkpoint, problems)
  else:
    log(f"{checkpoint} has no discriminator_predictions (an ElectraModel): the RTD head starts "
        "fresh")
  if generator:
    shared = options["embedding_sharing"] == "shared"
    plan += _plan(encoder_slots(model.generator, with_embeddings=not shared)
                  + masked_lm_slots(model.masked_lm), generator_tensors, generator, problems)
    output = generator_tensors.get("generator_lm_head.weight")
    if output is not None and not np.array_equal(
        output, generator_tensors.get("electra.embeddings.word_embeddings.weight")):
      problems.append(f"{generator}: generator_lm_head.weight differs from the input embeddings "
                      "(our generators tie them)")
  if problems:
    raise HuggingFaceImportError(f"{len(problems)} problem(s): " + "; ".join(problems))
  for variable, value in plan:
    variable.assign(value.astype(np.float32))
  return model


def checkpoint_vocab(directory: str) -> str:
  """The vocabulary file of a transformers checkpoint directory (`IMPORT_VOCAB_NAMES`, first
  found); raises HuggingFaceImportError naming the directory and the names looked for."""
  for name in IMPORT_VOCAB_NAMES:
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      return path
  raise HuggingFaceImportError(f"{directory} has no tokenizer file "
                               f"({' / '.join(IMPORT_VOCAB_NAMES)}): pass --vocab_file")


def tokenizer_options(directory: str) -> dict:
  """`do_lower_case` (default True) from the checkpoint's `tokenizer_config.json`, if any."""
  path = os.path.join(directory, "tokenizer_config.json")
  if not os.path.isfile(path):
    return {}
  config = textio.load_json(path)
  return {"do_lower_case": config["do_lower_case"]} if "do_lower_case" in config else {}
