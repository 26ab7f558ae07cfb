"""BERT's checkpoint layout of a Transformer block, the naming Google's TF1 ELECTRA checkpoints and
transformers' ELECTRA share: each role of `TransformerBlock.parts()` at its path under
`encoder/layer_<i>` (TF1, `/`-separated, kernel/bias and gamma/beta) or `encoder.layer.<i>`
(transformers, `.`-separated, weight/bias)."""
from typing import Iterator, Tuple

BLOCK_PATHS = {
    "query": "attention/self/query", "key": "attention/self/key",
    "value": "attention/self/value", "attention_output": "attention/output/dense",
    "attention_norm": "attention/output/LayerNorm", "intermediate": "intermediate/dense",
    "output": "output/dense", "output_norm": "output/LayerNorm",
}


def block_layers(block, separator: str = "/") -> Iterator[Tuple[str, object]]:
  """`(path, sublayer)` for each weight-holding sublayer of a `TransformerBlock`, in BERT's
  order, with `separator` between path components."""
  for role, layer in block.parts().items():
    yield BLOCK_PATHS[role].replace("/", separator), layer
