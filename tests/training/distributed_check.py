"""Run as a script (a fresh process, since logical devices must be set before TensorFlow starts):
one gradient computation on the same global batch, with the same weights and the same generator
samples, under OneDeviceStrategy, under MirroredStrategy over 2 logical CPUs, and under Mirrored
accumulating 2 micro-batches per replica (ELECTRA; BERT-MLM accumulated too). Prints JSON."""
import functools
import json
import sys

from official_rtd import runs
from official_rtd.training import strategies

strategies.split_cpu(2)

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from official_rtd.data import pretrain_dataloader  # pylint: disable=g-import-not-at-top
from official_rtd.methods import electra  # pylint: disable=g-import-not-at-top
from official_rtd.methods import mlm  # pylint: disable=g-import-not-at-top
from official_rtd.modeling.encoder_config import \
    EncoderConfig  # pylint: disable=g-import-not-at-top
from official_rtd.training import trainer as trainer_lib  # pylint: disable=g-import-not-at-top

METHODS = {"electra": functools.partial(electra.build_electra_pretrainer, generator_size=0.5),
           "mlm": mlm.build_mlm_pretrainer}
# (method, run, strategy, micro-batches per replica)
RUNS = (("electra", "one_device", "one_device", 1), ("electra", "mirrored", "mirrored", 1),
        ("electra", "accumulated", "mirrored", 2), ("mlm", "one_device", "one_device", 1),
        ("mlm", "accumulated", "mirrored", 2))


def main(records, model_dir):
  encoder = EncoderConfig(hidden_size=32, num_layers=1, num_attention_heads=2,
                          intermediate_size=64, embedding_size=32, max_position_embeddings=64,
                          dropout_rate=0.0, attention_dropout_rate=0.0)
  batch = next(iter(pretrain_dataloader.load_pretraining_dataset(
      pretrain_dataloader.PretrainInputConfig(records, 8, 64, 10, is_training=False))))
  results, weights = {}, {}
  # One MirroredStrategy for all its runs: two would hand out the same collective keys.
  built = {name: strategies.get_strategy(name) for name in ("one_device", "mirrored")}
  for method, name, strategy_name, k in RUNS:
    strategy = built[strategy_name]
    train = trainer_lib.TrainConfig(train_batch_size=8 // k, num_train_steps=1, max_seq_length=64,
                                    max_predictions_per_seq=10, gradient_accumulation_steps=k)
    trainer = runs.build_trainer(model_dir, records, strategy, train_config=train,
                                 encoder_config=encoder, model_fn=METHODS[method],
                                 log=lambda _: None)
    vocab_size = trainer.encoder_config.vocab_size
    if method not in weights:
      weights[method] = trainer.model.get_weights()
    else:
      trainer.model.set_weights(weights[method])
    noise = np.random.default_rng(0).gumbel(size=[8, 10, vocab_size]).astype(np.float32)
    dataset = tf.data.Dataset.from_tensors(dict(batch, gumbel_noise=noise))
    distributed = next(iter(strategy.experimental_distribute_dataset(dataset)))

    @tf.function
    def run(inputs, strategy=strategy, trainer=trainer):
      losses, grads = strategy.run(trainer.step_fn.replica_gradients, args=(inputs,))
      total = {k: strategy.reduce(tf.distribute.ReduceOp.SUM, v.value, axis=None)
               for k, v in losses.items()}
      return total, [strategy.experimental_local_results(g)[0] for g in grads]

    losses, grads = run(distributed)
    results[method, name] = {"replicas": strategy.num_replicas_in_sync,
                             "losses": {k: float(v) for k, v in losses.items()},
                             "grads": [g.numpy() for g in grads]}
  report = {}
  for method, name, _, _ in RUNS:
    one, other = results[method, "one_device"], results[method, name]
    report[f"{method}/{name}"] = {
        "replicas": other["replicas"], "losses": other["losses"],
        "max_grad_abs_diff": max(float(np.abs(a - b).max())
                                 for a, b in zip(one["grads"], other["grads"])),
        "max_grad_abs": max(float(np.abs(a).max()) for a in one["grads"]),
        "num_grads": len(one["grads"])}
  print(json.dumps(report))


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
