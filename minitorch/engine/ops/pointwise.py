"""Pointwise primitives of one tensor: exp, log, sqrt, the trigonometric and activation
functions, the step functions (sign, floor, ...), dtype casts, lerp, and the finiteness tests.

Constants are Python floats, never NumPy scalars, so float32 inputs stay float32.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels as K
from ..pool import empty
from ..registry import Op, register
from .arithmetic import IntegerDivisionByZero


@register("exp")
class Exp(Op):
    """y = exp(x); grad_x = g*y."""

    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        return (np.multiply(g, y, out=ctx.reuse(g)),)


@register("log")
class Log(Op):
    """y = log(x); grad_x = g/x. Domain: x > 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        return np.log(x)

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        return (np.divide(g, x, out=ctx.reuse(g)),)


@register("sqrt")
class Sqrt(Op):
    """y = sqrt(x); grad_x = g/(2y). Domain: x >= 0; at x = 0 the gradient is inf."""

    @staticmethod
    def forward(ctx, x):
        y = np.sqrt(x)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        grad_x = np.multiply(g, 0.5, out=ctx.reuse(g))
        grad_x /= y
        return (grad_x,)


@register("log1p")
class Log1p(Op):
    """y = log(1 + x), computed by np.log1p (accurate near x = 0); grad_x = g/(1 + x). Domain:
    x > -1; at x = -1: y = -inf, grad_x = inf."""

    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        with np.errstate(divide="ignore", invalid="ignore"):  # -1 -> -inf, x < -1 -> nan
            return np.log1p(x)

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore"):
            return (np.divide(g, 1.0 + x, out=ctx.reuse(g)),)


@register("expm1")
class Expm1(Op):
    """y = exp(x) - 1, computed by np.expm1 (accurate near x = 0); grad_x = g*(y + 1), from the
    output as torch's (x itself is not kept)."""

    @staticmethod
    def forward(ctx, x):
        with np.errstate(over="ignore"):
            y = np.expm1(x)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        return (np.multiply(g, y + 1.0, out=ctx.reuse(g)),)


def _log_base(base: int, fn) -> type[Op]:
    """log2 and log10: y = log_base(x); grad_x = g/(x ln base). Domain: x > 0."""

    class LogBase(Op):
        __doc__ = f"y = log{base}(x); grad_x = g/(x ln {base}). Domain: x > 0."

        @staticmethod
        def forward(ctx, x):
            ctx.save(x)
            with np.errstate(divide="ignore", invalid="ignore"):  # 0 -> -inf, x < 0 -> nan
                return fn(x)

        @staticmethod
        def vjp(ctx, g):
            (x,) = ctx.saved
            with np.errstate(divide="ignore"):
                return (np.divide(g, x * math.log(base), out=ctx.reuse(g)),)

    LogBase.__name__ = LogBase.__qualname__ = f"Log{base}"
    return register(f"log{base}")(LogBase)


for _base, _fn in ((2, np.log2), (10, np.log10)):
    _log_base(_base, _fn)


def _sign(x: np.ndarray) -> np.ndarray:
    """torch's sign: (x > 0) - (x < 0), so sign(-0.0) = +0 and sign(nan) = 0; bools stay."""
    if x.dtype == np.bool_:
        return x.copy()
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _step(name: str, fn, doc: str) -> type[Op]:
    """A piecewise-constant op: integer inputs are returned unchanged (as torch), bools refused
    by all but sign (as torch), and the gradient is zeros, not None, as torch's."""

    class Step(Op):
        __doc__ = (f"y = {doc}; grad_x = 0 everywhere, also at the jumps (piecewise constant; "
                   "torch's zeros). Integer inputs are returned unchanged.")

        @staticmethod
        def forward(ctx, x):
            if x.dtype == np.bool_ and name != "sign":
                raise TypeError(f"{name}: not defined on bool tensors (as torch): cast first")
            return fn(x) if x.dtype.kind == "f" or name == "sign" else x.copy()

        @staticmethod
        def vjp(ctx, g):
            return (np.zeros_like(g),)

    Step.__name__ = Step.__qualname__ = f"Step_{name}"
    return register(name)(Step)


for _name, _fn, _doc in [("floor", np.floor, "floor(x), the largest integer <= x"),
                         ("ceil", np.ceil, "ceil(x), the smallest integer >= x"),
                         ("round", np.round, "x rounded to the nearest integer, half to even"),
                         ("trunc", np.trunc, "trunc(x), rounded toward 0"),
                         ("sign", _sign, "sign(x) in {-1, 0, 1}; sign(0) = 0 and sign(nan) = 0")]:
    _step(_name, _fn, _doc)


