"""torch.nn.functional-style entry points. Each calls one registered op (fused ops for the
transformer's hot spots, see engine/ops/fused.py) or a composite from composites.py."""

from __future__ import annotations

import numpy as np

from ..engine import REGISTRY, Tensor, apply
from ..engine.tensor import promote
from .composites import (  # noqa: F401  (re-exported: the reference decompositions)
    causal_self_attention_composite,
    cross_entropy_composite,
    layer_norm_composite,
    linear_composite,
    rms_norm_composite,
    rope,
    scaled_dot_product_attention,
)


def _int_tensor(ids) -> Tensor:
    return ids if isinstance(ids, Tensor) else Tensor(np.asarray(ids))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x @ weight^T + bias. x (..., in), weight (out, in), bias (out,) -> (..., out)."""
    params = (weight,) if bias is None else (weight, bias)
    return apply(REGISTRY["linear"], *promote(x, *params))


def layer_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dim. x (..., C)."""
    params = [p for p in (weight, bias) if p is not None]
    return apply(REGISTRY["layer_norm"], *promote(x, *params), eps=eps,
                 has_weight=weight is not None, has_bias=bias is not None)


def rms_norm(x: Tensor, weight: Tensor | None, eps: float = 1e-5) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dim. x (..., C)."""
    params = () if weight is None else (weight,)
    return apply(REGISTRY["rms_norm"], *promote(x, *params), eps=eps)


def cross_entropy(logits: Tensor, targets) -> Tensor:
    """Mean negative log-likelihood of integer targets. logits (..., V), targets (...) in [0, V)."""
    return apply(REGISTRY["cross_entropy"], logits, _int_tensor(targets))


def causal_self_attention(qkv: Tensor, n_head: int, cos: np.ndarray | None = None,
                          sin: np.ndarray | None = None) -> Tensor:
    """Multi-head causal attention: qkv (B, T, 3C) -> (B, T, C); optional RoPE tables
    cos, sin (T, hs/2)."""
    if cos is not None:
        cos, sin = cos.astype(qkv.dtype, copy=False), sin.astype(qkv.dtype, copy=False)
    return apply(REGISTRY["causal_self_attention"], qkv, n_head=n_head, cos=cos, sin=sin)


def gelu(x: Tensor) -> Tensor:
    return x.gelu()


def relu(x: Tensor) -> Tensor:
    return x.relu()


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x.log_softmax(dim)


def embedding(ids, weight: Tensor) -> Tensor:
    """Rows of weight (V, C) at integer ids (any shape) -> ids.shape + (C,)."""
    return apply(REGISTRY["embedding"], _int_tensor(ids), weight)


def rope_tables(T: int, hs: int, offset: int = 0, theta: float = 10000.0, dtype=np.float64):
    """cos and sin tables (T, hs/2) for positions offset..offset+T-1 (rotate-half convention)."""
    if hs % 2:
        raise ValueError(f"RoPE needs an even head size, got {hs}")
    inv_freq = theta ** (-np.arange(0, hs, 2, dtype=np.float64) / hs)  # (hs/2,)
    angles = np.arange(offset, offset + T, dtype=np.float64)[:, None] * inv_freq  # (T, hs/2)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
