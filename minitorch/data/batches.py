"""The corpus (a path, or the embedded default text), its contiguous 90/10 split and seeded
random batches. Sampling draws only from the numpy Generator it is given, so a run's batches
are fixed by its seed and can be resumed from the Generator's saved state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DEFAULT_CORPUS = Path(__file__).with_name("default_corpus.txt")


def read_corpus(path: str | Path | None = None) -> str:
    """The text at `path` (UTF-8), or the embedded default corpus when path is None."""
    p = DEFAULT_CORPUS if path is None else Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"corpus file not found: {p}")
    text = p.read_text(encoding="utf-8")
    if not text:
        raise ValueError(f"corpus file is empty: {p}")
    return text


def encode_corpus(tokenizer, text: str) -> np.ndarray:
    """All of `text` as a 1-D int64 array of token ids."""
    return np.asarray(tokenizer.encode(text), dtype=np.int64)


def train_val_split(ids: np.ndarray, train_frac: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous split: the first train_frac of the tokens train, the rest validate."""
    if not 0.0 < train_frac < 1.0:
        raise ValueError(f"train_frac must be in (0, 1), got {train_frac}")
    n = int(len(ids) * train_frac)
    return ids[:n], ids[n:]


def get_batch(data: np.ndarray, batch_size: int, block_size: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """batch_size windows at random offsets: x (B, T) and targets y = x shifted left by one.

    Args:
        data: 1-D token ids; needs more than block_size of them.
        rng: the only source of randomness (one integers() draw per call).
    Returns:
        x, y: int64 arrays of shape (B, T) with y[b, t] == data[start_b + t + 1].
    """
    if len(data) <= block_size:
        raise ValueError(f"split has {len(data)} tokens; needs more than block_size={block_size}"
                         " (use a longer corpus or a smaller --block_size)")
    starts = rng.integers(0, len(data) - block_size, size=batch_size)  # (B,)
    idx = starts[:, None] + np.arange(block_size)  # (B, T)
    return data[idx], data[idx + 1]
