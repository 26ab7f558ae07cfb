"""pytest runs tf.test.TestCase classes without absl's main: mark absl flags parsed so the
TestCase temp-dir helpers work, and give every test a clean gin configuration."""
import gin
import pytest
from absl import flags

flags.FLAGS.mark_as_parsed()


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()
