"""kernels.erf, the vectorized error function behind exact GELU, against the C library's erf
(math.erf) element by element: within 2 ulp (np.spacing of the reference) on dense grids of tiny,
[-7, 7] (every internal boundary approached from both sides) and huge |x|; exact at +-0, +-inf,
nan and wherever erf rounds to +-1; odd bit for bit; float64 out in the input's shape. The
negative controls drop one polynomial term and shift a boundary, and the ulp check must fail."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import kernels
from minitorch.engine.kernels import erf
from minitorch.nn import functional as F

MAX_ULP = 2.0  # the contract; the measured maximum is 1 (recorded by the grid test)
ROUNDS_TO_ONE = 5.921587195794507  # the least double with math.erf(x) == 1.0
BOUNDARIES = (1.0, 2.0, ROUNDS_TO_ONE, 6.0)  # the pieces' edges, the clamp, where erf hits 1


def near(b, k=2000):
    """The 2k + 1 consecutive doubles centred on b > 0, and 100 more up to 1e-9 relative away."""
    steps = (np.float64(b).view(np.int64) + np.arange(-k, k + 1)).view(np.float64)
    return np.concatenate([steps, b * (1.0 + np.geomspace(1e-15, 1e-9, 50) * [[-1], [1]]).ravel()])


GRIDS = {
    "tiny": np.concatenate([
        [5e-324, 1e-323, 2.2250738585072014e-308, 2.225073858507201e-308],
        np.geomspace(5e-324, 2e-308, 2001),  # subnormals
        np.geomspace(1e-300, 1e-20, 2001), np.geomspace(1e-20, 1e-3, 200_001)]),
    "[-7, 7]": np.linspace(-7.0, 7.0, 1_400_001),  # step 1e-5
    "boundaries": np.concatenate([near(b) for b in BOUNDARIES]),
    "random": np.random.default_rng(1).uniform(-7.0, 7.0, 200_000),
    "large": np.concatenate([np.geomspace(7.0, 1e300, 20_001), [np.finfo(np.float64).max]]),
}


def _cut(x):
    """x rounded to 26 significant bits, so that x*x is exact."""
    mantissa, exponent = np.frexp(x)
    return np.ldexp(np.round(mantissa * 2.0**26), exponent - 26)


def _chebyshev_points(lo, hi, m):
    """The m Chebyshev points of [lo, hi] (the zeros of T_m, mapped)."""
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(m) + 0.5) / m)


def _fit(x, y, deg, weight=None):
    """Coefficients p (powers of x, degree deg) of the least-squares fit of y(x), residuals times
    weight. The columns x^k are scaled to unit norm, and p is fitted once more to the residual
    of its own Horner evaluation: the solve's rounding, large next to an ulp, is corrected."""
    w = np.ones_like(x) if weight is None else weight
    powers = np.vander(x, deg + 1, increasing=True) * w[:, None]
    norms = np.linalg.norm(powers, axis=0)
    powers /= norms
    p = np.linalg.lstsq(powers, y * w, rcond=None)[0] / norms
    return p + np.linalg.lstsq(powers, (y - kernels._horner(p, x)) * w, rcond=None)[0] / norms


def fit_erf_pieces():
    """How kernels' _ERF_SMALL, _ERF_MID and _ERF_TAIL were made: erf's three polynomials (see
    kernels.erf) fitted to math.erf and math.erfc at 16 points per coefficient, so that the
    rounding errors of those values average out. Returns ((variable, coefficients), ...) with
    the points each was fitted at."""
    x = _cut(np.sqrt(_chebyshev_points(0.0, 1.0, 16 * 12)))  # t = x*x: Chebyshev points, exact
    small = (x * x, _fit(x * x, np.array([(math.erf(v) - v) / v for v in x]), 11))
    x = _cut(_chebyshev_points(1.0, 2.0, 16 * 17))
    mid = (x - 1.5, _fit(x - 1.5, np.array([math.erf(v) for v in x]), 16))
    x = _cut(_chebyshev_points(2.0, 6.0, 16 * 14))
    tail = (x - 4.0, _fit(x - 4.0, np.array([math.exp(v * v) * math.erfc(v) for v in x]), 13,
                          weight=np.exp(-x * x)))  # the error that counts is erfc's, absolute
    return small, mid, tail


