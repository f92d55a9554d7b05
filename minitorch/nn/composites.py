"""Composites: functions built only from registered primitives (no vjp of their own).

Each is listed in COMPOSITES via @composite and gradchecked like a primitive. Those named
`*_composite` are the reference decompositions of a fused op of the same stem (ops/fused.py);
verification/test_fused.py checks each pair equal in float64. Signatures follow
torch.nn.functional.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..engine import Tensor, cat, composite, no_grad, where
from ..engine.kernels import check_targets, require_float


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


# ---- activations and losses (torch.nn.functional names and signatures) ------------------------
def _inplace(fn, x: Tensor, inplace: bool) -> Tensor:
    """fn(x), or (torch's inplace=True) x overwritten with fn of a copy of x (whose arrays the
    graph keeps for backward) and returned."""
    return x.copy_(fn(x.clone())) if inplace else fn(x)


@composite("silu")
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.silu: x * sigmoid(x), any shape."""
    require_float("silu", input.data)
    return _inplace(lambda x: x * x.sigmoid(), input, inplace)


@composite("leaky_relu")
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """torch's F.leaky_relu: x where x > 0, else negative_slope * x; gradient at 0 is
    negative_slope (torch's)."""
    require_float("leaky_relu", input.data)
    return _inplace(lambda x: where(x > 0.0, x, x * negative_slope), input, inplace)


@composite("elu")
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """torch's F.elu: x where x > 0, else alpha * (exp(x) - 1) (full precision near 0);
    gradient at 0 is alpha (torch's)."""
    require_float("elu", input.data)

    def fn(x: Tensor) -> Tensor:
        pos = x > 0.0
        neg = where(pos, 0.0, x)  # no overflow off-branch
        # torch's gradient alpha*exp(x): expm1's own, (y + 1), is 0 in the far left tail
        value = neg.detach().expm1() * alpha
        return where(pos, x, _with_grad(value, neg, neg.detach().exp() * alpha))

    return _inplace(fn, input, inplace)


@composite("softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """torch's F.softplus: log(1 + exp(beta * x)) / beta, or x where beta * x > threshold."""
    require_float("softplus", input.data)
    z = input * beta
    linear = z > threshold
    soft = where(linear, 0.0, z).exp().log1p() / beta
    return where(linear, input, soft)


def _log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), torch's stable form."""
    return where(x < 0.0, x, 0.0) - (-x.abs()).exp().log1p()


_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """torch's reduction of elementwise losses: mean (nan when empty), sum or none."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _check_reduction(name: str, reduction: str, size_average=None, reduce=None) -> None:
    if size_average is not None or reduce is not None:
        raise ValueError(f"{name}: size_average and reduce are deprecated and not supported; "
                         f"use reduction='mean', 'sum' or 'none'")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _pointwise_args(name: str, input: Tensor, target, reduction: str, size_average,
                    reduce) -> tuple[Tensor, Tensor]:
    """(input, target) of an elementwise regression loss, checked as torch: broadcastable
    shapes, not both integer."""
    _check_reduction(name, reduction, size_average, reduce)
    target = target if isinstance(target, Tensor) else Tensor(np.asarray(target))
    try:
        np.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise ValueError(f"{name}: target shape {target.shape} does not broadcast with input "
                         f"shape {input.shape}") from None
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)
    if input.dtype.kind != "f" and target.dtype.kind != "f":
        raise TypeError(f"{name}: input or target must be floating, got {input.dtype} and "
                        f"{target.dtype}")
    return input, target


@composite("mse_loss")
def mse_loss(input: Tensor, target, size_average=None, reduce=None,
             reduction: str = "mean") -> Tensor:
    """torch's F.mse_loss: (input - target)^2, reduced. input and target broadcast (torch warns
    when their shapes differ); 0-d, or the broadcast shape for reduction='none'."""
    input, target = _pointwise_args("mse_loss", input, target, reduction, size_average, reduce)
    d = input - target
    return _reduce(d * d, reduction)


@composite("l1_loss")
def l1_loss(input: Tensor, target, size_average=None, reduce=None,
            reduction: str = "mean") -> Tensor:
    """torch's F.l1_loss: |input - target|, reduced; gradient 0 where they are equal."""
    input, target = _pointwise_args("l1_loss", input, target, reduction, size_average, reduce)
    return _reduce((input - target).abs(), reduction)


