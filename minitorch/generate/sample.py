"""Autoregressive sampling with the autograd model: recompute the (cropped) context each step,
keep only the last position's logits, then temperature, top-k and one seeded draw.

No graph is built (no_grad). A KV-cached path can live beside this file; this one stays simple.
"""

from __future__ import annotations

import numpy as np

from ..engine import no_grad


def next_token_probs(logits: np.ndarray, temperature: float = 1.0,
                     top_k: int | None = None) -> np.ndarray:
    """Sampling distribution from last-position logits (B, V) -> probabilities (B, V), float64.

    temperature 0 puts all mass on the argmax; top_k keeps the k largest logits (ties at the
    k-th value are kept too).
    """
    logits = np.asarray(logits, dtype=np.float64)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be >= 1 (or None for no limit), got {top_k}")
    if temperature == 0:
        probs = np.zeros_like(logits)
        probs[np.arange(len(logits)), logits.argmax(-1)] = 1.0
        return probs
    z = logits / temperature  # (B, V)
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.sort(z, axis=-1)[:, -top_k][:, None]  # (B, 1) the k-th largest value
        z = np.where(z < kth, -np.inf, z)
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def generate(model, ids, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, rng: np.random.Generator | None = None) -> np.ndarray:
    """Extend token ids by max_new_tokens sampled tokens.

    Args:
        model: a GPT (forward(idx) -> (logits (B, T, V), None)) with config.block_size.
        ids: prompt ids, shape (T,) or (B, T), T >= 1.
        max_new_tokens: how many tokens to append.
        temperature: divides the logits; 0 means greedy.
        top_k: sample among the k most likely tokens only (None = all).
        rng: numpy Generator for the draws (default: seeded with 0, so calls are repeatable).
    Returns:
        int64 ids of shape (T + max_new_tokens,) or (B, T + max_new_tokens).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    seq = np.asarray(ids, dtype=np.int64)
    squeeze = seq.ndim == 1
    seq = seq[None] if squeeze else seq  # (B, T)
    if seq.ndim != 2 or seq.shape[1] == 0:
        raise ValueError(f"generate needs a non-empty prompt of shape (T,) or (B, T), "
                         f"got {seq.shape}")
    block = model.config.block_size
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            for _ in range(max_new_tokens):
                logits, _ = model(seq[:, -block:])  # context cropped to block_size: (B, T', V)
                probs = next_token_probs(logits.data[:, -1, :], temperature, top_k)  # (B, V)
                nxt = np.array([rng.choice(len(p), p=p) for p in probs])  # (B,) one draw per row
                seq = np.concatenate([seq, nxt[:, None]], axis=1)
    finally:
        model.train(was_training)
    return seq[0] if squeeze else seq
