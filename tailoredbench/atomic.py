"""Files written whole or not at all: a temporary file beside the target, then a rename.

A reader (or a crash, or Ctrl-C) never sees half a file; the file gets the mode a plain ``open``
would give it. With ``replace=False`` the temporary file is hard-linked to the target, which
fails if anything is there by then, so a file that appeared meanwhile is never replaced. A
symbolic link at the target is followed, never replaced; errors name the target, never the temporary.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

#: A hard link refused for want of support (not because the target exists): create exclusively instead.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK}


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


def _named(err: OSError, path: str | Path) -> OSError:
    """``err`` naming ``path`` (a full disk names no file, a refused temporary file a random one)."""
    if err.errno is None:
        return err
    return OSError(err.errno, err.strerror, str(path))  # OSError picks the subclass (PermissionError ...)


def target(path: str | Path) -> Path:
    """Where writing ``path`` puts the data: the file at the end of its symbolic links, else ``path``."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def stage(path: str | Path, data: bytes) -> Path:
    """A finished temporary file holding ``data``, beside ``path``'s :func:`target`, for :func:`place`."""
    folder = target(path).parent
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{Path(path).name}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise _named(err, path) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # mkstemp's 0o600 would otherwise survive the rename
        os.chmod(temporary, 0o666 & ~umask())
    except BaseException as err:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _named(err, path) from None
        raise
    return Path(temporary)


def place(temporary: Path, path: str | Path, *, replace: bool = True) -> Path:
    """Put a file from :func:`stage` at ``path``: over what is there, or (``replace=False``) only where nothing is."""
    path = Path(path)
    try:
        if replace:
            os.replace(temporary, target(path))
        else:
            _create(temporary, path)
    except OSError as err:
        raise _named(err, path) from None
    finally:
        Path(temporary).unlink(missing_ok=True)
    return path


def _create(temporary: Path, path: Path) -> None:
    try:
        os.link(temporary, path)
    except OSError as err:
        if err.errno not in _NO_LINKS:
            raise
        # no hard links on this file system: an exclusive create, then a copy
        with open(temporary, "rb") as source, open(path, "xb") as out:
            try:
                shutil.copyfileobj(source, out)
            except BaseException:
                os.unlink(path)
                raise


def discard(temporary: Path) -> None:
    """Remove a file from :func:`stage` that is not to be placed."""
    Path(temporary).unlink(missing_ok=True)


def write_bytes(path: str | Path, data: bytes, *, replace: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`place`); returns the path."""
    return place(stage(path, data), path, replace=replace)


def write_text(path: str | Path, text: str, *, replace: bool = True) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path (see :func:`write_bytes`)."""
    return write_bytes(path, text.encode("utf-8"), replace=replace)


def replace_folder(stage: Path, final: Path) -> None:
    """Put the finished folder ``stage`` at ``final``; what was there goes only once it is in place."""
    old = final.parent / f".{final.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    stage.rename(final)
    shutil.rmtree(old, ignore_errors=True)
