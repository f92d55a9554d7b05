"""Composites: functions built only from registered primitives (no vjp of their own).

Each is listed in COMPOSITES via @composite and gradchecked like a primitive. Those named
`*_composite` are the reference decompositions of a fused op of the same stem (ops/fused.py);
verification/test_fused.py checks each pair equal in float64. Signatures follow
torch.nn.functional.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import Tensor, cat, composite
from ..engine.kernels import check_targets


@composite("linear_composite")
def linear_composite(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x @ weight^T + bias. x (..., in), weight (out, in), bias (out,) -> (..., out)."""
    y = x @ weight.T
    return y if bias is None else y + bias


@composite("layer_norm_composite")
def layer_norm_composite(x: Tensor, normalized_shape, weight: Tensor | None = None,
                         bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last dim: (x - mean) / sqrt(var + eps) * weight + bias. x (..., C);
    normalized_shape (C,) (torch's signature; one trailing dim here)."""
    _last_dim_only("layer_norm_composite", x, normalized_shape)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, correction=0)
    y = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


@composite("rms_norm_composite")
def rms_norm_composite(x: Tensor, normalized_shape, weight: Tensor | None = None,
                       eps: float = 1e-5) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dim. x (..., C); normalized_shape (C,)."""
    _last_dim_only("rms_norm_composite", x, normalized_shape)
    y = x / ((x * x).mean(-1, keepdim=True) + eps).sqrt()
    return y if weight is None else y * weight


@composite("norm_linear_composite")
def norm_linear_composite(x: Tensor, norm_weight: Tensor, norm_bias: Tensor | None,
                          weight: Tensor, bias: Tensor | None = None, eps: float = 1e-5,
                          rms: bool = False) -> Tensor:
    """linear(norm(x)): layer_norm (or, with rms, rms_norm) over the last dim, then linear."""
    if rms:
        y = rms_norm_composite(x, x.shape[-1:], norm_weight, eps)
    else:
        y = layer_norm_composite(x, x.shape[-1:], norm_weight, norm_bias, eps)
    return linear_composite(y, weight, bias)


def _last_dim_only(name: str, x: Tensor, normalized_shape) -> None:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if shape != x.shape[-1:]:
        raise ValueError(f"{name}: normalized_shape {shape} must be the input's last dim "
                         f"{x.shape[-1:]}")


@composite("cross_entropy_composite")
def cross_entropy_composite(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean negative log-likelihood of integer targets. logits (N, V) or (B, T, V); targets
    (N,) or (B, T) with ids in [0, V)."""
    V = logits.shape[-1]
    ids = targets.data if isinstance(targets, Tensor) else np.asarray(targets)
    check_targets(ids, logits.shape)
    logp = logits.reshape(-1, V).log_softmax(-1)  # (N, V)
    ids = ids.reshape(-1)
    return -logp[np.arange(ids.size), ids].mean()


@composite("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """torch's F.scaled_dot_product_attention: softmax(q k^T * scale + mask) v, scale 1/sqrt(hs)
    by default. q (..., Tq, hs), k (..., Tk, hs), v (..., Tk, hv) -> (..., Tq, hv).

    is_causal: query i sees keys j <= i (torch's top-left alignment, tril(ones(Tq, Tk))).
    attn_mask: broadcastable to (..., Tq, Tk): bool (True = may attend) or float (added).
    dropout_p must be 0 (no dropout here).
    """
    if dropout_p:
        raise ValueError(f"scaled_dot_product_attention: dropout_p={dropout_p} is not supported")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
    Tq, Tk, hs = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(hs) if hs else 1.0  # hs = 0: y is empty whatever the scale
    att = (query @ key.mT) * scale  # (..., Tq, Tk)
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
