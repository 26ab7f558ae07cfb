"""A pre-training run as `run_pretraining` performs it: gin, strategy, trainer, optional held-out
evaluation, the run directory's records, training."""
import os

import gin

from official_rtd import gin_config
from official_rtd.finetune import probe
from official_rtd.training import evaluation
from official_rtd.training import run_dir
from official_rtd.training import strategies
from official_rtd.training import trainer as trainer_lib


def run_pretraining(gin_files, gin_params, input_records, model_dir,
                    distribution_strategy="one_device", tpu="", vocab_file=None,
                    num_cpu_devices=1, mode="train", eval_input=None, all_checkpoints=False,
                    log=print):
  """Parses gin, builds the strategy and trainer, then trains and/or evaluates (`mode`: train,
  eval, train_and_eval); returns the trainer and the last metrics (or evaluation rows). Arguments
  are `run_pretraining`'s flags; `log` takes one line."""
  if mode != "train" and not eval_input:
    raise ValueError(f"--mode={mode} needs --eval_input (held-out records)")
  strategies.split_cpu(num_cpu_devices)
  gin_config.parse_gin(gin_files, gin_params)
  strategy = strategies.get_strategy(distribution_strategy, tpu)
  log(f"strategy {type(strategy).__name__} with {strategy.num_replicas_in_sync} replica(s)")
  trainer = trainer_lib.Trainer(model_dir, input_records, strategy,
                                train_config=trainer_lib.TrainConfig(), vocab_file=vocab_file,
                                log=log)
  evaluator = None
  if mode != "train":
    eval_config = evaluation.EvalConfig()
    evaluator = evaluation.Evaluator(
        trainer, eval_input, eval_config,
        probe=probe.from_eval_config(eval_config, trainer.vocab, trainer.do_lower_case))
  if mode == "eval":
    return trainer, trainer.evaluate_checkpoints(evaluator, all_checkpoints)
  if trainer.is_chief:
    # Nothing is written before the directory is known to hold this run (or none) and its
    # checkpoint restores into this model.
    run_dir.check_same_run(model_dir, gin.config_str())
  trainer.restore()
  if trainer.is_chief:
    run_dir.write_run_config(model_dir, gin.config_str(), {
        "gin_file": list(gin_files), "gin_param": list(gin_params or []),
        "input_records": input_records, "distribution_strategy": distribution_strategy},
        trainer.vocab, trainer.do_lower_case)
  metrics = trainer.train(evaluator, evaluator.config.eval_every_steps if evaluator else 0)
  log(f"done: checkpoints in {model_dir}, TensorBoard logs in {os.path.join(model_dir, 'train')} "
      f"(tensorboard --logdir {model_dir}), fine-tunable export in "
      f"{os.path.join(model_dir, 'export')}")
  return trainer, metrics
