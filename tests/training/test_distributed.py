"""Data parallelism: Mirrored over 2 logical CPUs (also accumulating micro-batches) equals one
device; 2 local MultiWorkerMirrored
workers train and checkpoint. Both run in fresh processes."""
import json
import os
import socket
import subprocess
import sys

import tensorflow as tf

from tests import testutil
from tests import tool_server
from tests.training.test_trainer import RecordsTestCase

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


class DistributedTest(RecordsTestCase):
  PARAGRAPHS = 150

  def test_mirrored_two_cpus_equals_one_device(self):
    result = tool_server.run(
        [sys.executable, os.path.join(HERE, "distributed_check.py"), self.records,
         os.path.join(self.tmp, "mirrored")], timeout=600, cwd=testutil.REPO)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    report = json.loads(result.stdout.strip().splitlines()[-1])
    self.assertEqual(report["electra/one_device"]["replicas"], 1)
    self.assertEqual(report["electra/mirrored"]["replicas"], 2)
    # Mirrored, and Mirrored with 2 micro-batches per replica, equal one device on the batch.
    for run, names in (("electra/mirrored", ("total_loss", "mlm_loss", "rtd_loss")),
                       ("electra/accumulated", ("total_loss", "mlm_loss", "rtd_loss")),
                       ("mlm/accumulated", ("total_loss", "mlm_loss"))):
      one = report[run.split("/")[0] + "/one_device"]
      for name in names:
        self.assertAllClose(one["losses"][name], report[run]["losses"][name], rtol=1e-5,
                            msg=run)
      self.assertGreater(report[run]["num_grads"], 20)
      self.assertLess(report[run]["max_grad_abs_diff"],
                      1e-5 * max(report[run]["max_grad_abs"], 1.0), run)

  def test_multi_worker_mirrored_two_local_workers(self):
    model_dir = os.path.join(self.tmp, "mwm")
    workers = [f"localhost:{free_port()}", f"localhost:{free_port()}"]
    processes = []
    for index in range(2):
      env = dict(os.environ, TF_CONFIG=json.dumps(
          {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
      processes.append(subprocess.Popen(
          ["run_pretraining", "--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/electra.gin",
           f"--input_records={self.records}", f"--model_dir={model_dir}",
           "--distribution_strategy=multi_worker_mirrored",
           "--gin_param=TrainConfig.train_batch_size = 8",
           "--gin_param=TrainConfig.num_train_steps = 4",
           "--gin_param=TrainConfig.save_checkpoints_steps = 4",
           "--gin_param=TrainConfig.log_every_steps = 2",
           "--gin_param=EncoderConfig.num_layers = 1"],
          cwd=testutil.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
          text=True))
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    for process, output in zip(processes, outputs):
      self.assertEqual(process.returncode, 0, output[-3000:])
    self.assertIn("with 2 replica(s)", outputs[0])
    self.assertIn("step 4/4", outputs[0])
    self.assertEqual(tf.train.latest_checkpoint(model_dir), os.path.join(model_dir, "ckpt-4"))
    self.assertFalse([n for n in os.listdir(model_dir) if n.startswith(".tmp_worker")])
    self.assertTrue(os.path.isfile(os.path.join(model_dir, "export", "encoder_config.json")))


if __name__ == "__main__":
  tf.test.main()
