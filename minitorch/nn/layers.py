"""Basic layers: Linear, Embedding, LayerNorm, RMSNorm, BatchNorm1d/2d, Dropout (torch.nn names,
positional orders, parameter layouts and initializations: reset_parameters as torch's, drawn from
minitorch's default generator).

Each has `forward` on Tensors (through an op) and `infer` on plain arrays (graph-free); both run
the same kernel (engine/kernels.py), so the two paths compute the same numbers."""

from __future__ import annotations

import math

import numpy as np

from ..engine import Generator, Tensor, get_default_dtype
from ..engine import kernels as K
from . import functional as F
from . import init
from .module import Module, Parameter


def factory(name: str, device, dtype) -> np.dtype:
    """The dtype of a module's parameters from torch's factory kwargs: device None or 'cpu',
    dtype a floating dtype (None: the default dtype); anything else refused in one line."""
    if device is not None and str(device).split(":")[0] != "cpu":
        raise RuntimeError(f"{name}: minitorch runs on the CPU only, got device {device!r}")
    dt = np.dtype(get_default_dtype() if dtype is None else dtype)
    if dt.kind != "f":
        raise TypeError(f"{name}: dtype must be a floating dtype, got {dt}")
    return dt


def _shape(normalized_shape) -> tuple[int, ...]:
    return ((normalized_shape,) if isinstance(normalized_shape, (int, np.integer))
            else tuple(int(n) for n in normalized_shape))


