"""Ctrl-C and SIGTERM handled within a fraction of a second, even during long native calls; and
short writes (a checkpoint save) that a signal must not cut in half.

Python runs a signal handler only in the main thread, between bytecodes: while the main thread
is inside one long call into native code (a Rust vocabulary learner, a C++ trainer) the handler
waits until that call returns, which took 10-15 s in `build_vocab`. `call(fn)` runs `fn` in a
daemon thread and waits for it in short slices, so the handler runs (and raises) at once; the
abandoned thread ends with the process.
"""
import contextlib
import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
_WAIT_SECONDS = 0.1


def call(fn: Callable[..., T], *args, **kwargs) -> T:
  """`fn(*args, **kwargs)` run in a daemon thread; its result, or its exception re-raised here.

  `fn` must not need the main thread (no signal handlers of its own, no TensorFlow graph state
  shared with the caller)."""
  outcome = {}

  def target():
    try:
      outcome["value"] = fn(*args, **kwargs)
    except BaseException as e:  # pylint: disable=broad-except; re-raised in the caller
      outcome["error"] = e

  thread = threading.Thread(target=target, name=getattr(fn, "__name__", "call"), daemon=True)
  thread.start()
  while thread.is_alive():
    thread.join(_WAIT_SECONDS)
  if "error" in outcome:
    raise outcome["error"]
  return outcome["value"]


@contextlib.contextmanager
def uninterrupted():
  """Ctrl-C and SIGTERM arriving in the body are held until it ends, then delivered (the handler
  that was installed runs, e.g. raising KeyboardInterrupt): a checkpoint save, well under a
  second here, is either not started or finished, never half-written. Outside the main thread
  (where Python delivers signals) the body runs as it is."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  held = []
  previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
  for signum in previous:
    signal.signal(signum, lambda number, frame: held.append((number, frame)))
  try:
    yield
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, handler)
    for number, frame in held:
      handler = previous[number]
      if callable(handler):
        handler(number, frame)
      elif handler == signal.SIG_DFL and number == signal.SIGINT:
        raise KeyboardInterrupt
      elif handler == signal.SIG_DFL:
        signal.raise_signal(number)
