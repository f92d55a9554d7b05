"""Gradient-checking library: each check returns a Result (verdict, max errors, tolerance).

Checks take any `fn(*tensors, **attrs) -> Tensor`, so negative controls can feed them test-only
ops. Finite differences run in float64 with central differences (eps = 1e-6): the full Jacobian
when inputs and output have at most 64 elements each, otherwise random projections
<u, VJP(v)> vs <v, JVP_fd(u)>. This module asserts nothing; tests decide what to do with a Result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import minitorch as mt

EPS = 1e-6
ATOL, RTOL = 1e-6, 1e-5  # default gradient tolerance (loosened only per spec, see specs.Tol)
FWD_TOL = 1e-10  # float64 forward vs reference, absolute and relative
FULL_MAX = 64  # full Jacobian up to this many input (and output) elements
N_PROJ = 3

Fn = Callable[..., mt.Tensor]


@dataclass
class Result:
    check: str
    passed: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    tol: dict = field(default_factory=dict)
    detail: str = ""

    def __str__(self) -> str:
        verdict = "pass" if self.passed else "FAIL"
        return (f"{self.check}: {verdict} (max_abs={self.max_abs:.3g}, max_rel={self.max_rel:.3g},"
                f" tol={self.tol}) {self.detail}")


def errors(got: np.ndarray, want: np.ndarray, atol: float,
           rtol: float) -> tuple[bool, float, float]:
    """(all within atol + rtol*|want|, max abs error, max rel error where |want| > atol).
    Equal infinities count as equal; a NaN anywhere fails."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, float("inf"), float("inf")
    same_inf = np.isinf(got) & (got == want)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf; masked just below
        diff = np.where(same_inf, 0.0, np.abs(got - want))
    if np.isnan(diff).any():
        return False, float("nan"), float("nan")
    ok = bool(np.all(diff <= atol + rtol * np.where(same_inf, 0.0, np.abs(want))))
    big = np.abs(want) > atol
    max_rel = float(np.max(diff[big] / np.abs(want[big]))) if big.any() else 0.0
    return ok, float(diff.max(initial=0.0)), max_rel


def tensors(arrays: Sequence[np.ndarray], wrt: Sequence[int] = ()) -> list[mt.Tensor]:
    """Fresh leaves; those at indices `wrt` require grad."""
    return [mt.Tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]


def evaluate(fn: Fn, arrays: Sequence[np.ndarray], attrs: dict) -> np.ndarray:
    """The forward value, with no graph."""
    with mt.no_grad():
        return np.asarray(fn(*tensors(arrays), **attrs).data)


def vjp(fn: Fn, arrays: Sequence[np.ndarray], attrs: dict, wrt: Sequence[int],
        cotangent: np.ndarray) -> list[np.ndarray | None]:
    """Gradients (one per input in `wrt`, None where no grad arrived) of <cotangent, fn>."""
    ts = tensors(arrays, wrt)
    out = fn(*ts, **attrs)
    out.backward(cotangent.astype(out.dtype))
    return [None if ts[i].grad is None else ts[i].grad.data for i in wrt]


def _shifted(arrays, wrt, direction, step):
    """arrays with arrays[i] += step * direction[k] for each wrt index i = wrt[k]."""
    out = list(arrays)
    for k, i in enumerate(wrt):
        out[i] = arrays[i] + step * direction[k]
    return out


def jvp_fd(fn: Fn, arrays, attrs, wrt, direction, eps: float = EPS) -> np.ndarray:
    """Central-difference directional derivative of fn along `direction` (one array per wrt)."""
    plus = evaluate(fn, _shifted(arrays, wrt, direction, eps), attrs)
    minus = evaluate(fn, _shifted(arrays, wrt, direction, -eps), attrs)
    return (plus - minus) / (2.0 * eps)


def check_forward(fn: Fn, reference: Callable, arrays, attrs, tol: float = FWD_TOL) -> Result:
    """The op's forward equals the reference (shape, and values within tol)."""
    got = evaluate(fn, arrays, attrs)
    want = np.asarray(reference(*arrays, **attrs))
    tolerance = {"atol": tol, "rtol": tol}
    if got.shape != want.shape:
        return Result("forward", False, float("inf"), float("inf"), tolerance,
                      f"shape {got.shape} != reference {want.shape}")
    if got.dtype.kind in "biu" or want.dtype.kind in "biu":
        same = bool(np.array_equal(got, want))
        return Result("forward", same, 0.0 if same else 1.0, 0.0, {"exact": True},
                      "" if same else f"got {got}, want {want}")
    ok, max_abs, max_rel = errors(got, want, tol, tol)
    return Result("forward", ok, max_abs, max_rel, tolerance)


