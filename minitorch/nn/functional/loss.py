"""Losses: cross_entropy (the fused op on its fast path, with its composite twin), nll_loss,
mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits); torch's
signatures, reductions and errors."""

from __future__ import annotations

import warnings

import numpy as np

from ...engine import REGISTRY, Tensor, apply, composite, where
from ...engine.kernels import ArgumentError, check_targets, require_float
from .activation import _log_sigmoid, _with_grad


def cross_entropy(input: Tensor, target, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """torch.nn.functional.cross_entropy: the negative log-likelihood of softmax(input).

    Args:
        input: logits (C,), (N, C) or (N, C, d1, ...) as in torch (classes on dim 1); also
            (..., C) with classes last when target has input's shape without its last dim (the
            GPT's (B, T, V) with (B, T) targets).
        target: integer class ids in [0, C) shaped like input without the class dim (entries
            equal to ignore_index count for nothing), or class probabilities shaped like input.
        reduction: 'mean' (over the non-ignored targets; over rows for probabilities), 'sum' or
            'none' (one loss per target, 0 where ignored).
        weight: optional per-class weights (C,) of input's dtype, a constant: each target's
            loss is scaled by its class's weight and 'mean' divides by the targets' total
            weight (for probabilities: each class's term is scaled, 'mean' is over rows).
        label_smoothing: in [0, 1]: the target mixes (1 - s) of itself with s of uniform.
    Returns:
        A 0-d tensor, or the target's shape for reduction='none'.
    """
    _check_reduction("cross_entropy", reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    target = target if isinstance(target, Tensor) else Tensor(np.asarray(target))
    w = _class_weight("cross_entropy", weight, input)  # (C,) constant, or None
    logits, target, out_shape = _classes_last(input, target)  # (N, C), (N,) or (N, C)
    probs = target.dtype.kind == "f"
    if not probs and reduction == "mean" and label_smoothing == 0.0 and w is None and not (
            target.data == ignore_index).any():
        return apply(REGISTRY["cross_entropy"], logits, target)  # the fused fast path
    C = logits.shape[-1]
    logp = logits.log_softmax(-1)  # (N, C)
    if w is not None:
        return _weighted_cross_entropy(logp, target, Tensor(w), ignore_index, reduction,
                                       label_smoothing, out_shape)
    if probs:
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / C
        if reduction == "none":
            return (-(logp * target).sum(-1)).reshape(out_shape)  # (N,) -> the target's shape
        total = -(logp * target).sum()  # negated after summing, as torch (-0.0 stays -0.0)
        return total if reduction == "sum" else total / float(logits.shape[0])
    ids = target.data
    keep = ids != ignore_index
    safe = np.where(keep, ids, 0)
    check_targets(safe, logits.shape)
    losses = -logp[np.arange(ids.size), safe]  # (N,)
    if label_smoothing:
        losses = losses * (1.0 - label_smoothing) - logp.sum(-1) * (label_smoothing / C)
    losses = where(keep, losses, 0.0)  # selects: an ignored row gets exactly 0 gradient
    count = float(keep.sum())
    if reduction == "none":
        return losses.reshape(out_shape)
    total = losses.sum()
    if reduction == "sum":
        return total
    if count == 0:  # torch: the mean over no targets is nan, and its gradient is 0
        return total * 0.0 + float("nan")
    return total / count


def _weighted_cross_entropy(logp: Tensor, target: Tensor, w: Tensor, ignore_index: int,
                            reduction: str, label_smoothing: float, out_shape: tuple) -> Tensor:
    """cross_entropy with class weights w (C,), from logp (N, C), as torch: a row's loss is
    -sum_c w_c q_c logp_c with q its target distribution (smoothed); 'mean' divides by the
    targets' total weight for class ids, by N for probabilities."""
    C = logp.shape[-1]
    eps = label_smoothing
    if target.dtype.kind == "f":
        q = target * (1.0 - eps) + eps / C if eps else target
        losses = -(logp * q * w).sum(-1)  # (N,)
        total = losses.sum()
        if reduction == "none":
            return losses.reshape(out_shape)
        return total if reduction == "sum" else total / float(logp.shape[0])
    ids = target.data
    keep = ids != ignore_index
    safe = np.where(keep, ids, 0)
    check_targets(safe, logp.shape)
    picked_w = np.where(keep, w.data[safe], 0.0).astype(logp.dtype)  # (N,) each target's weight
    losses = -logp[np.arange(ids.size), safe] * Tensor(picked_w)
    if eps:
        smooth = where(keep, -(logp * w).sum(-1), 0.0)
        losses = losses * (1.0 - eps) + smooth * (eps / C)
    if reduction == "none":
        return losses.reshape(out_shape)
    return _weighted_mean(losses.sum(), picked_w, reduction)


def _classes_last(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, tuple]:
    """(logits (N, C), target (N,) or (N, C), the per-target loss shape) from torch's layouts."""
    probs = target.dtype.kind == "f"
    if not probs:  # ids are plain data: reshaping them is not an op of the graph
        target = Tensor(target.data)
        ids = target.data
    if input.ndim == 1:  # one unbatched sample
        if probs:
            return input.reshape(1, -1), target.reshape(1, -1), ()
        return input.reshape(1, -1), Tensor(ids.reshape(1)), ()
    if probs:
        if target.shape != input.shape:
            raise ArgumentError(f"cross_entropy: probability targets of shape {target.shape} must "
                             f"match the input's {input.shape}")
        target = target.to(input.dtype)
    elif target.shape == input.shape[:1] + input.shape[2:]:  # torch: classes on dim 1
        pass
    elif input.ndim > 2 and target.shape == input.shape[:-1]:  # classes last (B, T, V)
        C = input.shape[-1]
        return input.reshape(-1, C), Tensor(ids.reshape(-1)), target.shape
    else:
        raise ArgumentError(f"cross_entropy: target shape {target.shape} does not fit input shape "
                         f"{input.shape} (expected {input.shape[:1] + input.shape[2:]})")
    out_shape = input.shape[:1] + input.shape[2:]
    if input.ndim > 2:  # (N, C, d...) -> (N, d..., C)
        input = input.permute(0, *range(2, input.ndim), 1)
        if probs:
            target = target.permute(0, *range(2, target.ndim), 1)
    C = input.shape[-1]
    if probs:
        return input.reshape(-1, C), target.reshape(-1, C), out_shape
    return (input if input.ndim == 2 else input.reshape(-1, C)), Tensor(ids.reshape(-1)), out_shape


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
        raise ArgumentError(f"{name}: target shape {ids.shape} does not fit input shape "
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


