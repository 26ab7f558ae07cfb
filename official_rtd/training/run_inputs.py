"""A pre-training run's inputs, resolved and checked before any model exists: the records (their
sidecars against the vocab, the model's vocab size and sequence length), the vocab (against the
records' hash, and against the one a resumed run was trained with), the phases
(`TrainConfig.phases`), and the distributed input of any step (deterministic for
`TrainConfig.seed`; a resumed run skips the batches its steps consumed).
"""
import dataclasses
import os
from typing import Callable, List, Optional

import gin
import numpy as np
import tensorflow as tf

from official_rtd.data import pretrain_dataloader
from official_rtd.data import records
from official_rtd.data import vocab as vocab_lib
from official_rtd.interop import run_dir
from official_rtd.modeling.encoder_config import EncoderConfig
from official_rtd.ops import masking
from official_rtd.ops import sampling
from official_rtd.training import train_step
from official_rtd.training.errors import TrainingSetupError
from official_rtd.utils import checkpoint_files

SEED_STRIDE = 1_000_003  # training batches' sampling seeds: [seed + stride·(pipeline + 1), index]


@gin.configurable
def dynamic_masking(max_predictions_per_seq: int, mask_prob: float = 0.15,
                    strategy: str = "electra", whole_word_mask: bool = False,
                    rounding: str = "round", final_mask_prob: Optional[float] = None):
  """Masking applied on the fly to unmasked records (`--dupe_factor=0`). With
  `final_mask_prob`, the rate moves linearly from `mask_prob` to it over the run's steps."""
  return masking.MaskingConfig(mask_prob=mask_prob, max_predictions_per_seq=max_predictions_per_seq,
                               strategy=strategy, whole_word_mask=whole_word_mask,
                               rounding=rounding, final_mask_prob=final_mask_prob)


@dataclasses.dataclass(frozen=True)
class Phase:
  """A stretch of the run with one input, sequence length and batch size (`TrainConfig.phases`)."""
  start_step: int
  input_config: pretrain_dataloader.PretrainInputConfig
  train_batch_size: int
  max_seq_length: int
  max_predictions_per_seq: int


