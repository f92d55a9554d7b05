"""TensorBase, the root of Tensor's family mixins, and the small helpers they share.

Each family module (interop, arithmetic, pointwise, reduce, movement, indexing, inplace) is a
mixin that reaches everything else through `self`; the hooks it needs are declared here and
implemented by the core (core.py): `_apply` runs a registered op, `_wrap` makes a tensor of an
array without a graph, `_lift` makes one of any data, as Tensor(data) does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..kernels import ArgumentError


class TensorBase:
    """What every Tensor is, as the family modules see it: isinstance checks name this class."""

    __slots__ = ()
    _data: np.ndarray

    @staticmethod
    def _apply(name: str, *inputs: TensorBase, **attrs: Any) -> TensorBase:
        """Run the registered op `name` on the inputs (recording a node when one needs grad)."""
        raise NotImplementedError

    @staticmethod
    def _wrap(array: np.ndarray) -> TensorBase:
        """A tensor of `array` itself, not in any graph."""
        raise NotImplementedError

    @staticmethod
    def _lift(data: Any, dtype: Any = None) -> TensorBase:
        """Tensor(data, dtype=dtype)."""
        raise NotImplementedError


def numpy_aliases(method):
    """torch's NumPy-style keyword aliases on a method that takes a dim: axis= for dim= and
    keepdims= for keepdim= (x.sum(axis=1, keepdims=True) runs in torch)."""

    @functools.wraps(method)
    def with_aliases(*args, **kwargs):  # (the tensor may come as input=, in torch.sum)
        for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
            if alias in kwargs:
                if name in kwargs:
                    raise TypeError(f"{method.__name__}(): got both {name}= and its alias "
                                    f"{alias}= (as torch)")
                kwargs[name] = kwargs.pop(alias)
        return method(*args, **kwargs)

    return with_aliases



def as_shape(shape: Sequence) -> tuple[int, ...]:
    """Sizes given as f(2, 3) or f((2, 3)) -> (2, 3)."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def check_dim(dim: int, ndim: int, name: str) -> int:
    """dim as a non-negative axis of an ndim tensor (0-d takes 0 and -1), or IndexError."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{name}: dim {dim} is out of range for a tensor of {ndim} dims "
                         f"(expected [{-n}, {n - 1}])")
    return dim % n


def as_axis(dim):
    if dim is None or isinstance(dim, int):
        return dim
    return tuple(dim)


def retold(e: Exception, message: str) -> Exception:
    """An error of e's kind saying `message`: e's class, or the built-in kind it derives from
    when that class takes other arguments (NumPy's casting errors take the ufunc and dtypes).
    NumPy's ValueErrors (shapes that do not fit) become ArgumentError: torch raises RuntimeError."""
    if type(e) is ValueError:
        return ArgumentError(message)
    try:
        return type(e)(message)
    except TypeError:
        return next(k for k in type(e).__mro__ if k in (ValueError, IndexError, TypeError))(message)
