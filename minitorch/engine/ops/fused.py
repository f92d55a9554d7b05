"""Fused primitives: ops that could be composed from others but have their own, cheaper vjp.

Each one is registered and gradchecked like any other op, and is also checked equal to its
composite twin (minitorch/nn/composites.py) in float64 by verification/test_fused.py. The GPT
calls these through minitorch.nn.functional.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import Op, register
from .linalg import rows


_rows = rows  # (..., n) -> (rows, n), zero-size safe


def _row_mean(a: np.ndarray) -> np.ndarray:
    """mean over the last dim, kept as size 1 (0 for an empty last dim, whose rows are empty)."""
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1] + (1,), dtype=a.dtype)
    return a.mean(axis=-1, keepdims=True)


def _width(a: np.ndarray) -> int:
    """The last dim's size as a divisor (1 when empty: there is nothing to divide)."""
    return max(a.shape[-1], 1)


def _row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum(a*b) over the last dim, keeping it as size 1, without an (..., n) temporary."""
    return np.einsum("...c,...c->...", a, b)[..., None]


@register("linear")
class Linear(Op):
    """y = x @ w^T (+ b); x (..., in), w (out, in), b (out,) optional.
    grad_x = g @ w, grad_w = g^T x and grad_b = sum of g, both summed over all leading dims."""

    @staticmethod
    def forward(ctx, x, w, *bias):
        if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
            raise ValueError(f"cannot apply weight {w.shape} (out, in) to input {x.shape}")
        if bias and bias[0].shape != (w.shape[0],):
            raise ValueError(f"bias {bias[0].shape} does not match weight {w.shape}")
        ctx.save(x, w)
        y = _rows(x) @ w.T  # (rows, out): one GEMM for all leading dims
        if bias:
            y += bias[0]
        return y.reshape(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def vjp(ctx, g):
        x, w = ctx.saved
        needs = ctx.needs_grad
        g2 = _rows(g)  # (rows, out)
        grad_x = (g2 @ w).reshape(x.shape) if needs[0] else None
        grad_w = g2.T @ _rows(x) if needs[1] else None
        grads = (grad_x, grad_w)
        if len(needs) == 3:
            grads += (g2.sum(axis=0) if needs[2] else None,)
        return grads


@register("layer_norm")
class LayerNorm(Op):
    """y = xhat*w + b over the last dim, xhat = (x - mean)/sqrt(var + eps) (biased var);
    grad_x = rstd*(d - mean(d) - xhat*mean(d*xhat)) with d = g*w; grad_w = sum g*xhat,
    grad_b = sum g (over leading dims). w and b are optional (has_weight, has_bias)."""

    @staticmethod
    def forward(ctx, x, *params, eps=1e-5, has_weight=True, has_bias=True):
        xc = x - _row_mean(x)
        var = _row_dot(xc, xc) / _width(x)  # (..., 1), biased
        rstd = 1.0 / np.sqrt(var + eps)
        xhat = xc
        xhat *= rstd
        ctx.save(xhat, rstd, params[0] if has_weight else None)
        ctx.has_weight, ctx.has_bias = has_weight, has_bias
        y = xhat * params[0] if has_weight else xhat.copy()
        if has_bias:
            y += params[-1]
        return y

    @staticmethod
    def vjp(ctx, g):
        xhat, rstd, w = ctx.saved
        d = g * w if ctx.has_weight else g.copy()
        proj = _row_dot(d, xhat) / _width(xhat)  # mean(d*xhat), (..., 1)
        d -= _row_mean(d)
        d -= xhat * proj
        d *= rstd
        needs = ctx.needs_grad  # inputs: x, then weight and bias when present
        grads = [d if needs[0] else None]
        if ctx.has_weight:
            grads.append(np.einsum("nc,nc->c", _rows(g), _rows(xhat)) if needs[1] else None)
        if ctx.has_bias:
            grads.append(_rows(g).sum(axis=0) if needs[len(grads)] else None)
        return tuple(grads)


@register("rms_norm")
class RMSNorm(Op):
    """y = xhat*w over the last dim, xhat = x/sqrt(mean(x^2) + eps);
    grad_x = rstd*(d - xhat*mean(d*xhat)) with d = g*w; grad_w = sum g*xhat. w is optional."""

    @staticmethod
    def forward(ctx, x, *weight, eps=1e-5):
        rstd = 1.0 / np.sqrt(_row_dot(x, x) / _width(x) + eps)  # (..., 1)
        xhat = x * rstd
        ctx.save(xhat, rstd, weight[0] if weight else None)
        return xhat * weight[0] if weight else xhat

    @staticmethod
    def vjp(ctx, g):
        xhat, rstd, w = ctx.saved
        d = g * w if w is not None else g.copy()
        d -= xhat * (_row_dot(d, xhat) / _width(xhat))
        d *= rstd
        grad_x = d if ctx.needs_grad[0] else None
        if w is None:
            return (grad_x,)
        return grad_x, (np.einsum("nc,nc->c", _rows(g), _rows(xhat)) if ctx.needs_grad[1]
                        else None)


def check_targets(targets: np.ndarray, logits_shape: tuple[int, ...]) -> None:
    """Raise unless targets are integer ids in [0, V) shaped like the logits without V."""
    V = logits_shape[-1]
    if targets.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy targets must be integers, got dtype {targets.dtype}")
    if targets.shape != logits_shape[:-1]:
        raise ValueError(f"cross_entropy targets shape {targets.shape} does not match logits "
                         f"shape {logits_shape} without its last dim")
    if targets.size and (targets.min() < 0 or targets.max() >= V):
        raise IndexError(f"cross_entropy target id out of range [0, {V}): min {targets.min()}, "
                         f"max {targets.max()}")


@register("cross_entropy")
class CrossEntropy(Op):
    """y = mean over rows of logsumexp(z) - z[target], logits z (..., V), integer targets
    (...) in [0, V); grad_z = g*(softmax(z) - onehot(target))/rows; targets get no gradient."""

    @staticmethod
    def forward(ctx, logits, targets):
        check_targets(targets, logits.shape)
        z, t = _rows(logits), targets.reshape(-1)
        rows = np.arange(t.size)
        shifted = z - z.max(axis=-1, keepdims=True)  # (N, V)
        p = np.exp(shifted)
        sums = p.sum(axis=-1, keepdims=True)
        losses = np.log(sums[:, 0]) - shifted[rows, t]  # (N,)
        loss = losses.mean() if t.size else np.asarray(np.nan, dtype=z.dtype)  # torch: nan
        p /= sums  # softmax, kept for backward
        ctx.save(p, t)
        ctx.shape = logits.shape
        return loss

    @staticmethod
    def vjp(ctx, g):
        p, t = ctx.saved
        scale = g / max(t.size, 1)  # 0-d, same dtype
        grad = p * scale
        grad[np.arange(t.size), t] -= scale
        return grad.reshape(ctx.shape), None


def _scale(hs: int) -> float:
    """1/sqrt(hs), the attention temperature; any value for hs = 0 (no features: y is empty)."""
    return 1.0 / math.sqrt(hs) if hs else 1.0


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, inverse: bool = False) -> np.ndarray:
    """RoPE on the last dim (rotate-half pairs): (x1, x2) -> (x1 c - x2 s, x2 c + x1 s); the
    inverse (the vjp of the rotation) uses -s."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    if inverse:
        sin = -sin
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


