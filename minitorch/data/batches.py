"""The contiguous train/val split of a token array (in memory or a memmap of a token file) and
seeded random (B, T) batches. Sampling draws only from the numpy Generator it is given, so a
run's batches are fixed by its seed and can be resumed from the Generator's saved state.
"""

from __future__ import annotations

import numpy as np

from .base import CorpusError


def encode_corpus(tokenizer, text: str) -> np.ndarray:
    """All of `text` as a 1-D int64 array of token ids (small texts; files stream via io)."""
    return np.asarray(tokenizer.encode(text), dtype=np.int64)


def train_val_split(ids: np.ndarray, train_frac: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous split: the first train_frac of the tokens train, the rest validate (views)."""
    if not 0.0 < train_frac < 1.0:
        raise ValueError(f"train_frac must be in (0, 1), got {train_frac}")
    n = int(len(ids) * train_frac)
    return ids[:n], ids[n:]


def check_splits(n_tokens: int, block_size: int, where: str, train_frac: float = 0.9) -> None:
    """CorpusError unless both splits of n_tokens hold more than block_size tokens; the message
    names the corpus, the short split, its length and the corpus length needed."""

    def short(n: int) -> str | None:
        n_train = int(n * train_frac)
        return ("train" if n_train <= block_size else
                "val" if n - n_train <= block_size else None)

    split = short(n_tokens)
    if split is None:
        return
    need = max(block_size + 1, int(block_size / min(train_frac, 1 - train_frac)) - 2)
    while short(need):
        need += 1
    n_train = int(n_tokens * train_frac)
    have = n_train if split == "train" else n_tokens - n_train
    share = train_frac if split == "train" else 1 - train_frac
    raise CorpusError(
        f"{where} is too short: {n_tokens:,} tokens, so the {split} split (the "
        f"{'first' if split == 'train' else 'last'} {share:.0%}) has {have:,}; block_size="
        f"{block_size} needs more than {block_size} tokens in each split, a corpus of at least "
        f"{need:,} tokens (use a longer file or a smaller --block_size)")


def get_batch(data: np.ndarray, batch_size: int, block_size: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """batch_size windows at random offsets: x (B, T) and targets y = x shifted left by one.

    Args:
        data: 1-D token ids (any integer dtype; a memmap is read only where the windows fall);
            needs more than block_size of them.
        rng: the only source of randomness (one integers() draw per call).
    Returns:
        x, y: int64 arrays of shape (B, T) with y[b, t] == data[start_b + t + 1].
    """
    if len(data) <= block_size:
        raise ValueError(f"split has {len(data)} tokens; needs more than block_size={block_size}"
                         " (use a longer corpus or a smaller --block_size)")
    starts = rng.integers(0, len(data) - block_size, size=batch_size)  # (B,)
    idx = starts[:, None] + np.arange(block_size)  # (B, T)
    return data[idx].astype(np.int64, copy=False), data[idx + 1].astype(np.int64, copy=False)
