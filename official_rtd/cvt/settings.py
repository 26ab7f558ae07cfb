"""What `run_cvt` and `cvt_translate` share without TensorFlow (their `--help` imports no more)."""

# Valid values of every number of `CvtRunConfig` (`ranges.Range`), checked where the config is
# built, for `run_cvt` and `cvt_translate` alike, and stated in their `--help`.
RUN_CONFIG_RANGES = {
    "word_dim": (1, None, True), "char_dim": (1, None, True), "lstm1_size": (1, None, True),
    "lstm2_size": (1, None, True), "projection_size": (1, None, True),
    "hidden_size": (1, None, True), "train_steps": (1, None, True),
    "train_batch_size": (1, None, True), "max_sentence_length": (2, None, True),
    "max_train_sentences": (0, None, True), "train_fraction": (0, 1, False),
    "vocab_unlabeled_sentences": (0, None, True), "vocab_min_count": (1, None, True),
    "target_min_count": (1, None, True), "beam_size": (1, None, True),
    "max_decode_length": (1, None, True), "attention_dropout": (0, 1, True, False),
    "learning_rate": (0, None, True), "warmup_steps": (0, None, True),
    "unlabeled_start_step": (0, None, True), "unlabeled_loss_weight": (0, None, False),
    "ema_decay": (0, 1, True),
    "eval_every_steps": (0, None, True), "patience": (0, None, True),
    "save_checkpoints_steps": (0, None, True), "log_every_steps": (1, None, True),
    "num_trials": (1, None, True),
}
