"""Fused primitives: ops that could be composed from others but have their own, cheaper vjp.

Each one is registered and gradchecked like any other op, and is also checked equal to its
composite twin (in minitorch/nn/functional/) in float64 by verification/test_fused.py. The GPT
calls these through minitorch.nn.functional.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as K
from ..kernels import rotate, rows
from ..pool import empty
from ..registry import Op, register


def _times_weight(ctx, g: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """g * w (g itself without a weight), in a new array or over g when the engine allows it
    (ctx.grad_out_writable): the start of a norm's input gradient."""
    out = ctx.reuse(g)
    if w is None:
        np.copyto(out, g)  # onto itself when out is g: NumPy then skips most of the copy
        return out
    return np.multiply(g, w, out=out)


def _norm_grad(d: np.ndarray, xhat: np.ndarray, rstd: np.ndarray) -> np.ndarray:
    """A norm's input gradient rstd*(d - xhat*mean(d*xhat)), written over d: d is the gradient
    of xhat for rms_norm, and that gradient less its row mean for layer_norm (whose rows of
    xhat have mean 0, so the centring leaves mean(d*xhat) as it was)."""
    proj = K.row_dot(d, xhat) / K.width(xhat)  # mean(d*xhat), (..., 1)
    d -= np.multiply(xhat, proj, out=empty(xhat.shape, np.result_type(xhat, proj)))
    d *= rstd
    return d


@register("linear")
class Linear(Op):
    """y = x @ w^T (+ b); x (..., in), w (out, in), b (out,) optional.
    grad_x = g @ w, grad_w = g^T x and grad_b = sum of g, both summed over all leading dims.
    x is saved only when w needs its gradient, w only when x does (as torch)."""

    @staticmethod
    def forward(ctx, x, w, *bias):
        if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
            raise ValueError(f"cannot apply weight {w.shape} (out, in) to input {x.shape}")
        if bias and bias[0].shape != (w.shape[0],):
            raise ValueError(f"bias {bias[0].shape} does not match weight {w.shape}")
        ctx.save(x if ctx.needs_grad[1] else None, w if ctx.needs_grad[0] else None)
        return K.linear(x, w, bias[0] if bias else None)

    @staticmethod
    def vjp(ctx, g):
        x, w = ctx.saved
        needs = ctx.needs_grad
        g2 = rows(g)  # (rows, out)
        grad_x = grad_w = None
        if needs[0]:
            grad_x = np.matmul(g2, w, out=empty((g2.shape[0], w.shape[1]), np.result_type(g, w)))
            grad_x = grad_x.reshape(g.shape[:-1] + w.shape[1:])
        if needs[1]:  # weight-sized, and gone once summed into .grad: not planned
            grad_w = g2.T @ rows(x)
        grads = (grad_x, grad_w)
        if len(needs) == 3:
            grads += (K.col_sum(g2) if needs[2] else None,)
        return grads


@register("layer_norm")
class LayerNorm(Op):
    """y = xhat*w + b over the last dim, xhat = (x - mean)/sqrt(var + eps) (biased var);
    grad_x = rstd*(d - mean(d) - xhat*mean(d*xhat)) with d = g*w; grad_w = sum g*xhat,
    grad_b = sum g (over leading dims). w and b are optional (has_weight, has_bias)."""

    @staticmethod
    def forward(ctx, x, *params, eps=1e-5, has_weight=True, has_bias=True):
        w = params[0] if has_weight else None
        y, xhat, rstd = K.layer_norm(x, w, params[-1] if has_bias else None, eps)
        ctx.save(xhat, rstd, w)
        ctx.has_weight, ctx.has_bias = has_weight, has_bias
        return y

    @staticmethod
    def vjp(ctx, g):
        xhat, rstd, w = ctx.saved
        needs = ctx.needs_grad  # inputs: x, then weight and bias when present
        grads = [None]
        if ctx.has_weight:
            grads.append(np.einsum("nc,nc->c", rows(g), rows(xhat)) if needs[1] else None)
        if ctx.has_bias:
            grads.append(K.col_sum(rows(g)) if needs[len(grads)] else None)
        if needs[0]:  # last, as it may write over g
            d = _times_weight(ctx, g, w)
            d -= K.row_mean(d)
            grads[0] = _norm_grad(d, xhat, rstd)
        return tuple(grads)


