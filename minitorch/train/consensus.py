"""Before the first step every rank must be running the same job: the same command line, the same
resolved config, the same corpus (its sha256) and the same minitorch code (a hash of its source).
`check_same` compares a dict of such facts across ranks; a difference raises the same ConfigError
on every rank, naming the key and the ranks, so they all stop together (ranks started
differently otherwise train on silently or corrupt memory in mismatched collectives).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from .config import ConfigError

_PACKAGE = Path(__file__).resolve().parents[1]  # minitorch/


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """sha256 over minitorch's Python source files (relative path and bytes, in path order)."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


_ABSENT = "(not given)"


def check_same(dist, facts: dict[str, Any], hint: str) -> None:
    """ConfigError on every rank if any rank's facts differ from rank 0's (a collective: every
    rank calls it with the same keys in mind). `hint` says how to start the ranks alike."""
    if dist.size == 1:
        return
    every = dist.allgather(facts)
    keys = list(every[0]) + sorted({k for f in every[1:] for k in f} - set(every[0]))
    for key in keys:
        values = [f.get(key, _ABSENT) for f in every]
        others = [r for r, v in enumerate(values) if v != values[0]]
        if others:
            rest = "; ".join(f"rank {r}: {values[r]!r}" for r in others[:4])
            more = f" (and {len(others) - 4} more ranks)" if len(others) > 4 else ""
            raise ConfigError(f"the ranks disagree on {key}: rank 0: {values[0]!r}; {rest}"
                              f"{more}; {hint}")
