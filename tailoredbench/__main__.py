"""``python -m tailoredbench``, and the ``tailoredbench`` command's entry point.

The command's modules load inside :func:`main`, so that Ctrl-C while they load ends in one line and exit code 130.
"""

import signal
import sys
import threading


def _load():
    """The command, loaded with Ctrl-C held until it is: an interrupt inside numpy's import becomes an ImportError."""
    pressed: list[int] = []
    hold = threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if hold:
        signal.signal(signal.SIGINT, lambda number, frame: pressed.append(number))
    try:
        from .cli import main as command
    finally:
        if hold:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt
    return command


def main(argv=None) -> int:
    """Run the ``tailoredbench`` command (:func:`tailoredbench.cli.main`)."""
    try:
        return _load()(argv)
    except KeyboardInterrupt:
        print("tailoredbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
