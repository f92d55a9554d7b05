"""Size limits checked before anything is allocated: a model config's parameter count against a
cap (default MAX_PARAMS, or $MINITORCH_MAX_PARAMS), so a config asking for 10**6-wide layers or
10,000 blocks is refused with its size instead of exhausting memory.
"""

from __future__ import annotations

import os

import numpy as np

from ..models.gpt import GPTConfig

MAX_PARAMS = 100_000_000  # ~400 MB of float32 weights; training needs about 4x that


def max_params() -> int:
    """The parameter cap in force: $MINITORCH_MAX_PARAMS if set (an int > 0), else MAX_PARAMS."""
    raw = os.environ.get("MINITORCH_MAX_PARAMS")
    if raw is None:
        return MAX_PARAMS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"$MINITORCH_MAX_PARAMS must be a positive integer, got {raw!r}")
    return value


def check_model_size(cfg: GPTConfig, dtype=np.float32, limit: int | None = None) -> int:
    """The parameter count of `cfg`; ValueError (with the count and memory needed) over the cap."""
    n = cfg.num_parameters()
    cap = max_params() if limit is None else limit
    if n > cap:
        item = np.dtype(dtype).itemsize
        raise ValueError(
            f"model config (n_layer={cfg.n_layer}, n_embd={cfg.n_embd}, n_hidden={cfg.n_hidden}, "
            f"vocab_size={cfg.vocab_size}, block_size={cfg.block_size}) has {n:,} parameters: "
            f"{_gb(n * item)} of {np.dtype(dtype).name} weights, ~{_gb(4 * n * item)} to train; "
            f"the limit is {cap:,} parameters (raise it with MINITORCH_MAX_PARAMS)")
    return n


def _gb(nbytes: int) -> str:
    return f"{nbytes / 1e9:,.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:,.1f} MB"
