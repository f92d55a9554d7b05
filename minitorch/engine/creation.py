"""Making tensors: the seedable Generator, factories (tensor, zeros, ones, randn, arange) and
the functions that join or choose between tensors (cat, stack, where)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import get_default_dtype, promote
from .registry import REGISTRY
from .tensor import Tensor, apply, as_shape, where  # noqa: F401  (where: public here)


class Generator:
    """A seedable random source (wraps np.random.Generator)."""

    def __init__(self, seed: int = 0):
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        self.rng = np.random.default_rng(seed)
        return self

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator used by randn and the nn initializers."""
    return default_generator.manual_seed(seed)


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def zeros(*shape, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(as_shape(shape), dtype=dtype or get_default_dtype()), requires_grad)


def ones(*shape, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(as_shape(shape), dtype=dtype or get_default_dtype()), requires_grad)


def zeros_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros_like(t.data), requires_grad)


def ones_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones_like(t.data), requires_grad)


def randn(*shape, dtype: Any = None, generator: Generator | None = None,
          requires_grad: bool = False) -> Tensor:
    rng = (generator or default_generator).rng
    data = rng.standard_normal(as_shape(shape)).astype(dtype or get_default_dtype())
    return Tensor(data, requires_grad)


def arange(start: int, end: int | None = None, step: int = 1, dtype: Any = None) -> Tensor:
    if end is None:
        start, end = 0, start
    return Tensor(np.arange(start, end, step, dtype=dtype))


def _join(name: str, tensors: Sequence[Tensor], dim: int) -> Tensor:
    """cat or stack: the tensors promoted to one dtype, joined along `dim`."""
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty sequence of tensors")
    tensors = promote(*(t if isinstance(t, Tensor) else Tensor(t) for t in tensors))
    return apply(REGISTRY[name], *tensors, axis=dim)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return _join("concatenate", tensors, dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return _join("stack", tensors, dim)