@register("causal_self_attention")
class CausalSelfAttention(Op):
    """Multi-head causal attention from a fused projection qkv (B, T, 3C) -> y (B, T, C):
    q|k|v split along the last dim into n_head heads of size hs, optional RoPE (cos, sin
    (T, hs/2)) on q and k, P = softmax(q k^T/sqrt(hs) + causal mask), y = P v, heads side by side.
    grad: dv = P^T dy, dP = dy v^T, dS = P*(dP - sum(dP*P))/sqrt(hs), dq = dS k, dk = dS^T q
    (rotated back when RoPE is on), written into grad_qkv in the packed layout."""

    @staticmethod
    def forward(ctx, qkv, n_head, cos=None, sin=None):
        B, T, C3 = qkv.shape
        if n_head < 1 or C3 % (3 * n_head):
            raise ValueError(f"last dim {C3} is not 3 * n_head({n_head}) * head_size")
        hs = C3 // 3 // n_head
        q, k, v = qkv.reshape(B, T, 3, n_head, hs).transpose(2, 0, 3, 1, 4)  # 3 x (B, nh, T, hs)
        if cos is not None:
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        att = q @ k.swapaxes(-1, -2)  # (B, nh, T, T)
        att *= _scale(hs)
        att[..., np.triu(np.ones((T, T), dtype=bool), k=1)] = -np.inf  # future keys
        att -= att.max(axis=-1, keepdims=True, initial=-np.inf)
        np.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        ctx.save(q, k, v, att)
        ctx.rope = (cos, sin) if cos is not None else None
        y = att @ v  # (B, nh, T, hs)
        return y.transpose(0, 2, 1, 3).reshape(B, T, n_head * hs)

    @staticmethod
    def vjp(ctx, g):
        q, k, v, att = ctx.saved
        B, nh, T, hs = q.shape
        gy = g.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
        grad = np.empty((B, T, 3, nh, hs), dtype=g.dtype)
        grad[:, :, 2] = (att.swapaxes(-1, -2) @ gy).transpose(0, 2, 1, 3)  # dv
        ds = gy @ v.swapaxes(-1, -2)  # dP (B, nh, T, T)
        ds -= np.sum(ds * att, axis=-1, keepdims=True)
        ds *= att
        ds *= _scale(hs)
        dq, dk = ds @ k, ds.swapaxes(-1, -2) @ q
        if ctx.rope is not None:
            dq, dk = rotate(dq, *ctx.rope, inverse=True), rotate(dk, *ctx.rope, inverse=True)
        grad[:, :, 0] = dq.transpose(0, 2, 1, 3)
        grad[:, :, 1] = dk.transpose(0, 2, 1, 3)
        return (grad.reshape(B, T, 3 * nh * hs),)
