"""Token-by-token generation on the graph-free path: with a KV cache, or recomputing the context.

Both loops draw tokens exactly as sample.generate (the autograd sampler) does: its
next_token_probs, then one rng.choice per row. So with the same seed all three produce the same
tokens whenever their logits agree (tested).

Past block_size (overflow="slide", the default): the context is cropped to its last block_size
tokens, as nanoGPT's generate does. With the cache this means re-prefilling those block_size
tokens for every token beyond the block (positions restart at 0 in the cropped window), so the
result equals recomputation on the cropped context exactly, but each such token costs a full
prefill. overflow="error" raises before any work if the positions needed exceed block_size.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .infer import InferenceGPT, KVCache
from .sample import next_token_probs

OVERFLOW = ("slide", "error")


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A Generator from a seed (int) or an existing one; None means seed 0, as sample.generate."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(0 if rng is None else rng)


def sample_next(logits: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
                rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Draw one token per row.

    Args:
        logits: (B, V) scores of the next token.
        temperature: > 0 divides the logits; 0 means greedy (argmax, lowest id on ties).
        top_k: keep the k highest logits (ties with the k-th are kept); None keeps all;
            k > V is treated as V.
        rng: a np.random.Generator or an int seed (None: seed 0).
    Returns:
        (B,) int64 token ids.
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2:
        raise ValueError(f"sample_next expects logits of shape (B, V), got {logits.shape}")
    if not (temperature >= 0 and np.isfinite(temperature)):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
    if temperature == 0:
        return np.argmax(logits, axis=-1).astype(np.int64)
    probs = next_token_probs(logits, temperature, top_k)  # (B, V)
    rng = as_rng(rng)
    return np.array([rng.choice(len(p), p=p) for p in probs], dtype=np.int64)


def _check(ids, max_new_tokens: int, block_size: int, overflow: str) -> tuple[np.ndarray, bool]:
    """The prompt as (B, T) int64, and whether it came in as (T,)."""
    ids = np.asarray(ids)
    squeeze = ids.ndim == 1
    if squeeze:
        ids = ids[None]
    if ids.ndim != 2 or ids.shape[1] < 1 or ids.dtype.kind not in "iu":
        raise ValueError(f"prompt must be integer ids of shape (T,) or (B, T) with T >= 1, got "
                         f"shape {ids.shape} dtype {ids.dtype}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if overflow not in OVERFLOW:
        raise ValueError(f"overflow must be one of {OVERFLOW}, got {overflow!r}")
    needed = ids.shape[1] + max_new_tokens - 1  # positions fed (the last token is never fed)
    if overflow == "error" and max_new_tokens and needed > block_size:
        raise ValueError(f"prompt of {ids.shape[1]} tokens + {max_new_tokens} new tokens needs "
                         f"{needed} positions > block_size {block_size} (overflow='error')")
    return ids.astype(np.int64), squeeze


def generate_cached(engine: InferenceGPT, ids, max_new_tokens: int, temperature: float = 1.0,
                    top_k: int | None = None, rng: np.random.Generator | int | None = None,
                    overflow: str = "slide",
                    logits_out: list[np.ndarray] | None = None) -> np.ndarray:
    """Prefill the prompt once, then feed one token at a time through the KV cache.

    Args:
        engine: the graph-free model.
        ids: prompt, (T,) or (B, T) integer ids.
        max_new_tokens, temperature, top_k, rng: see sample_next.
        overflow: "slide" or "error" past block_size (see the module docstring).
        logits_out: if a list, the (B, V) logits used for each new token are appended.
    Returns:
        int64 ids (T + max_new_tokens,) or (B, T + max_new_tokens): the prompt, then the samples.
    """
    block = engine.config.block_size
    seq, squeeze = _check(ids, max_new_tokens, block, overflow)
    rng = as_rng(rng)
    if max_new_tokens == 0:
        return seq[0] if squeeze else seq
    cache = engine.new_cache(seq.shape[0])
    logits = engine(seq[:, -block:], cache, last_only=True)[:, 0]  # (B, V)
    for step in range(max_new_tokens):
        if logits_out is not None:
            logits_out.append(logits)
        nxt = sample_next(logits, temperature, top_k, rng)[:, None]  # (B, 1)
        seq = np.concatenate([seq, nxt], axis=1)
        if step == max_new_tokens - 1:
            break
        if cache.length < block:
            logits = engine(nxt, cache, last_only=True)[:, 0]
        else:  # slide: the window lost its first token, so every cached key is stale
            cache = engine.new_cache(seq.shape[0])
            logits = engine(seq[:, -block:], cache, last_only=True)[:, 0]
    return seq[0] if squeeze else seq


def generate_recompute(next_logits: Callable[[np.ndarray], np.ndarray], ids, max_new_tokens: int,
                       block_size: int, temperature: float = 1.0, top_k: int | None = None,
                       rng: np.random.Generator | int | None = None, overflow: str = "slide",
                       logits_out: list[np.ndarray] | None = None) -> np.ndarray:
    """The reference loop: run the whole (cropped) context through `next_logits` for every token.

    Args:
        next_logits: context (B, t) -> (B, V) logits of the token after it; e.g. the graph-free
            path without a cache, or the autograd GPT (see `autograd_next_logits`).
        block_size: the longest context next_logits accepts.
        the rest: as generate_cached.
    Returns:
        int64 ids (T + max_new_tokens,) or (B, T + max_new_tokens).
    """
    seq, squeeze = _check(ids, max_new_tokens, block_size, overflow)
    rng = as_rng(rng)
    for _ in range(max_new_tokens):
        logits = np.asarray(next_logits(seq[:, -block_size:]))
        if logits_out is not None:
            logits_out.append(logits)
        seq = np.concatenate([seq, sample_next(logits, temperature, top_k, rng)[:, None]], axis=1)
    return seq[0] if squeeze else seq


def engine_next_logits(engine: InferenceGPT) -> Callable[[np.ndarray], np.ndarray]:
    """next_logits for generate_recompute from the graph-free path without a cache."""
    return lambda ctx: engine(ctx, last_only=True)[:, 0]


def autograd_next_logits(model) -> Callable[[np.ndarray], np.ndarray]:
    """next_logits for generate_recompute from a minitorch GPT (full forward, under no_grad)."""
    from ..engine import no_grad

    def run(ctx: np.ndarray) -> np.ndarray:
        with no_grad():
            logits, _ = model(ctx)
        return logits.data[:, -1]

    return run


__all__ = ["KVCache", "InferenceGPT", "as_rng", "autograd_next_logits", "engine_next_logits",
           "generate_cached", "generate_recompute", "sample_next"]
