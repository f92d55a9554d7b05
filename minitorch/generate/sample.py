"""Choosing next tokens: one check of the sampling arguments, the next-token distribution
(temperature, top-k), the seeded draw, and the recompute loop that every sampler shares.

`generate` is that loop on the autograd GPT (eval mode, no_grad: no graph is built); cached.py
adds the KV-cached loop on the graph-free path, drawing through the same sample_next.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..engine import no_grad

OVERFLOW = ("slide", "error")  # past block_size: crop the context to its tail, or raise


def check_sampling(temperature, top_k) -> None:
    """Raise ValueError unless temperature is a finite number >= 0 and top_k is None or an
    int >= 1. Every sampling entry point calls this before any work."""
    number = (isinstance(temperature, (int, float, np.integer, np.floating))
              and not isinstance(temperature, bool))
    if not (number and math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if top_k is not None and not (isinstance(top_k, (int, np.integer))
                                  and not isinstance(top_k, bool) and top_k >= 1):
        raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")


def next_token_probs(logits: np.ndarray, temperature: float = 1.0,
                     top_k: int | None = None) -> np.ndarray:
    """Sampling distribution from last-position logits (B, V) -> probabilities (B, V), float64.

    temperature 0 puts all mass on the argmax (lowest id on ties); top_k keeps the k largest
    logits (ties at the k-th value are kept too; k > V keeps all).
    """
    check_sampling(temperature, top_k)
    logits = np.asarray(logits, dtype=np.float64)
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


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A Generator from a seed (int) or an existing one; None means seed 0 (repeatable)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(0 if rng is None else rng)


def sample_next(logits: np.ndarray, temperature: float = 1.0, top_k: int | None = None,
                rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Draw one token per row: the only place a sampler turns logits into ids.

    Args:
        logits: (B, V) scores of the next token.
        temperature: > 0 divides the logits; 0 means greedy (argmax, lowest id on ties), which
            draws nothing from rng.
        top_k: keep the k highest logits (ties with the k-th are kept); None keeps all;
            k > V is treated as V.
        rng: a np.random.Generator or an int seed (None: seed 0); one rng.choice per row.
    Returns:
        (B,) int64 token ids.
    """
    check_sampling(temperature, top_k)
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2:
        raise ValueError(f"sample_next expects logits of shape (B, V), got {logits.shape}")
    if temperature == 0:
        return np.argmax(logits, axis=-1).astype(np.int64)
    probs = next_token_probs(logits, temperature, top_k)  # (B, V)
    rng = as_rng(rng)
    return np.array([rng.choice(len(p), p=p) for p in probs], dtype=np.int64)


def check_request(ids, max_new_tokens: int, block_size: int, overflow: str, temperature,
                  top_k) -> tuple[np.ndarray, bool]:
    """Validate a generation request; returns the prompt as (B, T) int64 and whether it came
    in as (T,)."""
    check_sampling(temperature, top_k)
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


def generate_recompute(next_logits: Callable[[np.ndarray], np.ndarray], ids, max_new_tokens: int,
                       block_size: int, temperature: float = 1.0, top_k: int | None = None,
                       rng: np.random.Generator | int | None = None, overflow: str = "slide",
                       logits_out: list[np.ndarray] | None = None,
                       on_token: Callable[[np.ndarray], None] | None = None) -> np.ndarray:
    """The reference loop: run the whole (cropped) context through `next_logits` for every token.

    Args:
        next_logits: context (B, t) -> (B, V) logits of the token after it; e.g. the autograd
            GPT (`autograd_next_logits`) or the graph-free path (cached.infer_next_logits).
        ids: prompt, (T,) or (B, T) integer ids.
        max_new_tokens: how many tokens to append.
        block_size: the longest context next_logits accepts.
        temperature, top_k, rng: see sample_next.
        overflow: "slide" crops the context to its last block_size tokens; "error" raises
            before any work if the positions needed exceed block_size.
        logits_out: if a list, the (B, V) logits used for each new token are appended.
        on_token: called with each step's new ids (B,) as soon as they are drawn (streaming).
    Returns:
        int64 ids (T + max_new_tokens,) or (B, T + max_new_tokens): the prompt, then the samples.
    """
    seq, squeeze = check_request(ids, max_new_tokens, block_size, overflow, temperature, top_k)
    rng = as_rng(rng)
    for _ in range(max_new_tokens):
        logits = np.asarray(next_logits(seq[:, -block_size:]))  # (B, V)
        if logits_out is not None:
            logits_out.append(logits)
        nxt = sample_next(logits, temperature, top_k, rng)  # (B,)
        if on_token is not None:
            on_token(nxt)
        seq = np.concatenate([seq, nxt[:, None]], axis=1)
    return seq[0] if squeeze else seq


def autograd_next_logits(model) -> Callable[[np.ndarray], np.ndarray]:
    """next_logits for generate_recompute from a minitorch GPT (full forward, under no_grad)."""

    def run(ctx: np.ndarray) -> np.ndarray:
        with no_grad():
            logits, _ = model(ctx)  # (B, t, V)
        return logits.data[:, -1]

    return run


def generate(model, ids, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, rng: np.random.Generator | int | None = None,
             on_token: Callable[[np.ndarray], None] | None = None) -> np.ndarray:
    """Extend token ids by max_new_tokens sampled tokens with the autograd GPT.

    generate_recompute on `model` in eval mode (its training mode is restored afterwards),
    cropping the context to block_size as nanoGPT does.

    Args:
        model: a GPT (forward(idx) -> (logits (B, T, V), None)) with config.block_size.
        ids: prompt ids, shape (T,) or (B, T), T >= 1.
        max_new_tokens: how many tokens to append.
        temperature: divides the logits; 0 means greedy.
        top_k: sample among the k most likely tokens only (None = all).
        rng: numpy Generator or int seed for the draws (default: seed 0, so calls repeat).
        on_token: called with each step's new ids (B,) as soon as they are drawn (streaming).
    Returns:
        int64 ids of shape (T + max_new_tokens,) or (B, T + max_new_tokens).
    """
    was_training = model.training
    model.eval()
    try:
        return generate_recompute(autograd_next_logits(model), ids, max_new_tokens,
                                  model.config.block_size, temperature, top_k, rng,
                                  on_token=on_token)
    finally:
        model.train(was_training)
