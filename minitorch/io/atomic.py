"""The one atomic write: a temp file in the target's folder, fsynced, then os.replace()d, so a
reader (or a process killed mid-write) sees the old file or the new one, never a part.

Checkpoints, token files, run metrics and the suites' JSON artifacts all write through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def write_and_sync(f: BinaryIO, data: bytes) -> None:
    """Write all of `data` to `f` and force it to disk (the seam crash tests replace)."""
    f.write(data)
    f.flush()
    os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_writer(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` only when the `with` block ends without an error.

    Write with `write_and_sync` or plain writes (the file is fsynced before the rename either
    way); on an exception the temp file is removed and `path` is untouched.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; these are ordinary files
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None:  # name the file (a full disk)
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Replace `path` with `data` (str is written as UTF-8) atomically; returns the path."""
    blob = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_writer(path) as f:
        write_and_sync(f, blob)
    return Path(path)


def fsync_dir(path: str | Path) -> None:
    """Persist a folder's entries (the renames into it) themselves."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sweep_temp_files(folder: str | Path, name: str) -> None:
    """Remove the temp files a crashed atomic write of `folder/name` left behind."""
    for tmp in Path(folder).glob(f".{name}.*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()
