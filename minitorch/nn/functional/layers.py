"""F.linear, the norms (layer_norm, rms_norm, batch_norm, normalize), the fused norm_linear,
embedding, one_hot and dropout, with the composite twins of the fused ops (`*_composite`, checked
equal in float64 by verification/test_fused.py)."""

from __future__ import annotations

import numpy as np

from ...engine import (
    REGISTRY,
    Generator,
    Tensor,
    apply,
    composite,
    default_generator,
    no_grad,
    promote,
    where,
)
from ...engine.kernels import require_float


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


def embedding(input, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """torch's F.embedding: rows of weight (V, C) at integer ids `input` (any shape) ->
    input.shape + (C,). Rows looked up at padding_idx (negative counts from the end) get no
    gradient; max_norm, scale_grad_by_freq and sparse are supported at their defaults only."""
    embedding_options("embedding", max_norm, scale_grad_by_freq, sparse)
    ids = _int_tensor(input)
    out = apply(REGISTRY["embedding"], ids, weight)
    if padding_idx is None:
        return out
    pad = ids.data == padding_row("embedding", padding_idx, weight.shape[0])
    if not pad.any():
        return out
    # the same values; the gradient passes only where the id is not padding_idx (torch's)
    return where(Tensor(pad[..., None]), out.detach(), out)


def embedding_options(name: str, max_norm, scale_grad_by_freq, sparse) -> None:
    """Refuse, in one line, the options of torch's embedding that minitorch does not support."""
    given = {"max_norm": max_norm is not None, "scale_grad_by_freq": bool(scale_grad_by_freq),
             "sparse": bool(sparse)}
    bad = [k for k, v in given.items() if v]
    if bad:
        raise NotImplementedError(f"{name}: {', '.join(bad)} not supported (only the defaults: "
                                  f"max_norm=None, scale_grad_by_freq=False, sparse=False)")


def padding_row(name: str, padding_idx, num_embeddings: int) -> int | None:
    """padding_idx as a row in [0, num_embeddings) (torch's: negative counts from the end)."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"{name}: padding_idx must be within num_embeddings ({num_embeddings}), "
                         f"got {padding_idx}")
    return int(padding_idx) % num_embeddings


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


@composite("normalize")
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out=None) -> Tensor:
    """torch's F.normalize: input / max(||input||_p along dim, eps), with torch.norm's p: inf
    max |x|, -inf min |x|, 0 the count of non-zeros (a constant: no gradient through it), any
    other (sum |x|^p)^(1/p), negative p too; an all-zero slice gives zeros with gradient 1/eps,
    as torch."""
    if out is not None:
        raise ValueError("normalize: out= is not supported")
    require_float("normalize", input.data)
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or (
            p != p):
        raise ValueError(f"normalize: p must be a number, got {p!r}")
    a = input.abs()
    if p == float("inf"):
        norm = a.amax(dim, keepdim=True)
    elif p == -float("inf"):
        norm = a.amin(dim, keepdim=True)
    elif p == 0:
        norm = Tensor((input.data != 0).sum(dim, keepdims=True).astype(input.dtype))
    else:
        hit = None
        if p < 0:  # |0|^p = inf makes a slice with a zero's norm 0: taken as such, as torch
            hit = Tensor((input.data == 0).any(axis=dim, keepdims=True))
            a = where(hit, 1.0, a)  # (no inf to differentiate through)
        s = a.sum(dim, keepdim=True) if p == 1 else (a * a if p == 2 else a ** p).sum(
            dim, keepdim=True)
        zero = s == 0.0
        safe = where(zero, 1.0, s)  # a finite gradient where the norm is 0 (it is clamped)
        root = safe if p == 1 else (safe.sqrt() if p == 2 else safe ** (1.0 / p))
        norm = where(zero, 0.0, root)
        norm = norm if hit is None else where(hit, 0.0, norm)
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
    if input.ndim == 1 and input.numel() == 0:  # torch returns an empty result, no checks
        return input * 1.0
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
