"""Specs of the arithmetic ops (engine/ops/arithmetic.py): + - * / // %, powers, bitwise,
comparisons."""

from __future__ import annotations

import math

import numpy as np

from .core import (
    BIG,
    MARGIN,
    Kink,
    Sample,
    _tt,
    away0,
    binary,
    positive,
    real,
    sid,
    small_ints,
    spec,
    unary,
)

spec("add", binary(real, real), np.add, "reals", torch=_tt("add"), binary=True)
spec("sub", binary(real, real), np.subtract, "reals", torch=_tt("sub"), binary=True)
spec("mul", binary(real, real), np.multiply, "reals", torch=_tt("mul"), binary=True)
spec("div", binary(real, away0), np.divide, f"a real, |b| >= {MARGIN}", torch=_tt("div"),
     binary=True)
for _n, _f in [("less", np.less), ("less_equal", np.less_equal), ("greater", np.greater),
               ("greater_equal", np.greater_equal), ("equal", np.equal),
               ("not_equal", np.not_equal)]:
    spec(_n, binary(small_ints, small_ints), _f, "{-1, 0, 1} (ties on purpose)",
         torch=_tt({"less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
                    "equal": "eq", "not_equal": "ne"}[_n]),
         differentiable=False, binary=True, out_dtype=lambda s: np.bool_)

spec("neg", unary(real), np.negative, "reals", torch=_tt("neg"))

def _off_integer(rng, shape):
    """n + f with f in [0.3, 0.7], |n| <= 3: over _near_one divisors a/b stays >= 0.09 from an
    integer (where floor and remainder jump)."""
    return rng.integers(-3, 3, shape) + rng.uniform(0.3, 0.7, shape)


def _near_one(rng, shape):
    return rng.uniform(1.0, 1.1, shape) * rng.choice([-1.0, 1.0], shape)


_JUMPS = "a = n + f (f in [0.3, 0.7]), |b| in [1, 1.1]: a/b >= 0.09 from an integer (a jump)"
spec("floor_divide", binary(_off_integer, _near_one), np.floor_divide, _JUMPS,
     torch=_tt("floor_divide"), differentiable=False, binary=True)
spec("remainder", binary(_off_integer, _near_one), np.remainder, _JUMPS, torch=_tt("remainder"),
     binary=True)


def _bools(rng, shape):
    return rng.random(shape) < 0.5


spec("bitwise_not", unary(_bools), np.invert, "bools", torch=_tt("bitwise_not"),
     differentiable=False, out_dtype=lambda s: np.bool_)
for _n, _f in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
               ("bitwise_xor", np.bitwise_xor)]:
    spec(_n, binary(_bools, _bools), _f, "bools", torch=_tt(_n), differentiable=False,
         binary=True, out_dtype=lambda s: np.bool_)


def _power_samples(rng):
    return binary(positive, real)(rng) + [
        Sample("(3,)x(3,),a<0,int b", (-positive(rng, (3,)), np.array([2.0, 3.0, -1.0])),
               const=frozenset({1}))]  # d/db is nan for a < 0 (log a), as in torch


spec("power", _power_samples, np.power,
     "a in [0.2, 2] with real b, or a < 0 with integer b (torch gives nan otherwise)",
     torch=_tt("pow"), binary=True,
     kinks=(Kink("d/db a**b = 0 at a = 0, b >= 0; d/da a**0 = 0",
                 (np.array([0.0, 0.0, 2.0]), np.array([0.0, 2.0, 0.0])),
                 (np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, math.log(2.0)])),
                 doc="0 where a = 0 and b >= 0"),))


def _pow_samples(rng):
    out = []
    for p, draw in [(2.0, real), (3.0, real), (0.5, positive), (-1.5, positive), (1.0, real)]:
        out += [Sample(f"{sid(s)},p={p}", (draw(rng, s),), {"exponent": p})
                for s in [(), (3,), (2, 3)]]
    out.append(Sample("(3,2).T,p=2.0", (real(rng, (3, 2)).T,), {"exponent": 2.0}))
    out.append(Sample("(2,3,4),p=-1.0", (positive(rng, (2, 3, 4)),), {"exponent": -1.0}))
    out.append(Sample("(4,5,6),p=3.0", (real(rng, BIG),), {"exponent": 3.0}))
    return out


spec("pow", _pow_samples, lambda x, exponent: np.power(x, exponent),
     "reals for integer p, x in [0.2, 2] otherwise",
     torch=lambda x, exponent: x**exponent,
     kinks=(Kink("d/dx x**0 = 0 at x = 0", (np.array([0.0, 2.0]),), (np.zeros(2),),
                 doc="x**0", attrs={"exponent": 0.0}),
            Kink("d/dx x**2 = 0 at x = 0", (np.array([0.0, -1.0]),), (np.array([0.0, -2.0]),),
                 doc="grad_x = g*p*x**(p-1)", attrs={"exponent": 2.0})))
