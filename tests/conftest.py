"""pytest runs tf.test.TestCase classes without absl's main: mark absl flags parsed so the
TestCase temp-dir helpers work."""
from absl import flags

flags.FLAGS.mark_as_parsed()
