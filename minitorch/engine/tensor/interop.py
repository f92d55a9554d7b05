"""Tensor meeting Python and NumPy: item, float(t), bool(t), an index, f-strings, np.asarray(t),
NumPy operators and ufuncs with a tensor operand, numpy(), tolist(); the dtype conversions
(float, double, long, bool) and the new_* factories that take self's dtype.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import is_float, parse_to
from ..kernels import ArgumentError
from .base import TensorBase, as_shape


class Interop(TensorBase):
    """Python's and NumPy's protocols, and conversions."""

    __slots__ = ()

    def item(self) -> float:
        if self.data.size != 1:
            raise ArgumentError(f"item(): tensor of shape {self.shape} has {self.data.size} "
                                "elements")
        return self.data.item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(f"bool(): a tensor of shape {self.shape} has {self.data.size} "
                               "elements, so its truth value is ambiguous; use .any() or .all()")
        return bool(self.data.item())

    def __index__(self) -> int:
        if self.data.size != 1 or is_float(self.dtype):
            raise TypeError(f"only a one-element integer tensor can be an index, got shape "
                            f"{self.shape} dtype {self.dtype}")
        return int(self.data.item())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:  # f"{loss:.3f}", as torch (which formats only 0-d tensors)
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """np.asarray(t), as torch's: the values (refused while t requires grad, as numpy())."""
        a = self.numpy()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        """A NumPy operator or ufunc with a Tensor operand. An operator with an array or NumPy
        number on the left (`a + t`, `a < t`): the Tensor operation, as `t + a`. Into plain
        arrays (`out=`, and so `p.data += lr * p.grad`, torch's `.data` update): on the values,
        in place. Any other ufunc (np.exp(t)): on the values, wrapped in a Tensor, as torch's."""
        reflected = _REFLECTED.get(ufunc.__name__)
        if (out is None and method == "__call__" and reflected and not kwargs
                and len(inputs) == 2 and not isinstance(inputs[0], TensorBase)):
            return getattr(inputs[1], reflected)(inputs[0])
        values = [x.numpy() if isinstance(x, TensorBase) else x for x in inputs]
        if out is not None:
            if any(isinstance(o, TensorBase) for o in out):
                return NotImplemented  # t += a is Tensor.__iadd__; np.exp(a, out=t) is refused
            return getattr(ufunc, method)(*values, out=out, **kwargs)
        result = getattr(ufunc, method)(*values, **kwargs)
        if isinstance(result, tuple):
            return tuple(self._lift(np.asarray(r)) for r in result)
        return self._lift(np.asarray(result))

    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError("numpy() on a tensor that requires grad; use .detach().numpy()")
        return self.data

    def tolist(self):
        return self.data.tolist()

    def float(self) -> TensorBase:
        return self.to(np.float32)

    def double(self) -> TensorBase:
        return self.to(np.float64)

    def long(self) -> TensorBase:
        return self.to(np.int64)

    def bool(self) -> TensorBase:
        return self.to(np.bool_)

    def int(self) -> TensorBase:
        raise TypeError("int(): minitorch has no int32 dtype (integers are int64): use .long()")

    def type_as(self, other: TensorBase) -> TensorBase:
        return self.to(other.dtype)

    def new_full(self, size, fill_value, *, dtype=None, device=None,
                 requires_grad: bool = False) -> TensorBase:
        """torch's new_full: a new tensor of `size` filled with fill_value, of self's dtype
        unless `dtype` is given (new_zeros, new_ones and new_tensor follow the same rule)."""
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"new_full: size must be a tuple of ints, got {size!r}")
        dtype = parse_to(dtype=dtype, device=device) or self.dtype
        out = self._wrap(np.full(tuple(size), fill_value, dtype=dtype))
        return out.requires_grad_(requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> TensorBase:
        return self.new_full(as_shape(size), 0, dtype=dtype, device=device,
                             requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> TensorBase:
        return self.new_full(as_shape(size), 1, dtype=dtype, device=device,
                             requires_grad=requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None,
                   requires_grad: bool = False) -> TensorBase:
        """A copy of `data` (a tensor's values are copied, cut from its graph) in self's dtype
        unless `dtype` is given."""
        dtype = parse_to(dtype=dtype, device=device) or self.dtype
        data = data.data if isinstance(data, TensorBase) else data
        return self._wrap(np.array(data, dtype=dtype)).requires_grad_(requires_grad)


# NumPy ufunc name -> the Tensor method that runs `array <op> tensor` (the reflected operator)
_REFLECTED = {"add": "__radd__", "subtract": "__rsub__", "multiply": "__rmul__",
              "divide": "__rtruediv__", "floor_divide": "__rfloordiv__",
              "remainder": "__rmod__", "power": "__rpow__", "matmul": "__rmatmul__",
              "bitwise_and": "__rand__", "bitwise_or": "__ror__", "bitwise_xor": "__rxor__",
              "less": "__gt__", "less_equal": "__ge__", "greater": "__lt__",
              "greater_equal": "__le__", "equal": "__eq__", "not_equal": "__ne__"}