@register("rms_norm")
class RMSNorm(Op):
    """y = xhat*w over the last dim, xhat = x/sqrt(mean(x^2) + eps);
    grad_x = rstd*(d - xhat*mean(d*xhat)) with d = g*w; grad_w = sum g*xhat. w is optional."""

    @staticmethod
    def forward(ctx, x, *weight, eps=1e-5):
        w = weight[0] if weight else None
        y, xhat, rstd = K.rms_norm(x, w, eps)
        ctx.save(xhat, rstd, w)
        return y

    @staticmethod
    def vjp(ctx, g):
        xhat, rstd, w = ctx.saved
        needs = ctx.needs_grad
        grad_w = None
        if w is not None and needs[1]:
            grad_w = np.einsum("nc,nc->c", rows(g), rows(xhat))
        grad_x = None
        if needs[0]:  # after grad_w, as it may write over g
            grad_x = _norm_grad(_times_weight(ctx, g, w), xhat, rstd)
        return (grad_x,) if w is None else (grad_x, grad_w)


@register("norm_linear")
class NormLinear(Op):
    """y = linear(norm(x), w, b) for norm = layer_norm(., nw, nb) or, with rms, rms_norm(., nw),
    as one op that never forms norm(x) = xhat*nw + nb: y = xhat @ (w*nw)^T + (b + w @ nb).
    Inputs x (..., C), nw (C,), nb (C,) if has_norm_bias, w (out, C), b (out,) if has_bias.
    With M = g^T xhat and s = sum of g (both summed over leading dims): grad_w = M*nw + s nb^T,
    grad_nw = sum over outputs of M*w, grad_nb = s @ w, grad_b = s; grad_x is the norm's rule
    from d = g @ (w*nw)."""

    @staticmethod
    def forward(ctx, x, nw, *rest, eps=1e-5, rms=False, has_norm_bias=True, has_bias=True):
        nb = rest[0] if has_norm_bias else None
        w, b = rest[int(has_norm_bias)], rest[-1] if has_bias else None
        y, xhat, rstd = K.norm_linear(x, nw, nb, w, b, eps, rms)
        ctx.save(xhat, rstd, nw, nb, w)
        ctx.rms, ctx.has_bias = rms, has_bias
        return y

    @staticmethod
    def vjp(ctx, g):
        xhat, rstd, nw, nb, w = ctx.saved
        g2 = rows(g)  # (rows, out)
        grad_x = grad_nw = grad_nb = grad_w = grad_b = None
        if ctx.needs_grad[0]:
            d = np.matmul(g2, K.fold(w, nw), out=empty((g2.shape[0], w.shape[1]),
                                                       np.result_type(g, w, nw)))
            d = d.reshape(xhat.shape)  # the gradient of xhat
            if not ctx.rms:
                d -= K.row_mean(d)
            grad_x = _norm_grad(d, xhat, rstd)
        if any(ctx.needs_grad[1:]):  # the weight-sized ones share m and s (forced true, this
            # guard is an equivalent mutant: ctx.needed drops what is then formed)
            xh2 = rows(xhat)
            m = np.matmul(g2.T, xh2, out=empty((g2.shape[1], xh2.shape[1]),
                                               np.result_type(g, xhat)))  # (out, C)
            grad_b = K.col_sum(g2)  # s, (out,)
            grad_nw = np.einsum("oc,oc->c", m, w)
            grad_w = np.multiply(m, nw, out=m)
            if nb is not None:  # + s nb^T, the outer product as a GEMM (no ufunc buffer)
                grad_w += np.matmul(grad_b[:, None], nb[None], out=empty(m.shape, m.dtype))
                grad_nb = grad_b @ w
        grads = ctx.needed(grad_x, grad_nw, *(() if nb is None else (grad_nb,)), grad_w,
                           *((grad_b,) if ctx.has_bias else ()))
        return grad_x, *grads[1:]


