"""Files written whole or not at all: a temporary file beside the target, then a rename.

A reader (or a crash, or Ctrl-C) never sees half a file: ``os.replace`` is atomic on
one file system, and the temporary file lives in the target's own folder. The file gets
the mode a plain ``open`` would give it (``0o666`` less the umask), not the temporary
file's private ``0o600``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere setting it is the only way to read it: set back at once
    os.umask(mask)
    return mask


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # mkstemp's 0o600 would otherwise survive the rename
        os.chmod(temporary, 0o666 & ~umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    return write_bytes(path, text.encode("utf-8"))
