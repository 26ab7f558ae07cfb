"""Settings of one `create_pretraining_data` run (`DataConfig`, the tool's flags): a light module
(TensorFlow is imported only to validate), so the tool can read its flags before TensorFlow loads."""
import dataclasses
import re
from typing import Optional

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import packing

MIN_SEQ_LENGTH = 5  # [CLS] a [SEP] b [SEP]


class ConfigError(ValueError):
  """Invalid settings (named after the command-line flag)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataConfig:
  """Settings of one `create_pretraining_data` run; field names are the CLI flag names."""
  input_files: tuple = ()
  vocab_file: str
  output_dir: str
  input_tfds: str = ""       # a prepared TFDS text dataset instead of `input_files`
  tfds_data_dir: str = ""
  tfds_split: str = "train"
  tfds_text_key: str = "text"
  runner: str = "local"      # or an Apache Beam runner: DirectRunner, DataflowRunner, ...
  beam_pipeline_options: str = ""
  do_lower_case: Optional[bool] = None  # None: as the vocabulary implies (Vocab.default_lower_case)
  tokenizer: str = "fast"
  max_seq_length: int = 128
  short_seq_prob: float = 0.05
  single_segment_prob: float = 0.1
  packing: str = "fill"
  sentences_per_example: int = 1
  dupe_factor: int = 40
  mask_prob: float = 0.15
  max_predictions_per_seq: int = 20
  mask_strategy: str = "electra"
  whole_word_mask: bool = False
  num_shards: int = 8
  gzip: bool = False
  seed: int = 12345
  num_workers: int = 0  # 0: one per CPU core
  chunk_bytes: int = 1 << 20
  shuffle_chunks: bool = True
  on_decode_error: str = "fail"

  def validate(self):
    from official_rtd.data import tokenizer as tokenizer_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.ops import masking  # pylint: disable=g-import-not-at-top
    checks = [
        (bool(self.input_files) != bool(self.input_tfds),
         "give exactly one of --input_files and --input_tfds"),
        (self.runner != "local" or not self.beam_pipeline_options,
         "--beam_pipeline_options needs a Beam --runner (e.g. DirectRunner)"),
        (not re.search(r"(^|\s)--runner\b", self.beam_pipeline_options),
         "give the runner with --runner, not in --beam_pipeline_options"),
        (self.max_seq_length >= MIN_SEQ_LENGTH,
         f"--max_seq_length={self.max_seq_length} is too small: an example needs at least "
         f"{MIN_SEQ_LENGTH} positions ([CLS] a [SEP] b [SEP])"),
        (self.dupe_factor >= 0, f"--dupe_factor={self.dupe_factor} must be >= 0"),
        (0.0 < self.mask_prob <= 1.0, f"--mask_prob={self.mask_prob} must be in (0, 1]"),
        (1 <= self.max_predictions_per_seq <= self.max_seq_length,
         f"--max_predictions_per_seq={self.max_predictions_per_seq} must be in "
         f"[1, --max_seq_length={self.max_seq_length}]"),
        (self.mask_strategy in masking.STRATEGIES,
         f"--mask_strategy={self.mask_strategy} must be one of {sorted(masking.STRATEGIES)}"),
        (self.tokenizer in tokenizer_lib.TOKENIZERS,
         f"--tokenizer={self.tokenizer} must be one of {list(tokenizer_lib.TOKENIZERS)}"),
        (0.0 <= self.short_seq_prob <= 1.0, f"--short_seq_prob={self.short_seq_prob} must be in [0, 1]"),
        (0.0 <= self.single_segment_prob <= 1.0,
         f"--single_segment_prob={self.single_segment_prob} must be in [0, 1]"),
        (self.packing in packing.PACKING_MODES,
         f"--packing={self.packing} must be one of {list(packing.PACKING_MODES)}"),
        (self.sentences_per_example >= 0,
         f"--sentences_per_example={self.sentences_per_example} must be >= 0"),
        (self.packing == "sentences" or self.sentences_per_example == 1,
         f"--sentences_per_example={self.sentences_per_example} applies only with "
         f"--packing=sentences (got --packing={self.packing})"),
        (self.num_shards >= 1, f"--num_shards={self.num_shards} must be >= 1"),
        (self.num_workers >= 0, f"--num_workers={self.num_workers} must be >= 0"),
        (self.chunk_bytes >= 1, f"--chunk_bytes={self.chunk_bytes} must be >= 1"),
        (self.on_decode_error in corpus_lib.DECODE_ERROR_POLICIES,
         f"--on_decode_error={self.on_decode_error} must be one of "
         f"{list(corpus_lib.DECODE_ERROR_POLICIES)}"),
    ]
    for ok, message in checks:
      if not ok:
        raise ConfigError(message)

  @property
  def masking_config(self):
    """The `ops.masking.MaskingConfig` of these settings."""
    from official_rtd.ops import masking  # pylint: disable=g-import-not-at-top
    return masking.MaskingConfig(mask_prob=self.mask_prob,
                                 max_predictions_per_seq=self.max_predictions_per_seq,
                                 strategy=self.mask_strategy, whole_word_mask=self.whole_word_mask)
