"""Specs of the pointwise ops (engine/ops/pointwise.py)."""

from __future__ import annotations

import math

import numpy as np

from .core import (
    BIG,
    MARGIN,
    SHAPES,
    Kink,
    Sample,
    _tdtype,
    _tt,
    away0,
    binary,
    positive,
    real,
    sid,
    spec,
    unary,
)
from .references import np_gelu

spec("exp", unary(real), np.exp, "reals", torch=_tt("exp"))
spec("log", unary(positive), np.log, "x in [0.2, 2]", torch=_tt("log"))
spec("sqrt", unary(positive), np.sqrt, "x in [0.2, 2]", torch=_tt("sqrt"),
     kinks=(Kink("sqrt'(0) = inf", (np.array([0.0, 4.0]),), (np.array([np.inf, 0.25]),),
                 doc="at x = 0 the gradient is inf"),))
spec("reciprocal", unary(away0), np.reciprocal, f"|x| >= {MARGIN}", torch=_tt("reciprocal"),
     kinks=(Kink("1/x at 0 is inf, its gradient -inf", (np.array([0.0, 2.0]),),
                 (np.array([-np.inf, -0.25]),), doc="at x = 0: y = inf, grad_x = -inf"),))
spec("rsqrt", unary(positive), lambda x: 1.0 / np.sqrt(x), "x in [0.2, 2]", torch=_tt("rsqrt"),
     kinks=(Kink("rsqrt at 0 is inf, its gradient -inf", (np.array([0.0, 4.0]),),
                 (np.array([-np.inf, -1 / 16]),), doc="at x = 0: y = inf, grad_x = -inf"),))
spec("sin", unary(real), np.sin, "reals", torch=_tt("sin"))
spec("isfinite", unary(lambda rng, shape: np.where(rng.random(shape) < 0.3, np.inf, 1.0)
                       * real(rng, shape)), np.isfinite, "reals, about 30 % of them +-inf",
     torch=_tt("isfinite"), differentiable=False, out_dtype=lambda s: np.bool_)
spec("cos", unary(real), np.cos, "reals", torch=_tt("cos"))
spec("tanh", unary(real), np.tanh, "reals", torch=_tt("tanh"))
spec("sigmoid", unary(real), lambda x: np.exp(-np.logaddexp(0.0, -x)), "reals",
     torch=_tt("sigmoid"))
spec("relu", unary(away0), lambda x: np.where(x > 0, x, 0.0), f"|x| >= {MARGIN} (kink at 0)",
     torch=_tt("relu"),
     kinks=(Kink("relu'(0) = 0", (np.array([-1.0, 0.0, 1.0]),), (np.array([0.0, 0.0, 1.0]),),
                 doc="relu'(0) = 0"),))
spec("abs", unary(away0), np.abs, f"|x| >= {MARGIN} (kink at 0)", torch=_tt("abs"),
     kinks=(Kink("|x|'(0) = 0", (np.array([-2.0, 0.0, 3.0]),), (np.array([-1.0, 0.0, 1.0]),),
                 doc="|x|'(0) = 0"),))
def _gelu_samples(rng):
    out = []
    for mode in ("none", "tanh"):
        out += [Sample(f"{s.id},{mode}", s.inputs, s.attrs)
                for s in unary(real, {"approximate": mode})(rng)]
    return out


spec("gelu", _gelu_samples, np_gelu, "reals; exact (erf) and tanh-approximated",
     torch=lambda x, approximate: __import__("torch").nn.functional.gelu(
         x, approximate=approximate))


def _astype_samples(rng):
    # In float64 the cast is exact (to float64), so finite differences apply; the float32 dtype
    # check then casts float32 -> float64 and requires a float32 gradient.
    return [Sample(f"{sid(s)},to=float64", (real(rng, s),), {"dtype": np.dtype(np.float64)})
            for s in [(), (3,), (2, 3)]] + [
        Sample("(3,2).T,to=float64", (real(rng, (3, 2)).T,), {"dtype": np.dtype(np.float64)})]


spec("astype", _astype_samples, lambda x, dtype: x.astype(dtype), "reals",
     torch=lambda x, dtype: x.to(_tdtype(dtype)), out_dtype=lambda s: s.attrs["dtype"])


