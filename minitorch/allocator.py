"""Opt-in allocator tuning for training loops (glibc only; never applied at import).

A training step frees and re-allocates the same large activation buffers every step. glibc
returns freed blocks above its mmap/trim thresholds to the OS and faults them back in on the
next step (thousands of page faults per step here, ~25-30% of a step's time). Raising the
thresholds keeps those blocks in the process. This changes the whole process's allocator, so
only `minitorch train` turns it on by default; library users call it themselves.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
MMAP_THRESHOLD = 32 * 2**20  # glibc's upper bound for the mmap threshold on 64-bit
TRIM_THRESHOLD = 2**30


def tune_allocator() -> bool:
    """Keep freed large temporaries in the heap instead of returning them to the OS.

    Returns:
        True if glibc accepted the settings, False where there is no glibc mallopt.
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD,
                                                                      TRIM_THRESHOLD))
