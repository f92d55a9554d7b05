"""torch.nn.functional-style entry points. Each calls one registered op (fused ops for the
transformer's hot spots, see engine/ops/fused.py) or a composite from composites.py."""

from __future__ import annotations

import numpy as np

from ..engine import REGISTRY, Generator, Tensor, apply, default_generator, promote, where
from ..engine.kernels import check_targets, rope_tables  # noqa: F401  (rope_tables: public here)
from .composites import (  # noqa: F401  (re-exported: the reference decompositions)
    _check_reduction,
    _class_weight,
    _weighted_mean,
    batch_norm,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    causal_self_attention_composite,
    cross_entropy_composite,
    elu,
    huber_loss,
    l1_loss,
    layer_norm_composite,
    leaky_relu,
    linear_composite,
    mse_loss,
    nll_loss,
    norm_linear_composite,
    normalize,
    rms_norm_composite,
    rope,
    scaled_dot_product_attention,
    silu,
    smooth_l1_loss,
    softplus,
)


def _int_tensor(ids) -> Tensor:
    return ids if isinstance(ids, Tensor) else Tensor(np.asarray(ids))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x @ weight^T + bias. x (..., in), weight (out, in), bias (out,) -> (..., out)."""
    params = (weight,) if bias is None else (weight, bias)
    return apply(REGISTRY["linear"], *promote(x, *params))


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """torch's F.layer_norm: (x - mean) / sqrt(var + eps) * weight + bias over the trailing
    dims normalized_shape (an int or a tuple); weight and bias have that shape."""
    x, params, shape = _trailing(input, normalized_shape, "layer_norm", weight, bias)
    y = apply(REGISTRY["layer_norm"], *promote(x, *params), eps=eps,
              has_weight=weight is not None, has_bias=bias is not None)
    return y if len(shape) == 1 else y.reshape(input.shape)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """torch's F.rms_norm: x / sqrt(mean(x^2) + eps) * weight over the trailing dims
    normalized_shape; eps None is the dtype's machine epsilon, as in torch."""
    x, params, shape = _trailing(input, normalized_shape, "rms_norm", weight)
    if eps is None:
        eps = float(np.finfo(x.dtype if x.dtype.kind == "f" else np.float32).eps)
    y = apply(REGISTRY["rms_norm"], *promote(x, *params), eps=eps)
    return y if len(shape) == 1 else y.reshape(input.shape)


def norm_linear(input: Tensor, norm_weight: Tensor, norm_bias: Tensor | None, weight: Tensor,
                bias: Tensor | None = None, eps: float = 1e-5, rms: bool = False) -> Tensor:
    """linear(layer_norm(input, (C,), norm_weight, norm_bias, eps), weight, bias), or with rms
    linear(rms_norm(input, (C,), norm_weight, eps), weight, bias) (norm_bias None), as one op
    that never stores the norm's output: backward needs only the normalized input, so a
    pre-norm block keeps one (..., C) array per norm instead of two. input (..., C),
    norm_weight and norm_bias (C,), weight (out, C), bias (out,) -> (..., out)."""
    name = "norm_linear"
    if norm_weight is None or weight is None:
        raise ValueError(f"{name}: norm_weight and weight are required (got None)")
    if rms and norm_bias is not None:
        raise ValueError(f"{name}: rms_norm has no bias, got norm_bias of shape {norm_bias.shape}")
    x, _, _ = _trailing(input, input.shape[-1:] if input.ndim else (), name, norm_weight, norm_bias)
    if weight.ndim != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"{name}: cannot apply weight {weight.shape} (out, in) to input {x.shape}")
    if bias is not None and bias.shape != weight.shape[:1]:
        raise ValueError(f"{name}: bias {bias.shape} does not match weight {weight.shape}")
    params = [p for p in (norm_weight, norm_bias, weight, bias) if p is not None]
    return apply(REGISTRY[name], *promote(x, *params), eps=eps, rms=rms,
                 has_norm_bias=norm_bias is not None, has_bias=bias is not None)


