"""Elementwise math of one tensor (exp, log, tanh, gelu, clamp, ...), with torch's rule that
floating ops compute integer and bool tensors in the default dtype.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import get_default_dtype, is_float
from ..kernels import ArgumentError
from .base import TensorBase
from .indexing import where


class Pointwise(TensorBase):
    """One value in, one value out, elementwise."""

    __slots__ = ()

    def _floating(self) -> TensorBase:
        """self, or an integer or bool tensor cast to the default dtype: what torch's floating
        ops (exp, sqrt, true division, ...) compute on, so int64 .exp() is float32 there too."""
        return self if is_float(self.dtype) else self.to(get_default_dtype())

    def exp(self): return self._apply("exp", self._floating())
    def log(self): return self._apply("log", self._floating())
    def sqrt(self): return self._apply("sqrt", self._floating())
    def tanh(self): return self._apply("tanh", self._floating())
    def sigmoid(self): return self._apply("sigmoid", self._floating())
    def relu(self): return self._apply("relu", self)
    def abs(self): return self._apply("abs", self)
    __abs__ = abs

    def gelu(self, approximate: str = "none") -> TensorBase:
        """torch's GELU: exact (x * Phi(x), erf) by default, or approximate='tanh'."""
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return self._apply("gelu", self, approximate=approximate)

    def sin(self): return self._apply("sin", self._floating())
    def cos(self): return self._apply("cos", self._floating())
    def log1p(self): return self._apply("log1p", self._floating())
    def expm1(self): return self._apply("expm1", self._floating())
    def log2(self): return self._apply("log2", self._floating())
    def log10(self): return self._apply("log10", self._floating())
    def sign(self): return self._apply("sign", self)
    def floor(self): return self._apply("floor", self)
    def ceil(self): return self._apply("ceil", self)
    def trunc(self): return self._apply("trunc", self)
    def isnan(self): return self._apply("isnan", self)
    def isinf(self): return self._apply("isinf", self)

    def tan(self): return self._apply("tan", self._floating())
    def asin(self): return self._apply("arcsin", self._floating())
    def acos(self): return self._apply("arccos", self._floating())
    def atan(self): return self._apply("arctan", self._floating())
    def sinh(self): return self._apply("sinh", self._floating())
    def cosh(self): return self._apply("cosh", self._floating())
    def asinh(self): return self._apply("arcsinh", self._floating())
    def acosh(self): return self._apply("arccosh", self._floating())
    def atanh(self): return self._apply("arctanh", self._floating())
    def erf(self): return self._apply("erf", self._floating())
    def exp2(self): return self._apply("exp2", self._floating())
    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def _floating_pair(self, other) -> tuple[TensorBase, TensorBase]:
        """self and other promoted together, in the default dtype when both are integer/bool."""
        a, b = self._pair(other)
        return (a, b) if is_float(a.dtype) else (a._floating(), b._floating())

    def atan2(self, other) -> TensorBase:
        """torch.atan2(self, other): the angle of the point (other, self), broadcast."""
        return self._apply("arctan2", *self._floating_pair(other))

    arctan2 = atan2

    def copysign(self, other) -> TensorBase:
        """|self| with the sign of other (broadcast); the gradient w.r.t. other is 0."""
        return self._apply("copysign", *self._floating_pair(other))

    def logaddexp(self, other) -> TensorBase:
        """log(exp(self) + exp(other)) without overflow, broadcast."""
        a, b = self._pair(other)
        if not is_float(a.dtype):
            raise TypeError(f"logaddexp: not defined on {a.dtype} tensors (as torch): cast first")
        return self._apply("logaddexp", a, b)

    def fmod(self, other) -> TensorBase:
        """The C remainder self - trunc(self/other)*other (the sign of self), broadcast; integer
        tensors stay integer (bool is refused, as torch)."""
        a, b = self._pair(other)
        if a.dtype == np.bool_:
            raise TypeError("fmod: not defined on bool tensors (as torch)")
        return self._apply("fmod", a, b)

    def isfinite(self) -> TensorBase:
        return self._apply("isfinite", self)

    def round(self, *, decimals: int = 0) -> TensorBase:
        """Half to even, as torch; decimals=d rounds x * 10**d (d < 0: x / 10**-d) so."""
        if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
            raise TypeError(f"round(): argument 'decimals' must be int, not "
                            f"{type(decimals).__name__}")
        if decimals != 0:
            if not is_float(self.dtype):
                raise TypeError(f"round: decimals={decimals} is not defined on {self.dtype} "
                                "tensors (as torch): cast to a floating dtype first")
            return self._apply("round_decimals", self, decimals=int(decimals))
        return self._apply("round", self)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> TensorBase:
        """nan, +inf and -inf replaced (by default: 0 and the dtype's extreme finite values);
        the gradient is 0 at the replaced elements, as torch's."""
        return self._apply("nan_to_num", self, nan=nan, posinf=posinf, neginf=neginf)

    def lerp(self, end: TensorBase, weight) -> TensorBase:
        """self + weight * (end - self), broadcast; end has self's dtype (as torch), weight is a
        number or a tensor of self's dtype (a 0-d one of another dtype is cast)."""
        if not is_float(self.dtype) or not isinstance(end, TensorBase) or end.dtype != self.dtype:
            raise TypeError(f"lerp: self ({self.dtype}) must be floating and end a tensor of the "
                            f"same dtype, got {getattr(end, 'dtype', type(end).__name__)}")
        if not isinstance(weight, TensorBase):
            weight = self._wrap(np.asarray(weight, dtype=self.dtype))
        elif weight.dtype != self.dtype:
            if weight.ndim:
                raise TypeError(f"lerp: weight must have self's dtype {self.dtype}, got "
                                f"{weight.dtype}")
            weight = weight.to(self.dtype)
        return self._apply("lerp", self, end, weight)

    def rsqrt(self) -> TensorBase:
        return self._apply("rsqrt", self._floating())

    def square(self) -> TensorBase:
        x = self.long() if self.dtype == np.bool_ else self  # torch: bool squares to int64
        return x * x

    def reciprocal(self) -> TensorBase:
        return self._apply("reciprocal", self._floating())

    def clamp(self, min=None, max=None) -> TensorBase:
        """torch.clamp: the gradient passes where min <= x <= max (bounds included)."""
        if min is None and max is None:
            raise ArgumentError("clamp: give min, max or both")
        if isinstance(min, TensorBase) or isinstance(max, TensorBase):  # bounds with gradients
            low = self if min is None else self.clamp_min(min)
            return low if max is None else low.clamp_max(max)
        if not is_float(self.dtype) and (isinstance(min, float) or isinstance(max, float)):
            return self._floating().clamp(min, max)  # as torch: int64 with a float bound is float
        if self.dtype == np.bool_:  # as torch: int64 with an integer bound, refused with a bool
            if isinstance(min, bool) or isinstance(max, bool):
                raise TypeError("clamp: not defined on a bool tensor with bool bounds (as torch)")
            return self.long().clamp(min, max)
        lo = self.data if min is None else np.maximum(self.data, min)
        bounded = lo if max is None else np.minimum(lo, max)
        inside = bounded == self.data  # false for nan: it stays nan with gradient 0, as torch
        fill = self._lift(bounded.astype(self.dtype, copy=False))
        return where(inside, self, fill)

    clip = clamp

    def clamp_min(self, min) -> TensorBase:
        """max(self, min); a tensor bound broadcasts and gets the gradient where self < min
        (self where self >= min; neither at nan, which propagates), as torch."""
        if not isinstance(min, TensorBase):
            return self.clamp(min=min)
        a, m = self._pair(min)
        return where(a >= m, a, where(a < m, m, (a + m).detach()))

    def clamp_max(self, max) -> TensorBase:
        """min(self, max); a tensor bound as in clamp_min (self's gradient where self <= max)."""
        if not isinstance(max, TensorBase):
            return self.clamp(max=max)
        a, m = self._pair(max)
        return where(a <= m, a, where(a > m, m, (a + m).detach()))

    def maximum(self, other) -> TensorBase:
        """torch.maximum: elementwise; at a tie each side gets half of the gradient."""
        a, b = self._pair(other)
        if not is_float(a.dtype):  # no gradient, so no tie to share (and no float halves)
            return where(a < b, b, a)
        return where(a > b, a, where(a < b, b, (a + b) * 0.5))

    def minimum(self, other) -> TensorBase:
        """torch.minimum: elementwise; at a tie each side gets half of the gradient."""
        a, b = self._pair(other)
        if not is_float(a.dtype):
            return where(a > b, b, a)
        return where(a < b, a, where(a > b, b, (a + b) * 0.5))