class Linear(Module):
    """y = x @ weight^T + bias. weight (out, in), bias (out,); torch's init: weight
    kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), and bias the same U."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        dt = factory("Linear", device, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(np.empty((out_features, in_features), dtype=dt))
        self.bias = Parameter(np.empty(out_features, dtype=dt)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if init._skipping():
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def infer(self, x: np.ndarray) -> np.ndarray:
        return K.linear(x, self.weight.data, None if self.bias is None else self.bias.data)



class Embedding(Module):
    """Rows of weight (num_embeddings, embedding_dim) looked up by integer ids; torch's init
    N(0, 1), the padding_idx row zeroed (and given no gradient, as torch's).

    Args:
        num_embeddings: V, the rows.
        embedding_dim: C, the width.
        padding_idx: a row (negative counts from the end) that starts at zero and gets no
            gradient; None for none.
        max_norm, norm_type, scale_grad_by_freq, sparse: torch's; only their defaults are
            supported (anything else is refused in one line).
        _weight: an initial weight (V, C) to use instead of drawing one; _freeze: no gradient.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        dt = factory("Embedding", device, dtype)
        F.embedding_options("Embedding", max_norm, scale_grad_by_freq, sparse)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = F.padding_row("Embedding", padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype=dt),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            w = _weight.data if isinstance(_weight, Tensor) else np.asarray(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight of shape {w.shape} does not match "
                                 f"(num_embeddings, embedding_dim) = "
                                 f"{(num_embeddings, embedding_dim)}")
            self.weight = Parameter(np.array(w), requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        if init._skipping():
            return
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0  # in place: a flat buffer stays shared

    def forward(self, ids) -> Tensor:
        return F.embedding(ids, self.weight, self.padding_idx)

    def infer(self, ids: np.ndarray) -> np.ndarray:
        return self.weight.data[ids]



class LayerNorm(Module):
    """Normalize the trailing dims normalized_shape to zero mean and unit variance, then scale
    and shift (weight 1, bias 0: torch's init). elementwise_affine=False: no weight or bias;
    bias=False: no bias."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        dt = factory("LayerNorm", device, dtype)
        self.normalized_shape, self.eps = _shape(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        shape = self.normalized_shape
        self.weight = Parameter(np.ones(shape, dtype=dt)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, dtype=dt)) if elementwise_affine and bias else None

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def infer(self, x: np.ndarray) -> np.ndarray:
        rows = x.reshape(x.shape[:x.ndim - len(self.normalized_shape)] + (-1,))
        w, b = (None if p is None else p.data.reshape(-1) for p in (self.weight, self.bias))
        return K.layer_norm(rows, w, b, self.eps)[0].reshape(x.shape)



class _BatchNorm(Module):
    """Normalize each channel (dim 1) by the batch's statistics in training and by running
    ones in eval (F.batch_norm), then scale and shift (weight 1, bias 0), as torch's.

    Args:
        num_features: C, the channels.
        eps: added to the variance.
        momentum: how far the running statistics move toward each batch's; None: their
            cumulative average over the batches seen.
        affine: learn weight and bias (bias=False: the weight only, as torch's).
        track_running_stats: keep running_mean, running_var and num_batches_tracked (buffers);
            without them, the batch's statistics in eval too.
    """

    ndims: tuple[int, ...] = ()  # the input ranks the subclass takes

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None,
                 *, bias: bool = True):
        dtype = factory(type(self).__name__, device, dtype)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats, self.has_bias = affine, track_running_stats, bias
        self.weight = Parameter(np.ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(np.zeros(num_features, dtype=dtype)) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=dtype)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=dtype)))
            self.register_buffer("num_batches_tracked", Tensor(np.zeros((), dtype=np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def reset_parameters(self) -> None:
        if self.track_running_stats:
            for buf, value in ((self.running_mean, 0), (self.running_var, 1),
                               (self.num_batches_tracked, 0)):
                buf.data[...] = value
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self.ndims:
            ranks = " or ".join(map(str, self.ndims))
            raise ValueError(f"{type(self).__name__}: expected a {ranks}-D input, got shape "
                             f"{tuple(x.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked += 1
            if self.momentum is None:  # the cumulative average
                momentum = 1.0 / int(self.num_batches_tracked)
        use_batch = self.training or not self.track_running_stats
        keep = not self.training or self.track_running_stats
        return F.batch_norm(x, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch, momentum, self.eps)

    def __repr__(self) -> str:  # as torch's
        return (f"{type(self).__name__}({self.num_features}, eps={self.eps}, "
                f"momentum={self.momentum}, affine={self.affine}, bias={self.has_bias}, "
                f"track_running_stats={self.track_running_stats})")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L)."""

    ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W)."""

    ndims = (4,)


class RMSNorm(Module):
    """Scale the trailing dims normalized_shape by 1/rms(x), then by weight (init 1, as torch's);
    eps None is the dtype's machine epsilon (torch's); elementwise_affine=False: no weight."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device=None, dtype=None):
        dt = factory("RMSNorm", device, dtype)
        self.normalized_shape, self.eps = _shape(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        self.weight = (Parameter(np.ones(self.normalized_shape, dtype=dt)) if elementwise_affine
                       else None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def infer(self, x: np.ndarray) -> np.ndarray:
        eps = float(np.finfo(x.dtype).eps) if self.eps is None else self.eps
        rows = x.reshape(x.shape[:x.ndim - len(self.normalized_shape)] + (-1,))
        w = None if self.weight is None else self.weight.data.reshape(-1)
        return K.rms_norm(rows, w, eps)[0].reshape(x.shape)



class Dropout(Module):
    """In training mode, zero each element with probability p and scale the rest by 1/(1-p)
    (F.dropout); in eval mode, the identity. Masks come from `generator` (default: minitorch's
    default generator), so manual_seed makes them reproducible.

    Args:
        p: the probability of zeroing an element, in [0, 1].
        inplace: write into the input instead of returning a new tensor (as torch).
        generator: the Generator masks are drawn from.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False,
                 generator: Generator | None = None):
        self.p = F.check_dropout_p(p)
        self.inplace = inplace
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, self.inplace, self.generator)

    def infer(self, x: np.ndarray) -> np.ndarray:
        return x  # the graph-free path is inference, where dropout is off