def _off_jumps(rng, shape):
    """n + f with f in [0.1, 0.4] or [0.6, 0.9], |n| <= 3: >= 0.1 from every integer and
    half-integer, where floor, ceil, trunc and round jump."""
    f = rng.uniform(0.1, 0.4, shape) + 0.5 * (rng.random(shape) < 0.5)
    return rng.integers(-3, 3, shape) + f


_STEP_DOC = "grad_x = 0 everywhere, also at the jumps"
_INTS = [-1.0, 0.0, 2.0]
for _n, _f, _jumps in [("floor", np.floor, _INTS), ("ceil", np.ceil, _INTS),
                       ("trunc", np.trunc, _INTS), ("round", np.round, [-0.5, 0.5, 2.5])]:
    spec(_n, unary(_off_jumps), _f, "n + f, >= 0.1 from every integer and half-integer (jumps)",
         torch=_tt(_n), kinks=(Kink(f"{_n}' = 0 at its jumps", (np.array(_jumps),),
                                    (np.zeros(3),), doc=_STEP_DOC),))


def _round_decimals_samples(rng):
    """Values >= 0.1 (in units of 10**-d) from every jump of round(x, decimals=d)."""
    out = []
    for d in (2, -1, 3):
        for s in unary(_off_jumps)(rng):
            out.append(Sample(f"{s.id},decimals={d}", (s.inputs[0] / 10.0**d,), {"decimals": d}))
    return out


def _np_round_decimals(x, decimals):
    ten = 10.0 ** abs(decimals)
    return np.rint(x / ten) * ten if decimals < 0 else np.rint(x * ten) / ten


spec("round_decimals", _round_decimals_samples, _np_round_decimals,
     "x * 10**d = n + f, >= 0.1 from every integer and half-integer (jumps)",
     torch=lambda x, decimals: x.round(decimals=decimals),
     kinks=(Kink("round(decimals=2)' = 0 at its jumps", (np.array([-0.005, 0.015, 0.025]),),
                 (np.zeros(3),), doc=_STEP_DOC, attrs={"decimals": 2}),))
spec("sign", unary(away0), np.sign, f"|x| >= {MARGIN} (jump at 0)", torch=_tt("sign"),
     kinks=(Kink("sign'(0) = 0", (np.array([-2.0, 0.0, 3.0]),), (np.zeros(3),), doc=_STEP_DOC),))


def _above_minus_one(rng, shape):
    return rng.uniform(-0.8, 2.0, shape)


spec("log1p", unary(_above_minus_one), np.log1p, "x in [-0.8, 2]", torch=_tt("log1p"),
     kinks=(Kink("log1p at -1 is -inf, its gradient inf", (np.array([-1.0, 1.0]),),
                 (np.array([np.inf, 0.5]),), doc="at x = -1: y = -inf, grad_x = inf"),))
spec("expm1", unary(real), np.expm1, "reals", torch=_tt("expm1"))
spec("log2", unary(positive), np.log2, "x in [0.2, 2]", torch=_tt("log2"))
spec("log10", unary(positive), np.log10, "x in [0.2, 2]", torch=_tt("log10"))


def _with_nonfinite(rng, shape):
    """Reals with about 20 % nan, 20 % +-inf."""
    u = rng.random(shape)
    return np.where(u < 0.2, np.nan, np.where(u < 0.4, np.inf, 1.0)) * real(rng, shape)


for _n in ("isnan", "isinf"):
    spec(_n, unary(_with_nonfinite), getattr(np, _n), "reals, about 20 % nan and 20 % +-inf",
         torch=_tt(_n), differentiable=False, out_dtype=lambda s: np.bool_)


def _nan_to_num_samples(rng):
    out = unary(real, {"nan": 0.0, "posinf": None, "neginf": None})(rng)
    out.append(Sample("(2,3),nan=1.5,posinf=4.0,neginf=-4.0", (real(rng, (2, 3)),),
                      {"nan": 1.5, "posinf": 4.0, "neginf": -4.0}))
    return out