def check_gradient(fn: Fn, arrays, attrs, wrt, atol: float = ATOL, rtol: float = RTOL,
                   eps: float = EPS, seed: int = 0) -> Result:
    """Analytic VJPs against float64 central differences (full Jacobian or projections)."""
    arrays = [np.asarray(a, dtype=np.float64) if a.dtype.kind == "f" else a for a in arrays]
    n_in = sum(arrays[i].size for i in wrt)
    n_out = evaluate(fn, arrays, attrs).size
    tolerance = {"atol": atol, "rtol": rtol, "eps": eps}
    if n_in <= FULL_MAX and n_out <= FULL_MAX:
        got, want = _jacobians(fn, arrays, attrs, wrt, eps)
        ok, max_abs, max_rel = errors(got, want, atol, rtol)
        return Result("gradcheck", ok, max_abs, max_rel, {**tolerance, "mode": "full"},
                      f"Jacobian {want.shape}")
    rng = np.random.default_rng(seed)
    got, want = [], []
    for _ in range(N_PROJ):
        out_shape = evaluate(fn, arrays, attrs).shape
        v = rng.standard_normal(out_shape)
        u = [rng.standard_normal(arrays[i].shape) for i in wrt]
        grads = vjp(fn, arrays, attrs, wrt, v)
        pairs = zip(u, grads, strict=True)
        got.append(sum(float(np.sum(uk * (0.0 if g is None else g))) for uk, g in pairs))
        want.append(float(np.sum(v * jvp_fd(fn, arrays, attrs, wrt, u, eps))))
    ok, max_abs, max_rel = errors(np.array(got), np.array(want), atol, rtol)
    return Result("gradcheck", ok, max_abs, max_rel, {**tolerance, "mode": f"{N_PROJ} projections"},
                  f"<u,VJP(v)>={np.round(got, 8).tolist()} <v,JVP(u)>={np.round(want, 8).tolist()}")


def _jacobians(fn, arrays, attrs, wrt, eps) -> tuple[np.ndarray, np.ndarray]:
    """(analytic, finite-difference) Jacobians, shape (n_out, n_in), inputs concatenated."""
    out = evaluate(fn, arrays, attrs)
    cols = []
    for k, i in enumerate(wrt):
        for j in range(arrays[i].size):
            direction = [np.zeros(arrays[m].shape) for m in wrt]
            direction[k].reshape(-1)[j] = 1.0
            cols.append(jvp_fd(fn, arrays, attrs, wrt, direction, eps).reshape(-1))
    fd = np.stack(cols, axis=1) if cols else np.zeros((out.size, 0))
    rows = []
    for r in range(out.size):
        onehot = np.zeros(out.size)
        onehot[r] = 1.0
        grads = vjp(fn, arrays, attrs, wrt, onehot.reshape(out.shape))
        rows.append(np.concatenate([
            (np.zeros(arrays[i].size) if g is None else np.asarray(g, dtype=np.float64).reshape(-1))
            for i, g in zip(wrt, grads, strict=True)]))
    return np.stack(rows), fd


def check_grad_meta(fn: Fn, arrays, attrs, wrt, dtype=np.float64, out_dtype=None) -> Result:
    """In `dtype`: the output has the expected dtype, each grad has its input's shape and dtype."""
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    ts = tensors(arrays, wrt)
    out = fn(*ts, **attrs)
    problems = []
    want_out = np.dtype(out_dtype or dtype)
    if out.dtype != want_out:
        problems.append(f"output dtype {out.dtype} != {want_out}")
    if wrt:
        out.backward(np.ones(out.shape, dtype=out.dtype))
    for i in wrt:
        g = ts[i].grad
        if g is None:
            problems.append(f"input {i}: no gradient")
        elif g.shape != ts[i].shape or g.dtype != ts[i].dtype:
            problems.append(f"input {i}: grad {g.shape} {g.dtype} != input {ts[i].shape} "
                            f"{ts[i].dtype}")
    return Result(f"grad_meta_{np.dtype(dtype).name}", not problems, float(len(problems)), 0.0,
                  {"exact": True}, "; ".join(problems))


