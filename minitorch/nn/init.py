"""torch.nn.init's in-place initializers: normal_, uniform_, constant_, zeros_, ones_.

Each writes into the tensor's own array under no_grad and returns the tensor, so a flattened
parameter stays a view of its buffer; it never rebinds `.data`. Random ones draw from a
minitorch Generator (default: default_generator, seeded by manual_seed), never NumPy's global one.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import Generator, Tensor, default_generator, no_grad

__all__ = ["constant_", "normal_", "ones_", "uniform_", "zeros_"]


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill tensor in place with draws from N(mean, std^2).

    Args:
        tensor: a floating Tensor of any shape (a Parameter, say).
        mean: the mean of the distribution.
        std: its standard deviation, >= 0.
        generator: the Generator to draw from (default: minitorch's default_generator).
    Returns:
        tensor itself.
    """
    _check(tensor, "normal_", floating=True)
    _check_finite("normal_", mean=mean, std=std)
    if std < 0:
        raise RuntimeError(f"normal_: std must be >= 0, got {std}")  # torch's RuntimeError
    # z * std first, as the layers' own init, so normal_(w, 0, s) redraws what Linear drew
    values = _rng(generator).standard_normal(tensor.shape) * std + mean
    return _write(tensor, values)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill tensor in place with draws from U(a, b).

    Args:
        tensor: a floating Tensor of any shape.
        a: the lower bound.
        b: the upper bound, >= a.
        generator: the Generator to draw from (default: minitorch's default_generator).
    Returns:
        tensor itself.
    """
    _check(tensor, "uniform_", floating=True)
    _check_finite("uniform_", a=a, b=b)
    if a > b:
        raise RuntimeError(f"uniform_: expected a <= b, got a={a} > b={b}")  # torch's type
    return _write(tensor, _rng(generator).uniform(a, b, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill tensor in place with val (cast to its dtype). Returns tensor itself."""
    return _fill("constant_", tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill tensor in place with 0. Returns tensor itself."""
    return _fill("zeros_", tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill tensor in place with 1. Returns tensor itself."""
    return _fill("ones_", tensor, 1)


def _fill(name: str, tensor: Tensor, val) -> Tensor:
    _check(tensor, name)
    with no_grad():
        return tensor.fill_(val)


def _rng(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator).rng


def _write(tensor: Tensor, values: np.ndarray) -> Tensor:
    """tensor's array = values (cast to its dtype), in place and outside the graph."""
    with no_grad():
        return tensor.copy_(values)


def _check(tensor, name: str, floating: bool = False) -> None:
    """TypeError naming the function unless tensor is a Tensor (floating, if asked)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(tensor).__name__}")
    if floating and tensor.dtype.kind != "f":
        raise TypeError(f"{name}: expected a floating tensor, got dtype {tensor.dtype}")


def _check_finite(name: str, **values) -> None:
    """ValueError naming the first argument that is not a finite real number."""
    for key, v in values.items():
        ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        if not (ok and math.isfinite(v)):
            raise ValueError(f"{name}: {key} must be a finite number, got {v!r}")
