"""``python -m tailoredbench``, and the ``tailoredbench`` command's entry point.

The command's modules load inside :func:`main`, so that Ctrl-C while they load ends in one line and exit code 130.
"""

import sys

from .errors import ctrl_c_held


def main(argv=None) -> int:
    """Run the ``tailoredbench`` command (:func:`tailoredbench.cli.main`)."""
    try:
        with ctrl_c_held():  # an interrupt inside numpy's import would become an ImportError
            from .cli import main as command
        return command(argv)
    except KeyboardInterrupt:
        print("tailoredbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
