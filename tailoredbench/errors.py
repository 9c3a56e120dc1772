"""Errors that the command line turns into one line on stderr and exit code 2."""


class TailoredBenchError(ValueError):
    """Bad input from the user: a file, a matrix, a benchmark name or a setting."""


class DataError(TailoredBenchError):
    """A data file is missing, corrupt (hash mismatch) or malformed."""


class CacheWarning(UserWarning):
    """A damaged cache entry was found, removed and is being rebuilt."""
