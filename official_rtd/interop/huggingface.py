"""Export to Hugging Face transformers' ELECTRA layout (safetensors, `config.json`, tokenizer files).

Our encoders are Model Garden blocks; transformers' ELECTRA is BERT-style. Per block the mapping is
a reshape/transpose: Model Garden's `query` kernel `[H, heads, head_size]` is `query.weight`
`[H, H]` transposed (PyTorch `Linear` weights are `[out, in]`), `attention_output` `[heads,
head_size, H]` is `attention.output.dense`, the FFN kernels are transposed, LayerNorm gamma/beta
are weight/bias. Cross-layer sharing (ALE) is unrolled into copies. The activation is
`gelu_new` (BERT's tanh approximation, which our encoders use). Measured with transformers 4.49's
TF classes on a random tiny model: hidden states and RTD logits equal ours within 2e-7, generator
MLM logits within 3e-6 (tests/interop/test_huggingface.py).
"""
import json
import os
import shutil
from typing import Dict

import numpy as np

from official_rtd.data import vocab as vocab_lib
from official_rtd.modeling.networks.transformer_encoder import TransformerEncoder

SAFETENSORS_NAME = "model.safetensors"


class ExportFormatError(ValueError):
  """A model that transformers' ELECTRA classes cannot express."""


def _linear(kernel: np.ndarray, bias: np.ndarray, name: str, out: dict):
  """A Keras `[in..., out...]` kernel as a PyTorch `Linear` `[out, in]` weight."""
  fan_out = int(np.prod(bias.shape))
  out[f"{name}.weight"] = np.ascontiguousarray(kernel.reshape(-1, fan_out).T)
  out[f"{name}.bias"] = bias.reshape(-1)


def _layer_norm(layer, name: str, out: dict):
  out[f"{name}.weight"], out[f"{name}.bias"] = (v.numpy() for v in (layer.gamma, layer.beta))


def encoder_tensors(encoder: TransformerEncoder, prefix: str = "electra.") -> Dict[str, np.ndarray]:
  """transformers `ElectraModel` state dict of `encoder` (absolute positions only)."""
  if encoder.config.position_embedding != "absolute":
    raise ExportFormatError(f"{encoder.config.position_embedding} positions have no equivalent in "
                            "transformers' ELECTRA (absolute position embeddings only)")
  emb = encoder.embeddings
  out = {f"{prefix}embeddings.word_embeddings.weight": emb.embedding_table.numpy(),
         f"{prefix}embeddings.position_embeddings.weight":
             emb.position_embeddings.weights[0].numpy(),
         f"{prefix}embeddings.token_type_embeddings.weight":
             emb.type_embeddings.embeddings.numpy()}
  _layer_norm(emb.layer_norm, f"{prefix}embeddings.LayerNorm", out)
  if encoder.embedding_projection is not None:
    kernel, bias = (v.numpy() for v in encoder.embedding_projection.weights)
    _linear(kernel, bias, f"{prefix}embeddings_project", out)
  for i, block in enumerate(encoder.transformer_layers):
    name = f"{prefix}encoder.layer.{i}"
    attention = block._attention_layer  # pylint: disable=protected-access
    for part, dense in (("query", attention._query_dense), ("key", attention._key_dense),  # pylint: disable=protected-access
                        ("value", attention._value_dense)):  # pylint: disable=protected-access
      _linear(dense.kernel.numpy(), dense.bias.numpy(), f"{name}.attention.self.{part}", out)
    output = attention._output_dense  # pylint: disable=protected-access
    _linear(output.kernel.numpy(), output.bias.numpy(), f"{name}.attention.output.dense", out)
    _layer_norm(block._attention_layer_norm, f"{name}.attention.output.LayerNorm", out)  # pylint: disable=protected-access
    for part, dense in (("intermediate.dense", block._intermediate_dense),  # pylint: disable=protected-access
                        ("output.dense", block._output_dense)):  # pylint: disable=protected-access
      _linear(dense.kernel.numpy(), dense.bias.numpy(), f"{name}.{part}", out)
    _layer_norm(block._output_layer_norm, f"{name}.output.LayerNorm", out)  # pylint: disable=protected-access
  return out


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


def _write(directory, tensors, config, vocab: vocab_lib.Vocab, do_lower_case, max_seq_length):
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  os.makedirs(directory)
  save_file({k: np.ascontiguousarray(v, np.float32) for k, v in tensors.items()},
            os.path.join(directory, SAFETENSORS_NAME), metadata={"format": "pt"})
  config = dict(config, pad_token_id=vocab.pad_id)
  with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
    json.dump(config, f, indent=2)
  shutil.copyfile(vocab.path, os.path.join(directory, "vocab.txt"))
  specials = {"unk_token": vocab_lib.UNK, "sep_token": vocab_lib.SEP, "pad_token": vocab_lib.PAD,
              "cls_token": vocab_lib.CLS, "mask_token": vocab_lib.MASK}
  with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump({"tokenizer_class": "ElectraTokenizer", "do_lower_case": do_lower_case,
               "model_max_length": max_seq_length, **specials}, f, indent=2)
  with open(os.path.join(directory, "special_tokens_map.json"), "w", encoding="utf-8") as f:
    json.dump(specials, f, indent=2)


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
  tensors = encoder_tensors(encoder)
  heads = model.exported_heads()
  rtd_head = heads.rtd_head
  if rtd_head is not None:
    _linear(rtd_head.dense.kernel.numpy(), rtd_head.dense.bias.numpy(),
            "discriminator_predictions.dense", tensors)
    _linear(rtd_head.logit.kernel.numpy(), rtd_head.logit.bias.numpy(),
            "discriminator_predictions.dense_prediction", tensors)
    architecture = "ElectraForPreTraining"
  else:
    architecture = "ElectraModel"
  _write(os.path.join(tmp, "discriminator"), tensors, electra_config(encoder, architecture),
         vocab, do_lower_case, max_seq_length)
  written["discriminator"] = architecture
  generator, masked_lm = heads.generator, heads.masked_lm
  if generator is not None:
    if not isinstance(generator, TransformerEncoder):
      raise ExportFormatError(f"the {model.name} method's generator is not a BERT-style "
                              "Transformer encoder")
    tensors = encoder_tensors(generator)
    _linear(masked_lm.dense.kernel.numpy(), masked_lm.dense.bias.numpy(),
            "generator_predictions.dense", tensors)
    _layer_norm(masked_lm.layer_norm, "generator_predictions.LayerNorm", tensors)
    tensors["generator_lm_head.weight"] = generator.get_embedding_table().numpy()
    tensors["generator_lm_head.bias"] = masked_lm.bias.numpy()
    _write(os.path.join(tmp, "generator"), tensors,
           electra_config(generator, "ElectraForMaskedLM"), vocab, do_lower_case, max_seq_length)
    written["generator"] = "ElectraForMaskedLM"
  shutil.rmtree(output_dir, ignore_errors=True)
  os.replace(tmp, output_dir)
  return written