class RunInputs:
  """The checked inputs of a run of `train_config` (a `trainer.TrainConfig`).

  Attributes:
    input_config: the first phase's `PretrainInputConfig`.
    vocab: the run's vocabulary; `do_lower_case` its casing (the records').
    encoder_config: `encoder_config` with the vocab's size filled in.
    masked_records: whether the records hold fixed masks (else masking is dynamic).
    phases: the run's `Phase`s, the first its own input.

  Raises:
    TrainingSetupError: inputs and configuration that do not fit together (nothing written).
  """

  def __init__(self, train_config, input_path: str, model_dir: str,
               vocab_file: Optional[str] = None, encoder_config: Optional[EncoderConfig] = None):
    self.train_config = train_config
    self.model_dir = model_dir
    self.input_config, self.vocab = self._check_inputs(input_path, vocab_file,
                                                       encoder_config or EncoderConfig())
    self.phases = self._check_phases(input_path)

  def _resolve(self, input_path, batch_size, seq_length, max_predictions, vocab_sha256=None):
    """(the input config of records `input_path`, whether they are masked, their sidecar)."""
    probe = pretrain_dataloader.PretrainInputConfig(
        input_path=input_path,
        global_batch_size=batch_size * self.train_config.gradient_accumulation_steps,
        seq_length=seq_length, max_predictions_per_seq=max_predictions, vocab_sha256=vocab_sha256)
    try:
      _, masked, sidecar = pretrain_dataloader.resolve_records(probe)
    except records.RecordsError as e:
      raise TrainingSetupError(str(e)) from None
    return probe, masked, sidecar

  def _training_input(self, probe, masked, vocab):
    cfg = self.train_config
    return dataclasses.replace(
        probe, shuffle_buffer_size=cfg.shuffle_buffer_size, seed=cfg.seed,
        vocab_sha256=vocab.sha256,
        dynamic_masking=None if masked else dynamic_masking(probe.max_predictions_per_seq),
        token_tables=None if masked else masking.TokenTables.from_vocab(vocab))

  def _check_inputs(self, input_path, vocab_file, encoder_config):
    cfg = self.train_config
    probe, masked, sidecar = self._resolve(input_path, cfg.train_batch_size, cfg.max_seq_length,
                                           cfg.max_predictions_per_seq)
    vocab = vocab_lib.load_vocab(vocab_file or sidecar["vocab"]["file"])
    if vocab.sha256 != sidecar["vocab"]["sha256"]:
      same_path = os.path.abspath(vocab.path) == os.path.abspath(sidecar["vocab"]["file"])
      raise TrainingSetupError(
          (f"vocab file {vocab.path} changed since the records in {input_path} were built with it "
           f"(sha256 {sidecar['vocab']['sha256'][:12]}... then, {vocab.sha256[:12]}... now; "
           "e.g. build_vocab --overwrite replaced it): rebuild the records with "
           "create_pretraining_data from this vocabulary, or restore the old file")
          if same_path else
          (f"vocab file {vocab.path} is not the one the records in {input_path} were built with "
           f"({sidecar['vocab']['file']}, sha256 {sidecar['vocab']['sha256'][:12]}...): drop "
           "--vocab_file to use the records' own, or rebuild the records with this one"))
    recorded = run_dir.recorded_vocab(self.model_dir)
    if (recorded and recorded[0] != vocab.sha256
        and checkpoint_files.latest(self.model_dir)):
      raise TrainingSetupError(
          f"the records in {input_path} were built with another vocabulary ({vocab.path}, "
          f"{vocab.size} entries) than the run in {self.model_dir} was trained with (its copy: "
          f"{recorded[1]}): resume it with records of its own vocabulary, or give a new "
          "--model_dir; the directory was left as it is")
    if encoder_config.vocab_size is None:
      encoder_config = dataclasses.replace(encoder_config, vocab_size=vocab.size)
    elif encoder_config.vocab_size != sidecar["vocab"]["size"]:
      raise TrainingSetupError(
          f"the model's vocab_size {encoder_config.vocab_size} differs from the records' vocab "
          f"size {sidecar['vocab']['size']} ({input_path})")
    if cfg.max_seq_length > encoder_config.max_position_embeddings:
      raise TrainingSetupError(
          f"max_seq_length {cfg.max_seq_length} exceeds max_position_embeddings "
          f"{encoder_config.max_position_embeddings}")
    self.encoder_config = encoder_config
    self.masked_records = masked
    self.do_lower_case = sidecar["vocab"]["do_lower_case"]
    return self._training_input(probe, masked, vocab), vocab

  def _check_phases(self, input_path) -> List[Phase]:
    """The run's phases, the first being its own input; each later one's records checked against
    the vocab and its sequence length against the position table."""
    cfg = self.train_config
    phases = [Phase(0, self.input_config, cfg.train_batch_size, cfg.max_seq_length,
                    cfg.max_predictions_per_seq)]
    for index, spec in enumerate(cfg.phases, start=1):
      last = phases[-1]
      values = {"input_records": last.input_config.input_path,
                "train_batch_size": last.train_batch_size, "max_seq_length": last.max_seq_length,
                "max_predictions_per_seq": last.max_predictions_per_seq, **spec}
      if values["max_seq_length"] > self.encoder_config.max_position_embeddings:
        raise TrainingSetupError(
            f"TrainConfig.phases[{index - 1}]: max_seq_length {values['max_seq_length']} exceeds "
            f"max_position_embeddings {self.encoder_config.max_position_embeddings} (the position "
            "table is sized when the model is built: set EncoderConfig.max_position_embeddings "
            "to the longest phase's length from the start)")
      probe, masked, _ = self._resolve(values["input_records"], values["train_batch_size"],
                                       values["max_seq_length"], values["max_predictions_per_seq"],
                                       self.vocab.sha256)
      phases.append(Phase(spec["start_step"], self._training_input(probe, masked, self.vocab),
                          values["train_batch_size"], values["max_seq_length"],
                          values["max_predictions_per_seq"]))
    return phases

  def phase_at(self, step: int) -> Phase:
    """The phase that trains step `step` + 1."""
    return [p for p in self.phases if p.start_step <= step][-1]

  def examples_per_step(self, phase: Phase) -> int:
    """Examples one optimizer update of `phase` consumes (all micro-batches)."""
    return phase.train_batch_size * self.train_config.gradient_accumulation_steps

  def _segments(self, model, end: int):
    """(first step, last step + 1, phase) runs of steps up to `end` over which one example costs
    the same: the phases cut where the model's per-example FLOPs change."""
    cuts = sorted({0, end} | {p.start_step for p in self.phases}
                  | set(model.flops_change_steps()))
    cuts = [c for c in cuts if c <= end]
    return [(a, b, self.phase_at(a)) for a, b in zip(cuts, cuts[1:])]

  def _segment_flops_per_step(self, model, first: int, phase: Phase) -> float:
    return self.examples_per_step(phase) * model.train_flops_per_example_at(
        first, phase.max_seq_length, phase.max_predictions_per_seq)

  def train_flops(self, step: int, model) -> float:
    """Section 5.2.2 FLOPs that `step` optimizer updates of `model` (a `PretrainingModel`)
    consumed, phase by phase and over the steps at which its per-example cost changes."""
    return sum((b - a) * self._segment_flops_per_step(model, a, phase)
               for a, b, phase in self._segments(model, step))

  def steps_within(self, budget: float, model) -> int:
    """The most optimizer updates of `model` whose train FLOPs fit in `budget`."""
    step, spent = 0, 0.0
    horizon = max([p.start_step for p in self.phases] + list(model.flops_change_steps())) + 1
    for a, b, phase in self._segments(model, horizon) + [(horizon, None, self.phases[-1])]:
      per_step = self._segment_flops_per_step(model, a, phase)
      fit = int((budget - spent) // per_step)
      if b is None or fit < b - a:
        return step + fit
      step, spent = b, spent + (b - a) * per_step
    raise AssertionError("unreachable: the last segment is open-ended")

  def token_counts(self, is_chief: bool = True, log: Callable[[str], None] = print
                   ) -> np.ndarray:
    """`[vocab]` counts of the original tokens of the training records (one pass, cached in
    `<model_dir>/token_counts.npy`)."""
    cache = os.path.join(self.model_dir, "token_counts.npy")
    if os.path.isfile(cache):
      return np.load(cache)
    config = dataclasses.replace(self.input_config, is_training=False, global_batch_size=1024)
    counts = np.zeros([self.vocab.size], np.int64)
    for batch in pretrain_dataloader.load_pretraining_dataset(config):
      ids = sampling.original_ids(batch)
      ids = ids.numpy()[batch["input_mask"].numpy() > 0]
      counts += np.bincount(ids, minlength=self.vocab.size)
    if is_chief:
      os.makedirs(self.model_dir, exist_ok=True)
      np.save(cache, counts)
    log(f"counted {counts.sum()} tokens of the training records")
    return counts

  def iterator(self, strategy: tf.distribute.Strategy, step: int, num_train_steps: int):
    """The distributed input of `step`'s phase, after the batches its earlier steps consumed
    (`num_train_steps`: the run's length, which a masking-rate schedule spans)."""
    phase = self.phase_at(step)

    def dataset_fn(context: tf.distribute.InputContext):
      replicas_per_pipeline = context.num_replicas_in_sync // context.num_input_pipelines
      skip = (step - phase.start_step) * replicas_per_pipeline
      config = dataclasses.replace(phase.input_config, skip_batches=skip)
      if config.dynamic_masking is not None and config.dynamic_masking.final_mask_prob is not None:
        # The schedule spans the run's steps, counted in this pipeline's batches (from step 0).
        config = dataclasses.replace(config, skip_batches=skip, dynamic_masking=dataclasses.replace(
            config.dynamic_masking,
            schedule_steps=num_train_steps * replicas_per_pipeline))
      # Each batch's generator samples are drawn from its own seed, so a resumed run draws what
      # the uninterrupted one would have.
      base = tf.constant(self.train_config.seed + SEED_STRIDE * (
          1 + self.phases.index(phase) * context.num_input_pipelines + context.input_pipeline_id),
          tf.int64)
      return pretrain_dataloader.load_pretraining_dataset(config, context).enumerate(
          start=skip).map(lambda index, batch: dict(
              batch, **{train_step.SAMPLING_SEED: tf.stack([base, index])}))
    return iter(strategy.distribute_datasets_from_function(dataset_fn))
