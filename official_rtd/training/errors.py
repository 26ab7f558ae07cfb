"""The pre-training run's own errors (user errors: the tools report them in one line)."""


class TrainingSetupError(ValueError):
  """Inputs and configuration that do not fit together; raised before training starts."""


class NonFiniteError(ValueError):
  """A loss or weight that went NaN or infinite during training."""
