"""Attention: F.scaled_dot_product_attention (a composite, torch's signature), the GPT's fused
causal_self_attention with its composite twin, and RoPE (rope, rope_tables)."""

from __future__ import annotations

import math

import numpy as np

from ...engine import REGISTRY, Tensor, apply, cat, composite
from ...engine.kernels import rope_tables  # noqa: F401  (public here: F.rope_tables)
from .layers import check_dropout_p, dropout


def causal_self_attention(qkv: Tensor, n_head: int, cos: np.ndarray | None = None,
                          sin: np.ndarray | None = None) -> Tensor:
    """Multi-head causal attention: qkv (B, T, 3C) -> (B, T, C); optional RoPE tables
    cos, sin (T, hs/2)."""
    if cos is not None:
        cos, sin = cos.astype(qkv.dtype, copy=False), sin.astype(qkv.dtype, copy=False)
    return apply(REGISTRY["causal_self_attention"], qkv, n_head=n_head, cos=cos, sin=sin)



@composite("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """torch's F.scaled_dot_product_attention: softmax(q k^T * scale + mask) v, scale 1/sqrt(hs)
    by default. q (..., Tq, hs), k (..., Tk, hs), v (..., Tk, hv) -> (..., Tq, hv).

    is_causal: query i sees keys j <= i (torch's top-left alignment, tril(ones(Tq, Tk))).
    attn_mask: broadcastable to (..., Tq, Tk): bool (True = may attend) or float (added).
    dropout_p: as torch, the attention weights are dropped out (each zeroed with probability
    dropout_p, the rest scaled by 1/(1-dropout_p)) whenever it is > 0 (there is no training
    flag: pass 0 in eval); the mask comes from minitorch's default generator (F.dropout's), so
    the values are not torch's, and the gradient flows through the kept weights only.
    """
    if dropout_p:
        dropout_p = check_dropout_p(dropout_p)
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
    Tq, Tk, hs = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(hs) if hs else 1.0  # hs = 0: y is empty whatever the scale
    if scale > 0:  # as torch's math path: sqrt(scale) on each side (its float32 rounding)
        root = math.sqrt(scale)
        att = (query * root) @ (key.mT * root)  # (..., Tq, Tk)
    else:
        att = (query @ key.mT) * scale
    if is_causal:
        attn_mask = np.tril(np.ones((Tq, Tk), dtype=bool))
    empty = None  # bool mask: rows where a query may attend to nothing
    if attn_mask is not None:
        mask = attn_mask if isinstance(attn_mask, Tensor) else Tensor(np.asarray(attn_mask))
        if mask.dtype == np.bool_:
            np.broadcast_to(mask.data, att.shape)  # the shape check only (raises if it cannot)
            blocked = ~mask.data  # at the mask's own shape; the add broadcasts it
            empty = blocked.all(-1, keepdims=True)
            # as torch, -inf is added (not written) where a key is blocked, so a nan or inf
            # score there still makes the row nan; rows with no visible key are left as they
            # are, to be zeroed after the softmax
            bias = np.where(blocked & ~empty, -np.inf, 0.0).astype(att.dtype)
            att = att + Tensor(bias)
        else:
            att = att + mask.to(att.dtype)  # as torch: the mask takes the query dtype
    p = att.softmax(-1)  # (..., Tq, Tk)
    if empty is not None and empty.any():
        # as torch: a query with no visible key gets zeros (nan if its scores have a nan);
        # a product, not a write, so a nan stays nan, forward and backward (a finite upstream
        # gradient passes nothing through the zeroed rows)
        p = p * Tensor((~empty).astype(p.dtype))
    if dropout_p:
        p = dropout(p, dropout_p)  # after the zeroed rows, as torch's math path
    return p @ value  # (..., Tq, hv)


@composite("rope")
def rope(x: Tensor, cos: np.ndarray, sin: np.ndarray) -> Tensor:
    """Rotary position embedding on the last dim of x (..., T, hs), halves rotated as pairs:
    (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin); cos, sin (T, hs/2) are constants."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    cos, sin = Tensor(cos.astype(x.dtype)), Tensor(sin.astype(x.dtype))  # constants
    return cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


@composite("causal_self_attention_composite")
def causal_self_attention_composite(qkv: Tensor, n_head: int, cos: np.ndarray | None = None,
                                    sin: np.ndarray | None = None) -> Tensor:
    """Multi-head causal attention from a fused projection qkv (B, T, 3C) -> (B, T, C), with
    optional RoPE tables (T, hs/2) on q and k."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // n_head
    split = [qkv[..., i * C:(i + 1) * C] for i in range(3)]  # 3 x (B, T, C)
    q, k, v = (s.reshape(B, T, n_head, hs).transpose(1, 2) for s in split)  # (B, nh, T, hs)
    if cos is not None:
        q, k = rope(q, cos, sin), rope(k, cos, sin)
    y = scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs); Tq = Tk
    return y.transpose(1, 2).reshape(B, T, C)  # heads side by side


