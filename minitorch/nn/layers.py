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