@register("round_decimals")
class RoundDecimals(Op):
    """y = rint(x * 10**d) / 10**d for d > 0 and rint(x / 10**-d) * 10**-d for d < 0, half to
    even, in x's dtype with 10**|d| rounded to it (torch's kernel, so float32 rounds as torch's);
    grad_x = 0 everywhere, also at the jumps (piecewise constant; torch's zeros). Integer inputs
    are refused, as torch."""

    @staticmethod
    def forward(ctx, x, decimals):
        if x.dtype.kind != "f":
            raise TypeError(f"round: decimals={decimals} is not defined on {x.dtype} tensors "
                            "(as torch): cast to a floating dtype first")
        ten = np.asarray(10.0 ** abs(decimals), dtype=x.dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # inf * 10**d stays inf
            if decimals < 0:
                return np.rint(x / ten) * ten
            return np.rint(x * ten) / ten

    @staticmethod
    def vjp(ctx, g):
        return (np.zeros_like(g),)


@register("reciprocal")
class Reciprocal(Op):
    """y = 1/x; grad_x = -g*y^2, from the output as torch's (x itself is not kept). Domain:
    x != 0; at x = 0: y = inf, grad_x = -inf."""

    @staticmethod
    def forward(ctx, x):
        with np.errstate(divide="ignore"):  # 1/0 = inf, as torch
            y = np.reciprocal(x)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        grad_x = np.multiply(y, y, out=empty(y.shape, y.dtype))
        grad_x *= g
        return (np.negative(grad_x, out=grad_x),)


@register("rsqrt")
class Rsqrt(Op):
    """y = 1/sqrt(x); grad_x = -g*y^3/2, from the output as torch's. Domain: x > 0; at
    x = 0: y = inf, grad_x = -inf."""

    @staticmethod
    def forward(ctx, x):
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 -> inf, x < 0 -> nan
            y = np.reciprocal(np.sqrt(x))
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        cube = np.multiply(y, y, out=empty(y.shape, y.dtype))
        cube *= y
        grad_x = np.multiply(g, -0.5, out=ctx.reuse(g))
        grad_x *= cube
        return (grad_x,)


@register("sin")
class Sin(Op):
    """y = sin(x); grad_x = g*cos(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        return np.sin(x)

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        return (np.multiply(g, np.cos(x), out=ctx.reuse(g)),)


@register("cos")
class Cos(Op):
    """y = cos(x); grad_x = -g*sin(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        return np.cos(x)

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        grad_x = np.negative(g, out=ctx.reuse(g))
        grad_x *= np.sin(x)
        return (grad_x,)


@register("tanh")
class Tanh(Op):
    """y = tanh(x); grad_x = g*(1 - y**2)."""

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        return (np.multiply(g, 1.0 - y * y, out=ctx.reuse(g)),)


@register("sigmoid")
class Sigmoid(Op):
    """y = 1/(1+exp(-x)), as torch computes it; grad_x = g*y*(1-y). Far below 0, exp(-x)
    overflows to inf and y is 0 (as in torch), without a warning. Not (1+tanh(x/2))/2: that
    cancels for x << 0 (float32: 0 at x = -20, where torch gives 2.1e-9)."""

    @staticmethod
    def forward(ctx, x):
        y = np.multiply(x, -1.0, out=empty(np.shape(x), np.result_type(x, 1.0)))  # bools too
        with np.errstate(over="ignore"):
            np.exp(y, out=y)
        y += 1.0
        np.reciprocal(y, out=y)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        grad_x = np.multiply(g, y, out=ctx.reuse(g))
        grad_x *= 1.0 - y
        return (grad_x,)


@register("relu")
class Relu(Op):
    """y = max(x, 0); grad_x = g where y > 0, else 0 (kink: relu'(0) = 0). Saves the output,
    which the next op usually saves too, so no second activation-sized array is kept."""

    @staticmethod
    def forward(ctx, x):
        y = K.relu(x)
        ctx.save(y)
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        # g * (y > 0), ~10x faster than np.where; over g when the engine allows it
        grad = K.relu_grad(g, y, out=ctx.reuse(g))
        if np.isnan(grad.sum()):  # an inf upstream where y = 0: select, as torch (0, not nan)
            grad = np.where(y > 0, grad, 0.0)  # where y > 0, grad is still g
        return (grad,)


@register("abs")
class Abs(Op):
    """y = |x|; grad_x = g*sign(x) (kink: |x|'(0) = 0)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        return np.abs(x)

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        return (g * np.sign(x),)


@register("gelu")
class Gelu(Op):
    """approximate='none' (exact, torch's default): y = x*Phi(x), Phi(x) = (1 + erf(x/sqrt 2))/2;
    grad_x = g*(Phi(x) + x*exp(-x^2/2)/sqrt(2 pi)).
    approximate='tanh': y = x/2 * (1 + tanh(u)), u = c*(x + 0.044715 x^3), c = sqrt(2/pi);
    grad_x = g * (0.5*(1+t) + 0.5*x*(1-t^2)*c*(1 + 3*0.044715 x^2)), t = tanh(u); in
    s = (1 + t)/2, which kernels.gelu keeps: g * s * (1 + 2x (1-s) c (1 + 3*0.044715 x^2))."""

    @staticmethod
    def forward(ctx, x, approximate="none"):
        y, aux = K.gelu(x, approximate)  # aux: Phi(x), or s = (1 + tanh(u))/2
        ctx.save(x, aux)
        ctx.approximate = approximate
        return y

    @staticmethod
    def vjp(ctx, g):
        x, s = ctx.saved
        if ctx.approximate == "none":  # s is Phi(x)
            pdf = np.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
            slope = s + x * pdf
        else:  # s + s (1 - s) x 2du, 2du = 2c (1 + 3*0.044715 x^2); in two arrays. s (1 - s)
            # first: where s = 0 (x << 0) the product stays 0 (torch's +0), while x 2du overflows
            du = np.multiply(x, x, out=empty(x.shape, np.result_type(x, s)))
            du *= 2.0 * 3.0 * 0.044715 * K.GELU_C
            du += 2.0 * K.GELU_C
            slope = np.subtract(1.0, s, out=empty(du.shape, du.dtype))
            slope *= s
            slope *= x
            slope *= du
            slope += s
        return (np.multiply(g, slope, out=ctx.reuse(g)),)


@register("astype")
class AsType(Op):
    """y = x cast to `dtype`; grad_x = g cast back to x's dtype."""

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def vjp(ctx, g):
        return (g.astype(ctx.in_dtype),)


@register("lerp")
class Lerp(Op):
    """y = a + w*(b - a) (all three broadcast), as torch: for |w| < 0.5 a + w*(b - a), else
    b - (b - a)*(1 - w) (float32 in float64, as torch's fused multiply-add rounds once);
    grad_a = g*(1 - w), grad_b = g*w, grad_w = g*(b - a). w is kept only for a's and b's
    gradients, a and b only for w's."""

    @staticmethod
    def forward(ctx, a, b, w):
        needs = ctx.needs_grad
        ctx.save(a if needs[2] else None, b if needs[2] else None,
                 w if needs[0] or needs[1] else None)
        out = np.result_type(a, b, w)
        wide = np.promote_types(out, np.float64)
        diff = np.subtract(b, a, dtype=out)
        small = np.abs(w) < 0.5
        coeff = np.where(small, w, w - np.asarray(1.0, w.dtype)).astype(out, copy=False)
        base = np.where(small, a, b)
        return (coeff.astype(wide) * diff.astype(wide) + base.astype(wide)).astype(out)

    @staticmethod
    def vjp(ctx, g):
        a, b, w = ctx.saved
        needs = ctx.needs_grad
        grad_a = g * (1.0 - w) if needs[0] else None
        grad_b = g * w if needs[1] else None
        grad_w = g * (b - a) if needs[2] else None
        return grad_a, grad_b, grad_w


@register("isfinite")
class IsFinite(Op):
    """y = isfinite(x) as bool (neither nan nor +-inf); not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x):
        return np.isfinite(x)


@register("isnan")
class IsNan(Op):
    """y = isnan(x) as bool (False for integer and bool inputs); not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x):
        return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_)


@register("isinf")
class IsInf(Op):
    """y = isinf(x) as bool (+-inf; False for integer and bool inputs); not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x):
        return np.isinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_)


@register("nan_to_num")
class NanToNum(Op):
    """y = x with nan -> nan, +inf -> posinf, -inf -> neginf (None: the dtype's largest and
    smallest finite values); integer and bool inputs unchanged; grad_x = g where x is finite,
    else 0 (as torch)."""

    @staticmethod
    def forward(ctx, x, nan=0.0, posinf=None, neginf=None):
        if x.dtype.kind != "f":
            return x.copy()
        ctx.save(x)
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def vjp(ctx, g):
        (x,) = ctx.saved
        return (np.where(np.isfinite(x), g, 0.0).astype(g.dtype, copy=False),)


def _smooth(name: str, fn, slope, doc: str) -> type[Op]:
    """A smooth unary op y = fn(x) whose gradient is g * slope(x, y) (the trigonometric and
    hyperbolic functions, erf, exp2). Outside the domain fn gives nan without a warning."""

    class Smooth(Op):
        __doc__ = doc

        @staticmethod
        def forward(ctx, x):
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                y = fn(x)
            ctx.save(x, y)
            return y

        @staticmethod
        def vjp(ctx, g):
            x, y = ctx.saved
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                return (np.multiply(g, slope(x, y), out=ctx.reuse(g)),)

    Smooth.__name__ = Smooth.__qualname__ = f"Smooth_{name}"
    return register(name)(Smooth)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
for _name, _fn, _slope, _doc in [
    ("tan", np.tan, lambda x, y: 1.0 + y * y, "y = tan(x); grad_x = g*(1 + y^2)."),
    ("arcsin", np.arcsin, lambda x, y: 1.0 / np.sqrt(1.0 - x * x),
     "y = asin(x); grad_x = g/sqrt(1 - x^2). Domain: |x| <= 1 (nan outside); inf at +-1."),
    ("arccos", np.arccos, lambda x, y: -1.0 / np.sqrt(1.0 - x * x),
     "y = acos(x); grad_x = -g/sqrt(1 - x^2). Domain: |x| <= 1 (nan outside); -inf at +-1."),
    ("arctan", np.arctan, lambda x, y: 1.0 / (1.0 + x * x), "y = atan(x); grad_x = g/(1 + x^2)."),
    ("sinh", np.sinh, lambda x, y: np.cosh(x), "y = sinh(x); grad_x = g*cosh(x)."),
    ("cosh", np.cosh, lambda x, y: np.sinh(x), "y = cosh(x); grad_x = g*sinh(x)."),
    ("arcsinh", np.arcsinh, lambda x, y: 1.0 / np.sqrt(x * x + 1.0),
     "y = asinh(x); grad_x = g/sqrt(x^2 + 1)."),
    ("arccosh", np.arccosh, lambda x, y: 1.0 / np.sqrt(x * x - 1.0),
     "y = acosh(x); grad_x = g/sqrt(x^2 - 1). Domain: x >= 1 (nan below); inf at 1."),
    ("arctanh", np.arctanh, lambda x, y: 1.0 / (1.0 - x * x),
     "y = atanh(x); grad_x = g/(1 - x^2). Domain: |x| <= 1 (nan outside); +-inf at +-1."),
    ("erf", lambda x: K.erf(x).astype(x.dtype, copy=False),
     lambda x, y: _TWO_OVER_SQRT_PI * np.exp(-x * x),
     "y = erf(x) (kernels.erf, as exact GELU uses); grad_x = g*2/sqrt(pi)*exp(-x^2)."),
    ("exp2", np.exp2, lambda x, y: y * math.log(2.0), "y = 2^x; grad_x = g*y*ln 2."),
]:
    _smooth(_name, _fn, _slope, _doc)


@register("arctan2")
class Arctan2(Op):
    """y = atan2(a, b), the angle of (b, a) in [-pi, pi]; grad_a = g*b/(a^2 + b^2),
    grad_b = -g*a/(a^2 + b^2) (both nan at a = b = 0, as torch's)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a, b)
        return np.arctan2(a, b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = g / (a * a + b * b)
        needs = ctx.needs_grad
        return scale * b if needs[0] else None, -scale * a if needs[1] else None


@register("copysign")
class Copysign(Op):
    """y = |a| with the sign of b (sign bit: -0.0 counts as negative); grad_a = g*y/a, 0 at
    a = 0 (torch's), grad_b = 0."""

    @staticmethod
    def forward(ctx, a, b):
        y = np.copysign(a, b)
        ctx.save(a, y)
        return y

    @staticmethod
    def vjp(ctx, g):
        a, y = ctx.saved
        if not ctx.needs_grad[0]:
            return None, np.zeros_like(g)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(a == 0, 0.0, y / a).astype(y.dtype, copy=False)
        return g * ratio, np.zeros_like(g) if ctx.needs_grad[1] else None


@register("logaddexp")
class Logaddexp(Op):
    """y = log(exp(a) + exp(b)), without overflow; grad_a = g/(1 + exp(b - a)),
    grad_b = g/(1 + exp(a - b)) (torch's; both g/2 at a = b = +-inf is nan, as torch's)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a, b)
        return np.logaddexp(a, b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.saved
        needs = ctx.needs_grad
        with np.errstate(invalid="ignore", over="ignore"):
            grad_a = g / (1.0 + np.exp(b - a)) if needs[0] else None
            grad_b = g / (1.0 + np.exp(a - b)) if needs[1] else None
        return grad_a, grad_b


@register("fmod")
class Fmod(Op):
    """y = a - trunc(a/b)*b, the C remainder (the sign of a); grad_a = g, grad_b =
    -g*trunc(a/b) (torch's). Integer division by zero is refused (torch raises)."""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype.kind in "iub" and b.dtype.kind in "iub" and not np.all(b):
            raise IntegerDivisionByZero("fmod: integer division by zero (as torch)")
        ctx.save(a, b)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.fmod(a, b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.saved
        if not ctx.needs_grad[1]:
            return g, None
        with np.errstate(invalid="ignore", divide="ignore"):
            return g if ctx.needs_grad[0] else None, -g * np.trunc(a / b)
