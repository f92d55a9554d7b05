"""KV-cached generation on the graph-free path, plus the graph-free next_logits for the
recompute loop (sample.generate_recompute).

Every loop (this one, sample.generate_recompute, and sample.generate on the autograd GPT) checks
its arguments with sample.check_request and draws with sample.sample_next: temperature 0 takes
the argmax and draws nothing from the rng; otherwise one rng.choice per row. So with the same
seed all three produce the same tokens whenever their logits agree, and leave a shared Generator
in the same state (tested).

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
from .sample import (
    OVERFLOW,
    as_rng,
    autograd_next_logits,
    check_request,
    generate_recompute,
    sample_next,
)


def generate_cached(model: InferenceGPT, ids, max_new_tokens: int, temperature: float = 1.0,
                    top_k: int | None = None, rng: np.random.Generator | int | None = None,
                    overflow: str = "slide",
                    logits_out: list[np.ndarray] | None = None,
                    on_token: Callable[[np.ndarray], None] | None = None) -> np.ndarray:
    """Prefill the prompt once, then feed one token at a time through the KV cache.

    Args:
        model: the graph-free model (an InferenceGPT snapshot).
        ids: prompt, (T,) or (B, T) integer ids.
        max_new_tokens, temperature, top_k, rng: as sample.generate_recompute.
        overflow: "slide" or "error" past block_size (the module docstring says what slide costs).
        logits_out: if a list, the (B, V) logits used for each new token are appended.
        on_token: called with each step's new ids (B,) as soon as they are drawn (streaming).
    Returns:
        int64 ids (T + max_new_tokens,) or (B, T + max_new_tokens): the prompt, then the samples.
    """
    block = model.config.block_size
    seq, squeeze = check_request(ids, max_new_tokens, block, overflow, temperature, top_k)
    rng = as_rng(rng)
    if max_new_tokens == 0:
        return seq[0] if squeeze else seq
    cache = model.new_cache(seq.shape[0])
    logits = model(seq[:, -block:], cache, last_only=True)[:, 0]  # (B, V)
    for step in range(max_new_tokens):
        if logits_out is not None:
            logits_out.append(logits)
        nxt = sample_next(logits, temperature, top_k, rng)[:, None]  # (B, 1)
        if on_token is not None:
            on_token(nxt[:, 0])
        seq = np.concatenate([seq, nxt], axis=1)
        if step == max_new_tokens - 1:
            break
        if cache.length < block:
            logits = model(nxt, cache, last_only=True)[:, 0]
        else:  # slide: the window lost its first token, so every cached key is stale
            cache = model.new_cache(seq.shape[0])
            logits = model(seq[:, -block:], cache, last_only=True)[:, 0]
    return seq[0] if squeeze else seq


def infer_next_logits(model: InferenceGPT) -> Callable[[np.ndarray], np.ndarray]:
    """next_logits for generate_recompute from the graph-free path without a cache."""
    return lambda ctx: model(ctx, last_only=True)[:, 0]


__all__ = ["OVERFLOW", "KVCache", "InferenceGPT", "as_rng", "autograd_next_logits",
           "infer_next_logits", "generate_cached", "generate_recompute", "sample_next"]
