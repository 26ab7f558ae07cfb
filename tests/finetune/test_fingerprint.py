"""Run fingerprints: a setting added in a later version resumes a directory that never recorded
it, at its default only."""
import tensorflow as tf

from official_rtd.finetune import configs
from official_rtd.finetune import fingerprint


class FingerprintTest(tf.test.TestCase):

  def test_a_setting_added_later_counts_as_its_default(self):
    config = configs.MultipleChoiceConfig(init_checkpoint="", model_dir="", data_dir="")
    new = fingerprint.fingerprint("MultipleChoiceRunner", config)
    old = {"tool": "MultipleChoiceRunner", "inputs": {},
           "settings": {k: v for k, v in new["settings"].items() if k != "protocol"}}
    defaults = fingerprint.field_defaults(config)
    self.assertEqual(defaults["protocol"], "electra")
    self.assertEqual(fingerprint.differences(old, new, defaults), [])
    self.assertEqual(fingerprint.differences(old, new), ["--protocol None → 'electra'"])
    shao = fingerprint.fingerprint("MultipleChoiceRunner", configs.MultipleChoiceConfig(
        init_checkpoint="", model_dir="", data_dir="", protocol="shao"))
    self.assertEqual(fingerprint.differences(old, shao, defaults),
                     ["--protocol 'electra' → 'shao'"])


  def test_a_renamed_setting_resumes_under_its_new_name(self):
    new = {"tool": "CvtRunner", "inputs": {}, "settings": {"train_batch_size": 64, "seed": 0}}
    old = {"tool": "CvtRunner", "inputs": {}, "settings": {"batch_size": 64, "seed": 0}}
    self.assertEqual(fingerprint.differences(old, new), [])
    old["settings"]["batch_size"] = 32
    self.assertEqual(fingerprint.differences(old, new), ["--train_batch_size 32 → 64"])


if __name__ == "__main__":
  tf.test.main()
