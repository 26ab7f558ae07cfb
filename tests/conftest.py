"""pytest runs tf.test.TestCase classes without absl's main: mark absl flags parsed so the
TestCase temp-dir helpers work, give every test a clean gin configuration, and leave out
`tf.test.TestCase.test_session` (a deprecated context manager that unittest's name rule collects
as a test, and that skips itself: 73 false "skipped" per run)."""
import gin
import pytest
import tensorflow as tf
from absl import flags

flags.FLAGS.mark_as_parsed()


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def pytest_collection_modifyitems(items):
  inherited = tf.test.TestCase.test_session
  def function(item):
    obj = getattr(item, "obj", None)
    return getattr(obj, "__func__", obj)
  items[:] = [item for item in items if function(item) is not inherited]