def check_backward_twice(fn: Fn, arrays, attrs, wrt, seed: int = 0) -> Result:
    """Backward twice through one retained graph gives identical grads, and leaves the inputs
    untouched (catches vjps that mutate saved arrays or inputs in place)."""
    before = [np.array(a, copy=True) for a in arrays]
    ts = tensors(arrays, wrt)
    out = fn(*ts, **attrs)
    v = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
    out.backward(v, retain_graph=True)
    first = [np.array(ts[i].grad.data, copy=True) for i in wrt]
    for i in wrt:
        ts[i].zero_grad()
    out.backward(v)
    second = [ts[i].grad.data for i in wrt]
    worst, problems = 0.0, []
    for i, a, b in zip(wrt, first, second, strict=True):
        d = float(np.max(np.abs(a - b), initial=0.0)) if a.shape == b.shape else float("inf")
        worst = max(worst, d)
        if not np.array_equal(a, b):
            problems.append(f"input {i}: grads differ by {d:.3g}")
    for i, (a, b) in enumerate(zip(arrays, before, strict=True)):
        if not np.array_equal(a, b):
            problems.append(f"input {i} was modified in place")
    return Result("backward_twice", not problems, worst, 0.0, {"exact": True}, "; ".join(problems))


def check_needs_grad(fn: Fn, arrays, attrs, wrt) -> Result:
    """For each differentiable input held constant: its .grad stays None and every other input's
    gradient is unchanged (vjps may skip work via ctx.needs_grad, but must not change results)."""
    v = np.random.default_rng(1).standard_normal(evaluate(fn, arrays, attrs).shape)
    full = dict(zip(wrt, vjp(fn, arrays, attrs, wrt, v), strict=True))
    worst, problems = 0.0, []
    for off in wrt:
        keep = [i for i in wrt if i != off]
        ts = tensors(arrays, keep)
        out = fn(*ts, **attrs)
        if not keep:
            if out.requires_grad or out.grad_fn is not None:
                problems.append("output records a graph although no input requires grad")
            continue
        out.backward(v.astype(out.dtype))
        if ts[off].grad is not None:
            problems.append(f"input {off} (requires_grad=False) got a gradient")
        for i in keep:
            g = ts[i].grad
            if g is None or g.shape != full[i].shape or not np.array_equal(g.data, full[i]):
                d = float("inf") if g is None or g.shape != full[i].shape else float(
                    np.max(np.abs(g.data - full[i]), initial=0.0))
                worst = max(worst, d)
                problems.append(f"input {i} changes (by {d:.3g}) when input {off} needs no grad")
    return Result("needs_grad", not problems, worst, 0.0, {"exact": True}, "; ".join(problems))


def check_kink(fn: Fn, inputs, attrs, expected, atol: float = 1e-12) -> Result:
    """Backward of sum(fn(inputs)) gives exactly the documented gradient at a kink."""
    wrt = [i for i, g in enumerate(expected) if g is not None]
    ts = tensors(inputs, wrt)
    out = fn(*ts, **attrs)
    with np.errstate(divide="ignore", invalid="ignore"):
        out.backward(np.ones(out.shape, dtype=out.dtype))
    worst, rel, ok, shown = 0.0, 0.0, True, []
    for i in wrt:
        got = ts[i].grad.data if ts[i].grad is not None else np.full(inputs[i].shape, np.nan)
        good, max_abs, max_rel = errors(got, expected[i], atol, 0.0)
        ok, worst, rel = ok and good, max(worst, max_abs), max(rel, max_rel)
        shown.append(f"input {i}: got {np.asarray(got).tolist()} want {expected[i].tolist()}")
    return Result("kink", ok, worst, rel, {"atol": atol}, "; ".join(shown))


def check_no_graph(fn: Fn, arrays, attrs) -> Result:
    """A non-differentiable op records no graph even when its float inputs require grad."""
    wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    out = fn(*tensors(arrays, wrt), **attrs)
    ok = not out.requires_grad and out.grad_fn is None
    return Result("no_graph", ok, 0.0 if ok else 1.0, 0.0, {"exact": True},
                  "" if ok else f"output has grad_fn={out.grad_fn}")


def record_result(record: Callable, result: Result, op: str, sample: str, **extra: Any) -> None:
    """Write one row through the conftest `record` fixture."""
    record(result.check, op, sample, result.max_abs, result.max_rel, result.tol, result.passed,
           detail=result.detail, **extra)
