"""Basic layers: Linear, Embedding, LayerNorm, RMSNorm (torch.nn names and parameter layouts)."""

from __future__ import annotations

import numpy as np

from ..engine import Generator, Tensor, default_generator
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

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)


class Embedding(Module):
    """Rows of weight (num_embeddings, dim) looked up by integer ids; init N(0, 0.02)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, std: float = 0.02,
                 generator: Generator | None = None, dtype=np.float32):
        self.weight = normal((num_embeddings, embedding_dim), std, generator, dtype)

    def forward(self, ids) -> Tensor:
        return F.embedding(ids, self.weight)


class LayerNorm(Module):
    """Normalize the last dim to zero mean and unit variance, then scale and shift (weight 1,
    bias 0)."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True, dtype=np.float32):
        self.eps = eps
        self.weight = Parameter(np.ones(dim, dtype=dtype))
        self.bias = Parameter(np.zeros(dim, dtype=dtype)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """Scale the last dim by 1/rms(x), then by weight (init 1)."""

    def __init__(self, dim: int, eps: float = 1e-5, dtype=np.float32):
        self.eps = eps
        self.weight = Parameter(np.ones(dim, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.weight, self.eps)
