"""Arithmetic primitives: + - * / // % and powers, the bitwise ops and the comparisons. Binary
ops broadcast; their vjps return gradients in the broadcast (output) shape and the engine sums
them back to each input's shape.

Constants are Python floats, never NumPy scalars, so float32 inputs stay float32.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as K
from ..registry import Op, register


@register("add")
class Add(Op):
    """y = a + b; grad_a = g, grad_b = g."""

    @staticmethod
    def forward(ctx, a, b):
        # a C-ordered result (NumPy's own follows a transposed input's layout, and the sums
        # of later ops over another layout round differently: replay would not be bit-equal)
        shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
        dtype = a.dtype if a.dtype == b.dtype else np.result_type(a, b)
        return np.add(a, b, out=K.empty(shape, dtype))

    @staticmethod
    def vjp(ctx, g):
        return ctx.needed(g, g)


@register("sub")
class Sub(Op):
    """y = a - b; grad_a = g, grad_b = -g."""

    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def vjp(ctx, g):
        return ctx.needed(g, -g)


@register("mul")
class Mul(Op):
    """y = a * b; grad_a = g*b, grad_b = g*a. Each input is saved only when the other one needs
    its gradient, as torch does: `d * 2` keeps no hold on d, so a later `d += ...` is allowed."""

    @staticmethod
    def forward(ctx, a, b):
        needs = ctx.needs_grad
        ctx.save(a if needs[1] else None, b if needs[0] else None)
        return a * b

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.saved
        grad_a = g * b if ctx.needs_grad[0] else None  # first: grad_b may write over g
        return grad_a, (np.multiply(g, a, out=ctx.reuse(g)) if ctx.needs_grad[1] else None)


@register("div")
class Div(Op):
    """y = a / b; grad_a = g/b, grad_b = -g*a/b**2, computed as torch's -g*((a/b)/b) (its
    float32 rounding). Domain: b != 0. a is saved only when b needs its gradient (as torch)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a if ctx.needs_grad[1] else None, b)
        with np.errstate(divide="ignore", invalid="ignore"):  # x/0 = +-inf or nan, as torch
            return a / b

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.saved
        needs = ctx.needs_grad
        with np.errstate(divide="ignore", invalid="ignore"):
            grad_b = -g * ((a / b) / b) if needs[1] else None  # before g's buffer is reused
        grad_a = np.divide(g, b, out=ctx.reuse(g)) if needs[0] else None
        return grad_a, grad_b


class IntegerDivisionByZero(ZeroDivisionError, RuntimeError):
    """Integer // 0 or % 0: Python's ZeroDivisionError, and the RuntimeError torch raises."""


def _check_division(name: str, a: np.ndarray, b: np.ndarray) -> None:
    """Integer division by zero raises, as in torch (NumPy would give 0 with a warning); bool
    operands are refused, as in torch (NumPy would divide them as int8)."""
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        raise TypeError(f"{name}: not defined on bool tensors (as torch): cast them first")
    if b.dtype.kind in "iu" and not np.all(b):
        raise IntegerDivisionByZero(f"{name}: integer division by zero")


@register("floor_divide")
class FloorDivide(Op):
    """y = floor(a / b) (Python's //: rounds toward -inf); not differentiable (piecewise
    constant; torch raises on its backward)."""

    differentiable = False

    @staticmethod
    def forward(ctx, a, b):
        _check_division("floor_divide", a, b)
        with np.errstate(divide="ignore", invalid="ignore"):  # x // 0.0 = +-inf or nan, as torch
            return np.floor_divide(a, b)


@register("remainder")
class Remainder(Op):
    """y = a - b*floor(a/b) (Python's %: the sign of b); grad_a = g, grad_b = -g*floor(a/b).
    Domain: b != 0 and a/b not an integer (where y jumps)."""

    @staticmethod
    def forward(ctx, a, b):
        _check_division("remainder", a, b)
        if ctx.needs_grad[1]:  # grad_a = g needs nothing saved
            ctx.save(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):  # x % 0.0 = nan, as torch
            return np.remainder(a, b)

    @staticmethod
    def vjp(ctx, g):
        grad_b = None
        if ctx.needs_grad[1]:
            a, b = ctx.saved
            with np.errstate(divide="ignore", invalid="ignore"):
                grad_b = -g * np.floor_divide(a, b)
        return ctx.needed(g, grad_b)