def erf_with(pieces, x):
    """kernels.erf on x with the polynomials `pieces` (small, mid, tail) in place of the stored."""
    stored = (kernels._ERF_SMALL, kernels._ERF_MID, kernels._ERF_TAIL)
    kernels._ERF_SMALL, kernels._ERF_MID, kernels._ERF_TAIL = pieces
    try:
        return erf(x)
    finally:
        kernels._ERF_SMALL, kernels._ERF_MID, kernels._ERF_TAIL = stored


def ulps_apart(y, ref):
    return float(np.max(np.abs(y - ref) / np.spacing(np.abs(ref))))


FIT_GRID = np.concatenate([GRIDS["[-7, 7]"][::10], GRIDS["tiny"][::10], GRIDS["boundaries"]])


def test_erf_coefficients_are_what_the_fit_gives():
    """The stored polynomials are the fit above: erf with either set is the same to within an
    ulp of erf (a solve on another machine may round the coefficients differently)."""
    fitted = [list(p) for _, p in fit_erf_pieces()]
    assert [len(p) for p in fitted] == [len(kernels._ERF_SMALL), len(kernels._ERF_MID),
                                        len(kernels._ERF_TAIL)]
    assert ulps_apart(erf_with(fitted, FIT_GRID), erf(FIT_GRID)) <= 1.0


def test_erf_coefficient_check_catches_a_changed_coefficient():
    """Negative control: one coefficient of the middle polynomial off by 1e-9 of itself moves erf
    by more than an ulp, and the comparison above sees it."""
    mid = list(kernels._ERF_MID)
    mid[3] = mid[3] * (1.0 + 1e-9)
    pieces = (kernels._ERF_SMALL, mid, kernels._ERF_TAIL)
    assert ulps_apart(erf_with(pieces, FIT_GRID), erf(FIT_GRID)) > 1.0


def reference(x):
    return np.fromiter(map(math.erf, x.tolist()), np.float64, x.size)


def ulp_error(x, y):
    """|y - math.erf(x)| in units of np.spacing(|math.erf(x)|); 0 where both are nan."""
    ref = reference(x)
    err = np.abs(y - ref) / np.spacing(np.abs(ref))
    return np.where(np.isnan(y) & np.isnan(ref), 0.0, err)


def max_ulp(x):
    """The largest ulp error of erf over x and -x."""
    x = np.concatenate([x, -x])
    return float(np.max(ulp_error(x, erf(x))))


@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_erf_within_2_ulp_of_math_erf(grid, record):
    worst = max_ulp(GRIDS[grid])
    record("erf_ulp", "erf", grid, worst, tol=MAX_ULP, passed=worst <= MAX_ULP)
    assert worst <= MAX_ULP


def test_erf_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    y = erf(x)
    np.testing.assert_array_equal(y[:4], [0.0, -0.0, 1.0, -1.0])
    np.testing.assert_array_equal(np.signbit(y[:2]), [False, True])
    assert np.isnan(y[4])
    tiny = np.array([5e-324, -5e-324])  # erf(x) ~ 1.128 x rounds to x itself
    np.testing.assert_array_equal(erf(tiny), tiny)


def test_erf_is_exactly_one_where_erf_rounds_to_one():
    assert math.erf(np.nextafter(ROUNDS_TO_ONE, 0)) < 1.0 == math.erf(ROUNDS_TO_ONE)
    x = np.concatenate([ROUNDS_TO_ONE + np.arange(1000) * np.spacing(ROUNDS_TO_ONE),
                        np.linspace(ROUNDS_TO_ONE, 40.0, 10_001), [6.0, 1e10, 1e300, np.inf]])
    assert (erf(x) == 1.0).all() and (erf(-x) == -1.0).all()


def test_erf_is_odd_bit_for_bit():
    x = np.concatenate([GRIDS[g] for g in sorted(GRIDS)] + [[0.0, np.inf]])
    np.testing.assert_array_equal(erf(-x).view(np.int64), (-erf(x)).view(np.int64))


