r"""Cross-checks the section 5.2.2 FLOPs counter against the matrix products TensorFlow traces.

  python benchmarks/flops_crosscheck.py

Traces one length-128 forward pass of ELECTRA-Small and ELECTRA-Base (generator + MLM head +
discriminator + RTD head, batch 1) and prints the traced matmul/einsum FLOPs next to the analytic
count (without the embedding look-ups, which the graph does as gathers) and the dissertation's
Table 5.3 figures.
"""
import tensorflow as tf

import common
from official_rtd.methods import electra
from official_rtd.modeling import flops
from official_rtd.modeling.encoder_config import EncoderConfig

SEQ, PREDICTIONS, VOCAB = 128, 19, 30522
SIZES = {"small": (EncoderConfig(vocab_size=VOCAB, hidden_size=256, num_layers=12,
                                 num_attention_heads=4, intermediate_size=1024,
                                 embedding_size=128), 0.25, 3.7e9),
         "base": (EncoderConfig(vocab_size=VOCAB, hidden_size=768, num_layers=12,
                                num_attention_heads=12, intermediate_size=3072,
                                embedding_size=768), 1 / 3, 2.9e10)}


def lookups(config):
  return SEQ * 2 * config.embedding_size * (config.vocab_size + config.max_position_embeddings)


def main():
  print(common.cpu_summary())  # figures from different CPUs are not comparable
  spec = {"input_word_ids": tf.TensorSpec([1, SEQ], tf.int32),
          "input_mask": tf.TensorSpec([1, SEQ], tf.int32),
          "input_type_ids": tf.TensorSpec([1, SEQ], tf.int32),
          "masked_lm_positions": tf.TensorSpec([1, PREDICTIONS], tf.int32),
          "masked_lm_ids": tf.TensorSpec([1, PREDICTIONS], tf.int32),
          "masked_lm_weights": tf.TensorSpec([1, PREDICTIONS], tf.float32)}
  for name, (config, generator_size, paper_inference) in SIZES.items():
    model = electra.build_electra_pretrainer(config, generator_size=generator_size)
    traced = tf.function(lambda batch, model=model: model(batch, training=False)["rtd_logits"])
    graph = flops.graph_matmul_flops(traced.get_concrete_function(spec))
    analytic = (model.train_flops_per_example(SEQ, PREDICTIONS) / 2
                - lookups(model.generator.config) - lookups(config))
    inference = flops.encoder_forward_flops(config, SEQ)
    print(f"ELECTRA-{name}: traced forward {graph:.4e}, analytic {analytic:.4e} "
          f"(ratio {graph / analytic:.6f}); discriminator inference {inference:.3e} vs "
          f"Table 5.3 {paper_inference:.1e} ({inference / paper_inference - 1:+.1%})")


if __name__ == "__main__":
  main()