@register("neg")
class Neg(Op):
    """y = -x; grad_x = -g."""

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def vjp(ctx, g):
        return (np.negative(g, out=ctx.reuse(g)),)


@register("pow")
class Pow(Op):
    """y = x**p for a Python-number exponent p; grad_x = g*p*x**(p-1). Domain: x > 0 unless p is
    an integer. For p = 0, y = x**0 = 1 everywhere and grad_x = 0 (also at x = 0)."""

    @staticmethod
    def forward(ctx, x, exponent):
        ctx.save(x)
        ctx.exponent = exponent
        with np.errstate(divide="ignore", invalid="ignore"):  # 0**-1 = inf, (-1)**0.5 = nan
            return x**exponent

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        p = ctx.exponent
        if p == 0.0:  # p * x**(p-1) would be 0 * inf = nan at x = 0
            return (np.zeros_like(g),)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g * p * x ** (p - 1.0),)


def _integer_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a**b on integers as torch: a negative exponent gives 1 for a = 1, +-1 for a = -1 and
    0 otherwise (the quotient truncated), where NumPy raises."""
    y = np.power(a, np.maximum(b, 0))
    negative = b < 0
    if negative.any():
        odd = (b % 2).astype(bool)
        y = np.where(negative, np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)), y)
    return y.astype(np.result_type(a, b), copy=False)


@register("power")
class Power(Op):
    """y = a**b for a tensor exponent b (broadcasting); as in torch:
    grad_a = g*b*a**(b-1), 0 where b = 0; grad_b = g*y*log(a), 0 where a = 0 and b >= 0.
    Domain: a > 0 for real b; a < 0 with a non-integer b gives nan (and a nan grad_b)."""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype == np.bool_ and b.dtype == np.bool_:
            raise TypeError("power: not defined on two bool tensors (as torch): cast them first")
        if b.dtype.kind in "iu" and a.dtype.kind in "iu":
            return _integer_power(a, b)  # not differentiable: nothing to save
        with np.errstate(all="ignore"):  # nan/inf results are values here, as in torch
            y = np.power(a, b)
        ctx.save(a, b, y if ctx.needs_grad[1] else None)  # y: grad_b's only
        return y

    @staticmethod
    def vjp(ctx, g):
        a, b, y = ctx.saved
        needs = ctx.needs_grad
        with np.errstate(all="ignore"):
            grad_a = np.where(b == 0, 0.0, g * (b * np.power(a, b - 1.0))) if needs[0] else None
            grad_b = np.where((a == 0) & (b >= 0), 0.0, g * (y * np.log(a))) if needs[1] else None
        return grad_a, grad_b


def _bitwise(name: str, fn, doc: str) -> type[Op]:
    """A non-differentiable bitwise op on bool or integer arrays (logical for bools)."""

    class Bitwise(Op):
        differentiable = False
        __doc__ = f"y = {doc} (bool or integer inputs); not differentiable."

        @staticmethod
        def forward(ctx, *arrays):
            if any(a.dtype.kind not in "biu" for a in arrays):
                raise TypeError(f"{name}: needs bool or integer tensors, got "
                                f"{', '.join(str(a.dtype) for a in arrays)}")
            return fn(*arrays)

    Bitwise.__name__ = Bitwise.__qualname__ = f"Bitwise_{name}"
    return register(name)(Bitwise)


for _name, _fn, _doc in [("bitwise_not", np.invert, "~x"), ("bitwise_and", np.bitwise_and, "a & b"),
                         ("bitwise_or", np.bitwise_or, "a | b"),
                         ("bitwise_xor", np.bitwise_xor, "a ^ b")]:
    _bitwise(_name, _fn, _doc)


def _comparison(name: str, fn) -> type[Op]:
    """A non-differentiable elementwise comparison returning a bool tensor."""

    class Compare(Op):
        differentiable = False
        __doc__ = f"y = {fn.__name__}(a, b) as bool; not differentiable."

        @staticmethod
        def forward(ctx, a, b):
            return fn(a, b)

    Compare.__name__ = Compare.__qualname__ = f"Compare_{name}"
    return register(name)(Compare)


for _name, _fn in [("less", np.less), ("less_equal", np.less_equal), ("greater", np.greater),
                   ("greater_equal", np.greater_equal), ("equal", np.equal),
                   ("not_equal", np.not_equal)]:
    _comparison(_name, _fn)
