"""official_rtd: pre-training text encoders as discriminators (ELECTRA and its family).

Model Garden is Keras 2 (`tf_keras`), as is all of this package. Unless the caller set it,
`TF_USE_LEGACY_KERAS=1` makes TensorFlow map `tf.keras` to `tf_keras` too, and spares every
process that imports TensorFlow after this package the start-up of Keras 3 (and scikit-learn,
which it pulls in): 1.6 s of about 7 per process here (benchmarks/results/test_suite.md).
"""
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