@composite("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """torch's F.smooth_l1_loss: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, with
    d = input - target; beta = 0 is l1_loss, beta < 0 is refused."""
    input, target = _pointwise_args("smooth_l1_loss", input, target, reduction, size_average,
                                    reduce)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
    d = input - target
    a = d.abs()
    if beta == 0:
        return _reduce(a, reduction)
    return _reduce(where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta), reduction)


@composite("huber_loss")
def huber_loss(input: Tensor, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """torch's F.huber_loss: 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), with
    d = input - target; delta must be positive."""
    input, target = _pointwise_args("huber_loss", input, target, reduction, None, None)
    if input.dtype.kind == "f":
        target = target.to(input.dtype)  # torch's huber_loss computes in the input's dtype
    if not delta > 0:
        raise ValueError(f"huber_loss does not support non-positive values for delta, got {delta}")
    d = input - target
    a = d.abs()
    return _reduce(where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta), reduction)


def _class_ids(name: str, input: Tensor, target) -> np.ndarray:
    """target's int64 class ids (any layout torch accepts for input (C,), (N, C), (N, C, d...)),
    checked as torch: int64 (or uint8), the batch shape of input."""
    ids = np.asarray(target.data if isinstance(target, Tensor) else target)
    if ids.dtype not in (np.int64, np.uint8):
        raise TypeError(f"{name}: expected target dtype to be int64 (Long) or uint8, got "
                        f"{ids.dtype}")
    want = () if input.ndim == 1 else input.shape[:1] + input.shape[2:]
    if input.ndim == 0 or ids.shape != want:
        raise ValueError(f"{name}: target shape {ids.shape} does not fit input shape "
                         f"{input.shape} (expected {want})")
    return ids.astype(np.int64)


def _class_weight(name: str, weight, input: Tensor) -> np.ndarray | None:
    """weight as a constant (C,) array of input's dtype (torch gives it no gradient)."""
    if weight is None:
        return None
    w = weight.data if isinstance(weight, Tensor) else np.asarray(weight)
    C = input.shape[0 if input.ndim == 1 else 1]
    if w.shape != (C,):
        raise ValueError(f"{name}: weight should be defined for all {C} classes, got shape "
                         f"{w.shape}")
    if w.dtype != input.dtype:
        raise TypeError(f"{name}: weight dtype {w.dtype} must be the input's {input.dtype}")
    return w


@composite("nll_loss")
def nll_loss(input: Tensor, target, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """torch's F.nll_loss: -weight[t] * input[n, t] for class ids t, reduced.

    Args:
        input: log-probabilities (C,), (N, C) or (N, C, d1, ...) (classes on dim 1).
        target: int64 class ids in [0, C) shaped like input without the class dim; entries
            equal to ignore_index count for nothing.
        weight: optional per-class weights (C,), a constant (torch gives it no gradient).
        reduction: 'mean' (divided by the sum of the targets' weights: nan if none), 'sum' or
            'none' (one loss per target, 0 where ignored).
    Returns:
        A 0-d tensor, or the target's shape for reduction='none'.
    """
    _check_reduction("nll_loss", reduction, size_average, reduce)
    require_float("nll_loss", input.data)
    ids = _class_ids("nll_loss", input, target)
    w = _class_weight("nll_loss", weight, input)
    C = input.shape[0 if input.ndim == 1 else 1]
    keep = ids != ignore_index
    bad = ids[keep & ((ids < 0) | (ids >= C))]
    if bad.size:
        raise IndexError(f"nll_loss: target {int(bad.flat[0])} is out of bounds for {C} classes")
    safe = np.where(keep, ids, 0)
    x = input.reshape(1, C) if input.ndim == 1 else input
    x = x.permute(0, *range(2, x.ndim), 1).reshape(-1, C)  # (N*d..., C)
    flat = safe.reshape(-1)
    picked = x[np.arange(flat.size), flat].reshape(ids.shape)  # input at each target
    scale = keep.astype(input.dtype) if w is None else np.where(keep, w[safe], 0.0).astype(
        input.dtype)
    losses = -picked * Tensor(scale)
    if reduction == "none":
        return losses
    return _weighted_mean(losses.sum(), scale, reduction)


def _weighted_mean(total: Tensor, scale: np.ndarray, reduction: str) -> Tensor:
    """total, or ('mean') total over the targets' summed weight: nan with a zero gradient when
    that is 0 (no target counted), as torch."""
    if reduction == "sum":
        return total
    count = scale.sum(dtype=scale.dtype)
    return total * 0.0 + float("nan") if count == 0 else total / Tensor(count)


def _bce_args(name: str, input: Tensor, target, weight, reduction: str, size_average,
              reduce) -> tuple[Tensor, Tensor]:
    _check_reduction(name, reduction, size_average, reduce)
    require_float(name, input.data)
    target = target if isinstance(target, Tensor) else Tensor(np.asarray(target))
    if target.shape != input.shape:
        raise ValueError(f"{name}: target size {target.shape} must be the same as input size "
                         f"{input.shape}")
    if target.dtype.kind != "f":
        raise TypeError(f"{name}: target must be floating, got dtype {target.dtype}")
    if weight is not None:
        np.broadcast_shapes(weight.shape, input.shape)
    return input, target


def _const(t: Tensor | None, dtype) -> Tensor | None:
    """A weight as a constant of the loss's dtype (torch computes in it, with no gradient)."""
    return None if t is None else t.detach().to(dtype)


_BCE_EPS = float(np.float32(1e-12))  # torch's clamp of p (1 - p) in BCE's gradient, a float


def _with_grad(value: Tensor, x: Tensor, grad: Tensor) -> Tensor:
    """value, with gradient grad (a constant, x's shape) with respect to x: torch's own
    backward formula where the derivative of the forward's rounding would differ from it.
    value must not depend on x except through x.detach(). Where x is not finite the gradient
    is 0 (x - x would be nan)."""
    xd = x.detach()
    finite = xd.isfinite()
    zero = where(finite, x, 0.0) - where(finite, xd, 0.0)  # 0, with gradient 1 where finite
    return value + zero * grad.detach()


@composite("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """torch's F.binary_cross_entropy on probabilities:
    -w (t log(p) + (1 - t) log(1 - p)), each log clamped at -100 (torch's).

    Args:
        input: probabilities p in [0, 1], any shape.
        target: t of input's shape and dtype (differentiable, as in torch).
        weight: optional, broadcast to input's shape.
    Returns:
        A 0-d tensor, or input's shape for reduction='none'. The gradient with respect to p is
        torch's w (p - t) / max(p (1 - p), 1e-12), finite at p = 0 and 1.
    """
    input, target = _bce_args("binary_cross_entropy", input, target, weight, reduction,
                              size_average, reduce)
    if target.dtype != input.dtype:
        raise TypeError(f"binary_cross_entropy: target dtype {target.dtype} must be the "
                        f"input's {input.dtype}")
    p = input.detach()
    if ((p.data < 0) | (p.data > 1) | np.isnan(p.data)).any():
        raise ValueError("binary_cross_entropy: all elements of input should be between 0 and 1")
    # log(0) is -inf, then -100; the logs are taken where they are finite, with no warning
    log_p = where(p > 0.0, where(p > 0.0, p, 1.0).log(), -np.inf).clamp(min=-100.0)
    log_q = where(p < 1.0, (-where(p < 1.0, p, 0.0)).log1p(), -np.inf).clamp(min=-100.0)
    loss = (target - 1.0) * log_q - target * log_p
    grad = (p - target.detach()) / (p * (1.0 - p)).clamp(min=_BCE_EPS)
    if weight is not None:
        weight = _const(weight, loss.dtype)
        loss, grad = loss * weight, grad * weight
    return _reduce(_with_grad(loss, input, grad), reduction)


@composite("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """torch's F.binary_cross_entropy_with_logits, in its stable form:
    w ((1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x))).

    Args:
        input: logits x, any shape.
        target: t of input's shape (floating; differentiable, as in torch).
        weight: optional, broadcast to input's shape.
        pos_weight: optional weight of the positive term, broadcast along the last dim.
    Returns:
        A 0-d tensor, or input's shape for reduction='none'. The gradient with respect to x is
        torch's w (sigmoid(x) (pos_weight t + 1 - t) - pos_weight t).
    """
    input, target = _bce_args("binary_cross_entropy_with_logits", input, target, weight,
                              reduction, size_average, reduce)
    x = input.detach()
    t_const = target.detach()
    if pos_weight is None:
        loss = (1.0 - target) * x - _log_sigmoid(x)
        grad = x.sigmoid() - t_const
    else:
        np.broadcast_shapes(pos_weight.shape, input.shape)
        pos_weight = _const(pos_weight, np.result_type(input.dtype, target.dtype))
        loss = (1.0 - target) * x - ((pos_weight - 1.0) * target + 1.0) * _log_sigmoid(x)
        pt = pos_weight * t_const
        grad = (pt + 1.0 - t_const) * x.sigmoid() - pt
    if weight is not None:
        weight = _const(weight, loss.dtype)
        loss, grad = loss * weight, grad * weight
    return _reduce(_with_grad(loss, input, grad), reduction)


@composite("normalize")
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out=None) -> Tensor:
    """torch's F.normalize: input / max(||input||_p along dim, eps). p > 0 (inf: max |x|); an
    all-zero slice gives zeros with gradient 1/eps, as torch."""
    if out is not None:
        raise ValueError("normalize: out= is not supported")
    require_float("normalize", input.data)
    if not p > 0:
        raise ValueError(f"normalize: p must be positive, got {p}")
    a = input.abs()
    if p == float("inf"):
        norm = a.amax(dim, keepdim=True)
    else:
        s = a.sum(dim, keepdim=True) if p == 1 else (a * a if p == 2 else a ** p).sum(
            dim, keepdim=True)
        zero = s == 0.0
        safe = where(zero, 1.0, s)  # a finite gradient where the norm is 0 (it is clamped)
        root = safe if p == 1 else (safe.sqrt() if p == 2 else safe ** (1.0 / p))
        norm = where(zero, 0.0, root)
    return input / norm.clamp(min=eps)


@composite("batch_norm")
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """torch's F.batch_norm over the channels (dim 1) of (N, C) or (N, C, *):
    y = (x - mean)/sqrt(var + eps)*weight + bias. Training: the batch's mean and biased
    variance, and running_mean/running_var (when given) move toward the batch's mean and
    unbiased variance by `momentum`, in place; otherwise the running statistics."""
    require_float("batch_norm", input.data)
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an (N, C) or (N, C, *) input, got shape "
                         f"{tuple(input.shape)}")
    C = input.shape[1]
    dims = (0, *range(2, input.ndim))
    shape = (1, C) + (1,) * (input.ndim - 2)
    if training:
        n = input.numel() // max(C, 1)
        if n <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got input size {tuple(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.reshape(C) * momentum)
                running_var.mul_(1 - momentum).add_(var.reshape(C) * (momentum * n / (n - 1)))
    elif running_mean is None or running_var is None:
        raise ValueError("batch_norm: running_mean and running_var are needed when not training")
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    y = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)