def test_erf_shapes_and_dtypes():
    values = np.linspace(-3.0, 3.0, 24)
    for x in (np.array(0.5), np.float32(0.5), 0.5, 2):  # 0-d in, 0-d float64 out
        y = erf(x)
        assert isinstance(y, np.ndarray) and y.shape == () and y.dtype == np.float64
        assert y == erf(np.array([float(x)]))[0]
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        y = erf(np.ones(shape, np.float32))
        assert y.shape == shape and y.dtype == np.float64
    for dtype in (np.float16, np.float32, np.float64, np.int32, np.int64):
        x = (values * 2).astype(dtype).reshape(2, 3, 4)
        y = erf(x)
        assert y.shape == (2, 3, 4) and y.dtype == np.float64
        np.testing.assert_array_equal(y, erf(x.astype(np.float64)))  # computed in float64
    x = values.reshape(4, 6)
    np.testing.assert_array_equal(erf(x.T), erf(x).T)  # a non-contiguous view
    np.testing.assert_array_equal(erf(values.tolist()), erf(values))  # array-like
    np.testing.assert_array_equal(erf(np.arange(-3, 4)), erf(np.arange(-3.0, 4.0)))


def test_erf_spans_several_pieces_and_warns_nothing():
    """More elements than one cache-sized piece, with huge values (x^2 overflows in the first
    form, which the tail replaces), inf and nan: no warning, the same values as piece by piece,
    and within 2 ulp."""
    x = np.random.default_rng(2).standard_normal(3 * kernels.BLOCK + 17) * 3.0
    specials = [1e300, -1e200, np.inf, -np.inf, np.nan, 1e-310, -0.0]
    x[5::1000] = np.resize(specials, x[5::1000].size)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = erf(x)
    np.testing.assert_array_equal(y, np.concatenate([erf(p) for p in np.array_split(x, 7)]))
    assert np.max(ulp_error(x, y)) <= MAX_ULP


@pytest.mark.parametrize("piece", ["_ERF_SMALL", "_ERF_MID", "_ERF_TAIL"])
def test_erf_ulp_check_catches_a_dropped_term(piece, monkeypatch):
    """Negative control: without its highest term, each polynomial misses by far more than 2
    ulp somewhere in [-7, 7], and the check above sees it."""
    monkeypatch.setattr(kernels, piece, getattr(kernels, piece)[:-1])
    assert max_ulp(GRIDS["[-7, 7]"]) > 10 * MAX_ULP


def test_erf_ulp_check_catches_a_shifted_boundary(monkeypatch):
    """Negative control: the boundary between the middle and the tail polynomial moved from 2 to
    2.01 (each is then used a little outside the interval it was fitted on): > 2 ulp."""
    def shifted_tail(x):
        a = np.abs(x)
        y = kernels._horner(kernels._ERF_MID, a - 1.5)
        far = a >= 2.01
        c = np.minimum(a[far], 6.0)
        y[far] = 1.0 - np.exp(-c * c) * kernels._horner(kernels._ERF_TAIL, c - 4.0)
        return np.copysign(y, x)

    monkeypatch.setattr(kernels, "_erf_tail", shifted_tail)
    assert max_ulp(GRIDS["[-7, 7]"]) > MAX_ULP


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_exact_matches_torch(dtype):
    """Exact GELU (torch's default F.gelu) on erf: value and gradient against torch, as
    test_torch_semantics compares, over every piece of erf (x/sqrt 2 up to 7) and past it."""
    pytest.importorskip("torch")
    from verification.test_torch_semantics import TF, check

    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(-12.0, 12.0, 2401), rng.standard_normal(4096) * 2.0,
                        [0.0, -0.0, 1.4142135623730951, -2.8284271247461903, 8.5]])
    check(lambda lib, t: F.gelu(t) if lib is mt else TF.gelu(t), x, dtype=dtype)
    check(lambda lib, t: t.gelu() if lib is mt else TF.gelu(t), x[:6300].reshape(7, 900),
          dtype=dtype)
