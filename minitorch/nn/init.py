"""torch.nn.init's in-place initializers: normal_, uniform_, constant_, zeros_, ones_,
kaiming_uniform_ (the one torch's Linear uses) and calculate_gain.

Each writes into the tensor's own array under no_grad and returns the tensor, so a flattened
parameter stays a view of its buffer; it never rebinds `.data`. Random ones draw from a
minitorch Generator (default: default_generator, seeded by manual_seed), never NumPy's global one.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..engine import Generator, Tensor, default_generator, no_grad

__all__ = ["calculate_gain", "constant_", "kaiming_uniform_", "normal_", "ones_", "uniform_",
           "zeros_"]


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


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch's recommended gain for a nonlinearity (linear, sigmoid, tanh, relu, leaky_relu with
    negative slope `param`, default 0.01, selu)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    gains = {"tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 3.0 / 4}
    if nonlinearity in gains:
        return gains[nonlinearity]
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """Fill tensor in place with U(-bound, bound), bound = gain * sqrt(3 / fan), torch's He
    init; a is leaky_relu's negative slope (a=sqrt(5) gives torch's Linear: 1/sqrt(fan_in)).

    Args:
        tensor: a floating Tensor with at least 2 dims (out, in, *kernel).
        a: the negative slope for the gain (leaky_relu only).
        mode: 'fan_in' (keeps the forward's variance) or 'fan_out' (the backward's).
        nonlinearity: passed to calculate_gain.
        generator: the Generator to draw from (default: minitorch's default_generator).
    Returns:
        tensor itself (unchanged if it has no elements, as torch).
    """
    _check(tensor, "kaiming_uniform_", floating=True)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_uniform_: mode {mode!r} not supported, use 'fan_in' or "
                         f"'fan_out'")
    if 0 in tensor.shape:
        return tensor
    fan_in, fan_out = _fans(tensor, "kaiming_uniform_")
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / (fan_in if mode == "fan_in"
                                                                else fan_out))
    return uniform_(tensor, -bound, bound, generator)


def _fans(tensor: Tensor, name: str) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight (out, in, *kernel), as torch counts them."""
    if tensor.ndim < 2:
        raise ValueError(f"{name}: fan in and fan out can not be computed for a tensor with "
                         f"fewer than 2 dimensions (shape {tensor.shape})")
    field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * field, tensor.shape[0] * field


_skip = threading.local()


@contextmanager
def _skip_init() -> Iterator[None]:
    """Within this block, modules built here skip reset_parameters (nn.utils.skip_init)."""
    prev, _skip.on = _skipping(), True
    try:
        yield
    finally:
        _skip.on = prev


def _skipping() -> bool:
    """True inside _skip_init(): a module's constructor leaves its parameters unset."""
    return getattr(_skip, "on", False)


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