spec("nan_to_num", _nan_to_num_samples,
     lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
     "finite reals (finite differences need them); nan and +-inf at the kink",
     torch=lambda x, nan, posinf, neginf: x.nan_to_num(nan, posinf, neginf),
     kinks=(Kink("nan and +-inf replaced, gradient 0 there",
                 (np.array([np.nan, np.inf, -np.inf, 1.0]),), (np.array([0.0, 0.0, 0.0, 1.0]),),
                 doc="grad_x = g where x is finite, else 0",
                 attrs={"nan": 0.0, "posinf": None, "neginf": None}),))


def _lerp_samples(rng):
    def w(shape):  # both of torch's branches: |w| < 0.5 and |w| >= 0.5
        return rng.uniform(-1.0, 1.5, shape)

    out = [Sample(sid(s, s, s), (real(rng, s), real(rng, s), w(s))) for s in SHAPES]
    out.append(Sample("(3,2).Tx(2,3)x()", (real(rng, (3, 2)).T, real(rng, (2, 3)), w(()))))
    out += [Sample(sid(sa, sb, sw), (real(rng, sa), real(rng, sb), w(sw)))
            for sa, sb, sw in [((3, 1), (1, 4), ()), ((2, 3, 4), (4,), (3, 1)),
                               ((), (2, 3), (3,)), (BIG, BIG[-1:], BIG[-2:])]]
    return out


spec("lerp", _lerp_samples, lambda a, b, w: a + w * (b - a),
     "reals; weights in [-1, 1.5] (both of torch's branches), all three broadcast",
     torch=_tt("lerp"))


def _uniform(lo: float, hi: float):
    def draw(rng, shape):
        return rng.uniform(lo, hi, shape)

    return draw


# The inverse functions' edges (|x| = 1 for asin, acos, atanh; x = 1 for acosh) stay >= 0.1 away.
for _n, _torch, _draw, _domain in [
        ("tan", "tan", _uniform(-1.2, 1.2), "x in [-1.2, 1.2] (poles at +-pi/2)"),
        ("arcsin", "asin", _uniform(-0.9, 0.9), "x in [-0.9, 0.9]"),
        ("arccos", "acos", _uniform(-0.9, 0.9), "x in [-0.9, 0.9]"),
        ("arctan", "atan", real, "reals"), ("sinh", "sinh", real, "reals"),
        ("cosh", "cosh", real, "reals"), ("arcsinh", "asinh", real, "reals"),
        ("arccosh", "acosh", _uniform(1.1, 3.0), "x in [1.1, 3]"),
        ("arctanh", "atanh", _uniform(-0.9, 0.9), "x in [-0.9, 0.9]"),
        ("erf", "erf", real, "reals"), ("exp2", "exp2", real, "reals")]:
    _ref = {"erf": np.vectorize(math.erf, otypes=[float])}.get(_n, getattr(np, _n, None))
    spec(_n, unary(_draw), _ref, _domain, torch=_tt(_torch))


def _quotient_safe(rng, shape):
    """|b| in {0.5, 2}: over _off_jumps dividends a/b stays >= 0.05 from an integer (trunc's
    jumps, where fmod's gradient w.r.t. b jumps)."""
    return rng.choice([-2.0, -0.5, 0.5, 2.0], shape)


spec("arctan2", binary(real, real), np.arctan2, "reals", torch=_tt("atan2"), binary=True)
spec("copysign", binary(away0, away0), np.copysign, f"|a|, |b| >= {MARGIN} (kink at a = 0)",
     torch=_tt("copysign"), binary=True,
     kinks=(Kink("copysign'(a = 0) = 0", (np.array([0.0, 2.0, -3.0]), np.array([1.0, -1.0, 1.0])),
                 (np.array([0.0, -1.0, -1.0]), np.zeros(3)), doc="0 at a = 0"),))
spec("logaddexp", binary(real, real), np.logaddexp, "reals", torch=_tt("logaddexp"),
     binary=True)
spec("fmod", binary(_off_jumps, _quotient_safe), np.fmod,
     "a = n + f (>= 0.1 from integers and half-integers), |b| in {0.5, 2}: a/b off trunc's jumps",
     torch=_tt("fmod"), binary=True)
