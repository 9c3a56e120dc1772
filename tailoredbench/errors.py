"""Errors that the command line turns into one line on stderr and exit code 2."""

import numbers


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
