"""Binary arithmetic, bitwise and comparison operators (reflected forms included), matmul and
its 2-D/1-D forms, and the dtype rule's pairing of operands (promote, in dtypes.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import is_float, promote
from ..kernels import ArgumentError
from .base import TensorBase
from .indexing import where


class Arithmetic(TensorBase):
    """+, -, *, /, //, %, **, @, ~, &, |, ^, the comparisons, and their methods."""

    __slots__ = ()

    def _pair(self, other: Any) -> tuple[TensorBase, TensorBase]:
        """Coerce `other` to a Tensor and unify float dtypes by the module's dtype rule."""
        if isinstance(other, TensorBase):
            if other._data.dtype == self._data.dtype:  # the common case: nothing to promote
                return self, other
        else:
            if isinstance(other, np.generic):  # a NumPy number counts as a Python one (torch)
                other = other.item()
            dtype = self._data.dtype
            if isinstance(other, (int, float)):  # bools included
                if dtype.kind == "f":  # a Python number takes the floating tensor's dtype
                    return self, self._wrap(np.asarray(other, dtype=dtype))
                if type(other) is int and dtype == np.int64:
                    return self, self._wrap(np.asarray(other, dtype=dtype))
            other = self._lift(other)
        a, b = promote(self, other)
        return a, b

    def _binary(self, name: str, other: Any, reflected: bool = False) -> TensorBase:
        a, b = self._pair(other)
        return self._apply(name, b, a) if reflected else self._apply(name, a, b)

    def add(self, other, *, alpha=1): return self._binary("add", scaled(self, other, alpha))
    def sub(self, other, *, alpha=1): return self._subtract(scaled(self, other, alpha))

    def _subtract(self, other, reflected: bool = False) -> TensorBase:
        if self.dtype == np.bool_ or isinstance(other, bool) or (
                isinstance(other, TensorBase) and other.dtype == np.bool_):
            raise TypeError("sub: not defined on bool tensors (as torch): for a mask use ~ or "
                            "logical_not()")
        return self._binary("sub", other, reflected)

    def mul(self, other): return self._binary("mul", other)

    def div(self, other, *, rounding_mode: str | None = None) -> TensorBase:
        """True division (integer and bool operands divide in the default dtype, as torch), or
        rounding_mode='floor' (floor_divide) or 'trunc' (rounded toward zero)."""
        if rounding_mode == "floor":
            a, b = self._pair(other)
            q = a.floor_divide(b)
            if not (a.requires_grad or b.requires_grad):
                return q
            # torch's gradient is 0 (piecewise constant), not floor_divide's none: q's values,
            # wired to both inputs through a where that never picks them
            keep = self._wrap(np.ones((), np.bool_))
            return where(keep, where(keep, q, a), b)
        if rounding_mode == "trunc":
            a, b = self._pair(other)
            if is_float(a.dtype):
                return a._true_divide(b).trunc()
            q = a.floor_divide(b)  # integers: exact, where a float quotient would round
            return q + ((q < 0) & (q * b != a)).long()
        if rounding_mode is not None:
            raise ArgumentError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                             f"{rounding_mode!r}")
        return self._true_divide(other)

    def _true_divide(self, other, reflected: bool = False) -> TensorBase:
        a, b = (t._floating() for t in self._pair(other))
        return self._apply("div", b, a) if reflected else self._apply("div", a, b)

    def floor_divide(self, other): return self._binary("floor_divide", other)
    def remainder(self, other): return self._binary("remainder", other)
    def bitwise_not(self): return self._apply("bitwise_not", self)
    def bitwise_and(self, other): return self._binary("bitwise_and", other)
    def bitwise_or(self, other): return self._binary("bitwise_or", other)
    def bitwise_xor(self, other): return self._binary("bitwise_xor", other)

    def logical_not(self) -> TensorBase:
        return self.eq(0)

    def __add__(self, other): return self._binary("add", other)  # add, alpha=1
    def __sub__(self, other): return self._subtract(other)
    __mul__ = mul
    __truediv__ = _true_divide
    __floordiv__ = floor_divide
    __mod__ = remainder
    __invert__ = bitwise_not
    __and__ = bitwise_and
    __or__ = bitwise_or
    __xor__ = bitwise_xor
    def __radd__(self, other): return self._binary("add", other, reflected=True)
    def __rsub__(self, other): return self._subtract(other, reflected=True)
    def __rmul__(self, other): return self._binary("mul", other, reflected=True)

    def __rtruediv__(self, other):  # a number / self, as torch: self.reciprocal() * other
        if isinstance(other, (int, float, bool)):
            return self.reciprocal() * other
        return self._true_divide(other, reflected=True)

    def __rfloordiv__(self, other): return self._binary("floor_divide", other, reflected=True)
    def __rmod__(self, other): return self._binary("remainder", other, reflected=True)
    def __rand__(self, other): return self._binary("bitwise_and", other, reflected=True)
    def __ror__(self, other): return self._binary("bitwise_or", other, reflected=True)
    def __rxor__(self, other): return self._binary("bitwise_xor", other, reflected=True)

    def pow(self, exponent) -> TensorBase:
        """self ** exponent: a Python number (op `pow`) or a tensor broadcast against self (op
        `power`, differentiable in both)."""
        if isinstance(exponent, bool) and self.dtype == np.bool_:  # as torch: stays bool
            return self if exponent else self == self
        if isinstance(exponent, (int, float)):
            if is_float(self.dtype) or isinstance(exponent, float):
                return self._apply("pow", self._floating(), exponent=float(exponent))
            if exponent < 0:  # torch's rule: the result would not be an integer
                raise RuntimeError(f"pow: an integer tensor ({self.dtype}) to a negative "
                                   f"integer power ({exponent}); make the base float first")
            base = self.long() if self.dtype == np.bool_ else self  # as torch: int64
            return self._apply("pow", base, exponent=exponent)
        return self._binary("power", exponent)

    __pow__ = pow

    def __rpow__(self, base) -> TensorBase:
        return self._binary("power", base, reflected=True)

    def __neg__(self) -> TensorBase:
        return self._apply("neg", self)

    neg = __neg__

    def _compare(self, name: str, other: Any) -> TensorBase:
        return self._apply(name, *self._pair(other))

    def __lt__(self, other): return self._compare("less", other)
    def __le__(self, other): return self._compare("less_equal", other)
    def __gt__(self, other): return self._compare("greater", other)
    def __ge__(self, other): return self._compare("greater_equal", other)
    def eq(self, other): return self._compare("equal", other)
    def lt(self, other): return self._compare("less", other)
    def le(self, other): return self._compare("less_equal", other)
    def gt(self, other): return self._compare("greater", other)
    def ge(self, other): return self._compare("greater_equal", other)
    def ne(self, other): return self._compare("not_equal", other)

    def __eq__(self, other):  # as torch: elementwise, a bool tensor (`t in list` compares values)
        return NotImplemented if _foreign(other) else self.eq(other)

    def __ne__(self, other):
        return NotImplemented if _foreign(other) else self.ne(other)

    __hash__ = object.__hash__  # by identity, as torch: tensors stay usable as dict keys


def _foreign(other: Any) -> bool:
    """Not a tensor, array or number: == gives Python's answer (t == None is False), as torch."""
    return not isinstance(other, (TensorBase, np.ndarray, np.generic, int, float, bool, list,
                                  tuple))


def scaled(t: TensorBase, other: Any, alpha) -> Any:
    """alpha*other, for torch's t.add/sub(other, alpha=...); as torch, a float alpha is refused
    for an integer result and a bool alpha for a non-bool one."""
    floating = is_float(t.dtype) or isinstance(other, float) or (
        isinstance(other, TensorBase) and is_float(other.dtype))
    if isinstance(alpha, bool) and (floating or t.dtype != np.bool_):
        raise RuntimeError(f"alpha={alpha}: a bool alpha needs bool tensors (as torch)")
    if isinstance(alpha, float) and not floating:
        raise RuntimeError(f"alpha={alpha}: integer tensors take an integer alpha (as torch)")
    return other if alpha == 1 else other * alpha