@register("cross_entropy")
class CrossEntropy(Op):
    """y = mean over rows of logsumexp(z) - z[target], logits z (..., V), integer targets
    (...) in [0, V); grad_z = g*(softmax(z) - onehot(target))/rows; targets get no gradient."""

    @staticmethod
    def forward(ctx, logits, targets):
        K.require_float("cross_entropy", logits)
        K.check_targets(targets, logits.shape)
        z, t = rows(logits), targets.reshape(-1)
        shifted = np.subtract(z, z.max(axis=-1, keepdims=True), out=empty(z.shape, z.dtype))
        picked = shifted[np.arange(t.size), t]  # (N,), before exp overwrites it
        p = np.exp(shifted, out=shifted)
        sums = K.row_sum(p)
        losses = np.log(sums[:, 0]) - picked
        loss = losses.mean() if t.size else np.asarray(np.nan, dtype=z.dtype)  # torch: nan
        p /= sums  # softmax, kept for backward
        ctx.save(p, t)
        ctx.shape = logits.shape
        return loss

    @staticmethod
    def vjp(ctx, g):
        p, t = ctx.saved
        scale = g / max(t.size, 1)  # 0-d, same dtype
        grad = np.multiply(p, scale, out=empty(p.shape, np.result_type(p, scale)))
        grad[np.arange(t.size), t] -= scale
        return grad.reshape(ctx.shape), None


@register("causal_self_attention")
class CausalSelfAttention(Op):
    """Multi-head causal attention from a fused projection qkv (B, T, 3C) -> y (B, T, C):
    q|k|v split along the last dim into n_head heads of size hs, optional RoPE (cos, sin
    (T, hs/2)) on q and k, P = softmax(q k^T/sqrt(hs) + causal mask), y = P v, heads side by side.
    grad: dv = P^T dy, dP = dy v^T, dS = P*(dP - sum(dP*P))/sqrt(hs), dq = dS k, dk = dS^T q
    (rotated back when RoPE is on), written into grad_qkv in the packed layout."""

    @staticmethod
    def forward(ctx, qkv, n_head, cos=None, sin=None):
        q, k, v = K.split_heads(qkv, n_head)  # 3 x (B, nh, T, hs)
        if cos is not None:
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        y, att = K.causal_attention(q, k, v)  # (B, nh, T, hs), P (B, nh, T, T)
        ctx.save(q, k, v, att)
        ctx.rope = (cos, sin) if cos is not None else None
        return K.merge_heads(y)  # (B, T, C)

    @staticmethod
    def vjp(ctx, g):
        q, k, v, att = ctx.saved
        B, nh, T, hs = q.shape
        gy = g.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
        grad = empty((B, T, 3, nh, hs), g.dtype)
        heads = empty(q.shape, g.dtype)  # one head-layout gradient at a time
        grad[:, :, 2] = np.matmul(att.swapaxes(-1, -2), gy, out=heads).transpose(0, 2, 1, 3)
        ds = np.matmul(gy, v.swapaxes(-1, -2), out=empty(att.shape, g.dtype))  # dP
        ds -= K.row_dot(ds, att)
        ds *= att
        ds *= K.attention_scale(hs)
        for i, (a, b) in enumerate(((ds, k), (ds.swapaxes(-1, -2), q))):  # dq, dk
            d = np.matmul(a, b, out=heads)
            if ctx.rope is not None:
                d = rotate(d, *ctx.rope, inverse=True)
            grad[:, :, i] = d.transpose(0, 2, 1, 3)
        return (grad.reshape(B, T, 3 * nh * hs),)
