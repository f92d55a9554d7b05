"""The thread count of the BLAS NumPy loaded (OpenBLAS, found in this process's memory map).

Data-parallel workers each run their matmuls on one BLAS thread (W workers on W cores, instead
of W workers each starting a BLAS pool that competes for the same cores). Without OpenBLAS (an
MKL or Accelerate NumPy) nothing is changed and `threads()` is None.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _find() -> tuple | None:
    """(set, get) ctypes functions of the OpenBLAS NumPy loaded, or None if there is none."""
    import numpy  # noqa: F401  (loads its BLAS, so the map below lists it)

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        prefix = "scipy_openblas" if "scipy" in os.path.basename(path) else "openblas"
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for suffix in ("64_", "_64_", ""):
            setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                return setter, getter
    return None


_blas = _find()
_guard = threading.Lock()
_held = [0, None]  # callers inside limit_threads, the thread count to restore after the last


def threads() -> int | None:
    """OpenBLAS's current thread count, or None without OpenBLAS."""
    return int(_blas[1]()) if _blas else None


def set_threads(n: int) -> bool:
    """Set OpenBLAS's thread count for the whole process; False (nothing done) without it."""
    if n < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {n}")
    if _blas is None:
        return False
    _blas[0](n)
    return True


@contextmanager
def limit_threads(n: int) -> Iterator[None]:
    """Run the block with OpenBLAS on n threads, then restore the count it had before (blocks
    entered from several threads at once restore it when the last one leaves)."""
    with _guard:
        if _held[0] == 0:
            _held[1] = threads()
            set_threads(n)
        _held[0] += 1
    try:
        yield
    finally:
        with _guard:
            _held[0] -= 1
            if _held[0] == 0 and _held[1] is not None:
                set_threads(_held[1])
