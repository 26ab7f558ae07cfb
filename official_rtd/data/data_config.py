"""Settings of one `create_pretraining_data` run (`DataConfig`, the tool's flags): a light module
(TensorFlow is imported only to validate), so the tool can read its flags before TensorFlow
loads."""
import dataclasses
import re
from typing import Optional

from official_rtd.data import corpus as corpus_lib
from official_rtd.data import packing
from official_rtd.utils import ranges

MIN_SEQ_LENGTH = 5  # [CLS] a [SEP] b [SEP]


# Valid values of DataConfig's numbers (`ranges.Range`); the relational checks are in `validate`.
DATA_CONFIG_RANGES = {
    "dupe_factor": (0, None, True), "mask_prob": (0, 1, False), "short_seq_prob": (0, 1, True),
    "single_segment_prob": (0, 1, True), "sentences_per_example": (0, None, True),
    "num_shards": (1, None, True), "num_workers": (0, None, True), "chunk_bytes": (1, None, True)}


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
  overwrite: bool = False  # replace records that other settings made in `output_dir`

  def validate(self):
    from official_rtd.data import tokenizer as tokenizer_lib  # pylint: disable=g-import-not-at-top
    from official_rtd.ops import masking  # pylint: disable=g-import-not-at-top
    try:
      ranges.check_ranges(self, DATA_CONFIG_RANGES)
    except ValueError as e:
      raise ConfigError(str(e)) from None
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
        (1 <= self.max_predictions_per_seq <= self.max_seq_length,
         f"--max_predictions_per_seq={self.max_predictions_per_seq} must be in "
         f"[1, --max_seq_length={self.max_seq_length}]"),
        (self.mask_strategy in masking.STRATEGIES,
         f"--mask_strategy={self.mask_strategy} must be one of {sorted(masking.STRATEGIES)}"),
        (self.tokenizer in tokenizer_lib.TOKENIZERS,
         f"--tokenizer={self.tokenizer} must be one of {list(tokenizer_lib.TOKENIZERS)}"),
        (self.packing in packing.PACKING_MODES,
         f"--packing={self.packing} must be one of {list(packing.PACKING_MODES)}"),
        (self.packing == "sentences" or self.sentences_per_example == 1,
         f"--sentences_per_example={self.sentences_per_example} applies only with "
         f"--packing=sentences (got --packing={self.packing})"),
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
