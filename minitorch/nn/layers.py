"""Basic layers: Linear, Embedding, LayerNorm, RMSNorm, Dropout (torch.nn names and parameter
layouts).

Each has `forward` on Tensors (through an op) and `infer` on plain arrays (graph-free); both run
the same kernel (engine/kernels.py), so the two paths compute the same numbers."""

from __future__ import annotations

import numpy as np

from ..engine import Generator, Tensor, default_generator
from ..engine import kernels as K
from . import functional as F
from .module import Module, Parameter


def normal(shape: tuple[int, ...], std: float, generator: Generator | None, dtype) -> Parameter:
    rng = (generator or default_generator).rng
    return Parameter((rng.standard_normal(shape) * std).astype(dtype))


class Linear(Module):
    """y = x @ weight^T + bias. weight (out, in), bias (out,); init N(0, 0.02), bias 0."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 std: float = 0.02, generator: Generator | None = None, dtype=np.float32):
        self.weight = normal((out_features, in_features), std, generator, dtype)
        self.bias = Parameter(np.zeros(out_features, dtype=dtype)) if bias else None

    def forward(self, x: Tensor, norm: Module | None = None) -> Tensor:
        """self(x), or self(norm(x)). A LayerNorm or RMSNorm (exactly those classes: a subclass
        may change forward) runs fused with this Linear as one op (F.norm_linear) that never
        stores norm(x), so a pre-norm block keeps one (..., in) array less for backward; any
        other module is simply called first."""
        if norm is None:
            return F.linear(x, self.weight, self.bias)
        if type(norm) is LayerNorm:
            return F.norm_linear(x, norm.weight, norm.bias, self.weight, self.bias, norm.eps)
        if type(norm) is RMSNorm:
            return F.norm_linear(x, norm.weight, None, self.weight, self.bias, norm.eps,
                                 rms=True)
        return F.linear(norm(x), self.weight, self.bias)

    def infer(self, x: np.ndarray) -> np.ndarray:
        return K.linear(x, self.weight.data, None if self.bias is None else self.bias.data)


class Embedding(Module):
    """Rows of weight (num_embeddings, dim) looked up by integer ids; init N(0, 0.02)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, std: float = 0.02,
                 generator: Generator | None = None, dtype=np.float32):
        self.weight = normal((num_embeddings, embedding_dim), std, generator, dtype)

    def forward(self, ids) -> Tensor:
        return F.embedding(ids, self.weight)

    def infer(self, ids: np.ndarray) -> np.ndarray:
        return self.weight.data[ids]


class LayerNorm(Module):
    """Normalize the last dim to zero mean and unit variance, then scale and shift (weight 1,
    bias 0)."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True, dtype=np.float32):
        self.eps = eps
        self.weight = Parameter(np.ones(dim, dtype=dtype))
        self.bias = Parameter(np.zeros(dim, dtype=dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)

    def infer(self, x: np.ndarray) -> np.ndarray:
        bias = None if self.bias is None else self.bias.data
        return K.layer_norm(x, self.weight.data, bias, self.eps)[0]


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
                 affine: bool = True, track_running_stats: bool = True, dtype=np.float32, *,
                 bias: bool = True):
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
    """Scale the last dim by 1/rms(x), then by weight (init 1)."""

    def __init__(self, dim: int, eps: float = 1e-5, dtype=np.float32):
        self.eps = eps
        self.weight = Parameter(np.ones(dim, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)

    def infer(self, x: np.ndarray) -> np.ndarray:
        return K.rms_norm(x, self.weight.data, self.eps)[0]


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
