"""NumPy and torch references for the layer ops and composites, written independently of the
ops (torch is imported lazily: the specs load without it)."""

from __future__ import annotations

import math

import numpy as np

from .core import _tconst


def np_logsumexp(x, axis):
    return np.logaddexp.reduce(x, axis=axis, keepdims=True)


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in np.ravel(x)],
                    dtype=np.asarray(x).dtype).reshape(np.shape(x))


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    return y * (1.0 if w is None else w) + (0.0 if b is None else b)


def np_rms_norm(x, w=None, eps=1e-5):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * (1.0 if w is None else w)


def np_cross_entropy(logits, targets):
    V = logits.shape[-1]
    flat = logits.reshape(-1, V)
    logp = flat - np_logsumexp(flat, -1)
    return -np.mean(logp[np.arange(flat.shape[0]), targets.reshape(-1)])


def np_attention(q, k, v, is_causal=False):
    Tq, Tk = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if is_causal:  # torch's top-left alignment: query i sees keys j <= i
        visible = np.arange(Tk)[None, :] <= np.arange(Tq)[:, None]
        s = np.where(visible, s, -np.inf)
    return np.exp(s - np_logsumexp(s, -1)) @ v


def np_rope(x, cos, sin):
    half = x.shape[-1] // 2
    z = (x[..., :half] + 1j * x[..., half:]) * (cos + 1j * sin)  # rotation as a complex product
    return np.concatenate([z.real, z.imag], axis=-1)


def t_attention(q, k, v, is_causal=False):
    import torch

    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)


def t_rope(x, cos, sin):
    import torch

    half = x.shape[-1] // 2
    c, s = _tconst(cos, x), _tconst(sin, x)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def t_layer_norm(x, w=None, b=None, eps=1e-5):
    import torch

    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, eps)


def t_rms_norm(x, w=None, eps=1e-5):
    import torch

    return torch.nn.functional.rms_norm(x, x.shape[-1:], w, eps)


def t_cross_entropy(logits, targets):
    import torch

    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets.reshape(-1))