def _trailing(x: Tensor, normalized_shape, name: str, *params):
    """(x as (..., N), the given params as (N,), the normalized shape): torch's normalized_shape
    check, and several trailing dims flattened into one for the fused ops."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"{name}: normalized_shape {shape} does not match the input's trailing "
                         f"dims (input shape {x.shape})")
    for p in params:
        if p is not None and p.shape != shape:
            raise ValueError(f"{name}: weight/bias of shape {p.shape} must have normalized_shape "
                             f"{shape}")
    given = [p for p in params if p is not None]
    if len(shape) > 1:
        x = x.reshape(x.shape[:x.ndim - len(shape)] + (-1,))
        given = [p.reshape(-1) for p in given]
    return x, given, shape


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
            raise ValueError(f"cross_entropy: probability targets of shape {target.shape} must "
                             f"match the input's {input.shape}")
        target = target.to(input.dtype)
    elif target.shape == input.shape[:1] + input.shape[2:]:  # torch: classes on dim 1
        pass
    elif input.ndim > 2 and target.shape == input.shape[:-1]:  # classes last (B, T, V)
        C = input.shape[-1]
        return input.reshape(-1, C), Tensor(ids.reshape(-1)), target.shape
    else:
        raise ValueError(f"cross_entropy: target shape {target.shape} does not fit input shape "
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


def causal_self_attention(qkv: Tensor, n_head: int, cos: np.ndarray | None = None,
                          sin: np.ndarray | None = None) -> Tensor:
    """Multi-head causal attention: qkv (B, T, 3C) -> (B, T, C); optional RoPE tables
    cos, sin (T, hs/2)."""
    if cos is not None:
        cos, sin = cos.astype(qkv.dtype, copy=False), sin.astype(qkv.dtype, copy=False)
    return apply(REGISTRY["causal_self_attention"], qkv, n_head=n_head, cos=cos, sin=sin)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return input.gelu(approximate=approximate)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.copy_(input.clone().relu()) if inplace else input.relu()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def _softmax_dim(input: Tensor, dim: int | None) -> int:
    """dim, or torch's legacy choice when it is None: 0 for 0-, 1- and 3-d inputs, else 1."""
    return dim if dim is not None else (0 if input.ndim in (0, 1, 3) else 1)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """torch's F.softmax along dim (None: torch's legacy implicit dim); dtype casts first."""
    x = input if dtype is None else input.to(dtype)
    return x.softmax(_softmax_dim(input, dim))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    """torch's F.log_softmax along dim (None: torch's legacy implicit dim); dtype casts first."""
    x = input if dtype is None else input.to(dtype)
    return x.log_softmax(_softmax_dim(input, dim))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """torch's F.one_hot: int64 ids (any shape) -> int64 tensor.shape + (num_classes,) with a 1
    at each id; num_classes -1 is max id + 1. Not differentiable."""
    ids = tensor.data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if ids.dtype != np.int64:
        raise TypeError(f"one_hot is only applicable to index tensors of dtype int64, got "
                        f"{ids.dtype}")
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError("one_hot: can not infer the number of classes from an empty tensor")
        num_classes = int(ids.max()) + 1
    if ids.size and ids.min() < 0:
        raise ValueError(f"one_hot: class values must be non-negative, got {int(ids.min())}")
    if ids.size and ids.max() >= num_classes or num_classes < -1:
        raise ValueError(f"one_hot: class values must be smaller than num_classes="
                         f"{num_classes}, got {int(ids.max()) if ids.size else None}")
    return Tensor((ids[..., None] == np.arange(num_classes)).astype(np.int64))


def embedding(ids, weight: Tensor) -> Tensor:
    """Rows of weight (V, C) at integer ids (any shape) -> ids.shape + (C,)."""
    return apply(REGISTRY["embedding"], _int_tensor(ids), weight)


def check_dropout_p(p) -> float:
    """p as a float if it is a number in [0, 1], else torch's ValueError, in one line."""
    ok = isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, bool)
    if not (ok and 0.0 <= p <= 1.0):  # also refuses nan, which torch lets through
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
    return float(p)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
            generator: Generator | None = None) -> Tensor:
    """torch's F.dropout: in training, each element is zeroed with probability p and the
    survivors are scaled by 1/(1-p), so the expectation is unchanged; the gradient is the same
    mask times 1/(1-p). Not training, or p = 0, it returns input itself; p = 1 gives zeros.

    Args:
        input: a floating Tensor of any shape.
        p: the probability of zeroing an element, in [0, 1].
        training: apply dropout (True) or return input unchanged (False).
        inplace: write the result into input (torch's `mul_`) instead of a new tensor.
        generator: the Generator the mask is drawn from (default: minitorch's default one).
    Returns:
        A tensor of input's shape and dtype (input itself if inplace, or nothing to drop).
    """
    p = check_dropout_p(p)
    if not training or p == 0.0:
        return input
    if input.dtype.kind != "f":  # a scaled mask cannot be written into integers (torch refuses)
        raise TypeError(f"dropout: input must be a floating tensor, got dtype {input.dtype}")
    keep = (generator or default_generator).rng.random(input.shape) >= p  # P(keep) = 1 - p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    mask = Tensor(np.where(keep, scale, 0.0).astype(input.dtype))  # a constant: no gradient
    return input.mul_(mask) if inplace else input * mask
