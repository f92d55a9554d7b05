"""Token-by-token generation on the graph-free path: with a KV cache, or recomputing the context.

Both loops share one sampler (temperature, top-k, a seeded np.random.Generator), so with the same
seed they produce the same tokens whenever their logits agree.

Past block_size (overflow="slide", the default): the context is cropped to its last block_size
tokens, as nanoGPT's generate does. With the cache this means re-prefilling those block_size
tokens for every token beyond the block (positions restart at 0 in the cropped window), so the
result equals recomputation on the cropped context exactly, but each such token costs a full
prefill. overflow="error" raises before any work if the positions needed exceed block_size.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .infer import InferenceGPT, KVCache

OVERFLOW = ("slide", "error")


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A Generator from a seed (int), an existing Generator, or None (fresh entropy)."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def sample_next(logits: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
                rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Draw one token per row.

    Args:
        logits: (B, V) scores of the next token.
        temperature: > 0 divides the logits; 0 means greedy (argmax, lowest id on ties).
        top_k: keep the k highest logits (ties with the k-th are kept); None keeps all;
            k > V is treated as V.
        rng: a seeded np.random.Generator or an int seed.
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
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[:, -top_k, None]  # (B, 1)
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - np.max(z, axis=-1, keepdims=True))
    cdf = np.cumsum(p, axis=-1)  # (B, V), unnormalised
    u = as_rng(rng).random(z.shape[0])[:, None] * cdf[:, -1:]  # (B, 1) uniform in [0, total)
    return np.sum(cdf <= u, axis=-1).astype(np.int64)  # first id whose cdf exceeds u


def _check(ids, max_new_tokens: int, block_size: int, overflow: str) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.ndim == 1:
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
    return ids.astype(np.int64)


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
        (B, T + max_new_tokens) ids: the prompt followed by the sampled tokens.
    """
    block = engine.config.block_size
    seq = _check(ids, max_new_tokens, block, overflow)
    rng = as_rng(rng)
    if max_new_tokens == 0:
        return seq
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
    return seq


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
        (B, T + max_new_tokens) ids.
    """
    seq = _check(ids, max_new_tokens, block_size, overflow)
    rng = as_rng(rng)
    for _ in range(max_new_tokens):
        logits = np.asarray(next_logits(seq[:, -block_size:]))
        if logits_out is not None:
            logits_out.append(logits)
        seq = np.concatenate([seq, sample_next(logits, temperature, top_k, rng)[:, None]], axis=1)
    return seq


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
