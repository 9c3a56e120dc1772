"""Errors that the command line turns into one line on stderr and exit code 2, and Ctrl-C held while it must wait."""

import numbers
import signal
import threading
from contextlib import contextmanager


class TailoredBenchError(ValueError):
    """Bad input from the user: a file, a matrix, a benchmark name or a setting."""


class DataError(TailoredBenchError):
    """A data file is missing, corrupt (hash mismatch) or malformed."""


class CacheWarning(UserWarning):
    """A damaged cache entry was found, removed and is being rebuilt."""


def check_integer(value, name: str, minimum: int | None = None) -> int:
    """``value`` as an int, or a one-line error naming ``name``.

    A bool, a string or a float with a fraction is not an integer; ``20.0`` is 20.

    Examples
    --------
    >>> check_integer(20.0, "budget", 1)
    20
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TailoredBenchError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        value = int(value)
    elif float(value).is_integer():
        value = int(float(value))
    else:
        raise TailoredBenchError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise TailoredBenchError(f"{name} must be at least {minimum}, got {value}")
    return value


@contextmanager
def ctrl_c_held():
    """Hold Ctrl-C until the block ends, then raise it.

    For a block that must not stop halfway: loading modules, and calls into numba, whose compiler calls back from
    C, where Python prints a KeyboardInterrupt and drops it. Compiled code cannot stop halfway anyway, so each
    numba function called from Python is decorated with ``@ctrl_c_held()``, which holds it around every call. Only
    the main thread can hold Ctrl-C, and only while Python's own handler is in place; elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    pressed: list[int] = []
    signal.signal(signal.SIGINT, lambda number, frame: pressed.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if pressed:
            raise KeyboardInterrupt
