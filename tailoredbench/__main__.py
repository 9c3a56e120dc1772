"""``python -m tailoredbench``, and the ``tailoredbench`` command's entry point.

The command's modules load inside :func:`main`, so that Ctrl-C while they load ends in one line and exit code 130.
"""

import signal
import sys
import threading

from .errors import ctrl_c_held


def main(argv=None) -> int:
    """Run the ``tailoredbench`` command (:func:`tailoredbench.cli.main`)."""
    try:
        with ctrl_c_held():  # an interrupt inside numpy's import would become an ImportError
            from .cli import main as command
        code = command(argv)
    except KeyboardInterrupt:
        print("tailoredbench: interrupted", file=sys.stderr)
        code = 130
    if argv is None and threading.current_thread() is threading.main_thread():  # the process's own command: over
        # a Ctrl-C now would interrupt the worker pools' shutdown and print a traceback
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    sys.exit(main())
