"""`--distribution_strategy` -> a `tf.distribute.Strategy`."""
import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def split_cpu(num_devices: int):
  """Splits the host CPU into `num_devices` logical devices (call before TF touches devices);
  lets `mirrored` run data-parallel on a CPU-only machine, e.g. in tests."""
  if num_devices > 1:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])


def get_strategy(name: str, tpu: str = "") -> tf.distribute.Strategy:
  """one_device: the first GPU, else the CPU; mirrored: all GPUs, else all logical CPUs;
  multi_worker_mirrored: the cluster in TF_CONFIG; tpu: `tpu` (name or grpc address)."""
  if name == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
  if name == "mirrored":
    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    return tf.distribute.MirroredStrategy([d.name for d in devices])
  if name == "multi_worker_mirrored":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    try:
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    except ValueError as e:  # e.g. "Please provide a TPU Name to connect to."
      raise ValueError(f"--distribution_strategy=tpu: no TPU found ({e}); give --tpu=<the TPU's "
                       "name or grpc:// address>, or run where one is attached") from None
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise ValueError(f"--distribution_strategy must be one of {list(STRATEGIES)}, got {name!r}")


def is_chief(strategy: tf.distribute.Strategy) -> bool:
  """Whether this process writes the run's files: not a multi-worker run, or its chief (else
  worker 0 of a cluster without one)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return True
  if resolver.task_type == "chief":
    return True
  return (resolver.task_type == "worker" and resolver.task_id == 0
          and "chief" not in resolver.cluster_spec().as_dict())
