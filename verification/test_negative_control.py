"""Negative controls: each check in gradcheck.py (and the coverage and torch-parity machinery) is
shown to FAIL on a deliberately broken test-only op, and to pass on its correct twin.

Test-only ops are registered through the `temp_op` fixture, whose finalizer removes them, so the
coverage test never sees them.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from verification import gradcheck as gc
from verification.helpers import temp_op_fixture  # noqa: F401  (the temp_op fixture)
from verification.specs import SPECS, OpSpec, Sample
from verification.test_coverage import _broadcasts, coverage_diff

SMALL = (2, 3)  # full-Jacobian mode
LARGE = (10, 10)  # 100 elements: random-projection mode


def caller(op):
    return lambda *ts, **kw: mt.apply(op, *ts, **kw)


def inputs(n, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape) for _ in range(n)]


def expect_caught(record, name, good: gc.Result, bad: gc.Result, sample: str):
    """The check passes on the correct op and fails on the broken one."""
    record(f"negative_control:{bad.check}", name, sample, bad.max_abs, bad.max_rel, bad.tol,
           good.passed and not bad.passed, detail=bad.detail)
    assert good.passed, f"positive control failed: {good}"
    assert not bad.passed, f"the broken rule was not caught: {bad}"


# (name, forward, correct vjp, broken vjp, number of inputs): one bug class each.
WRONG_RULES = [
    ("square_missing_2", lambda ctx, x: (ctx.save(x), x * x)[1],
     lambda ctx, g: (2.0 * g * ctx.saved[0],), lambda ctx, g: (g * ctx.saved[0],), 1),
    ("sub_wrong_sign", lambda ctx, a, b: a - b,
     lambda ctx, g: (g, -g), lambda ctx, g: (g, g), 2),
    ("matmul_forgot_transpose", lambda ctx, a, b: (ctx.save(a, b), a @ b)[1],
     lambda ctx, g: (g @ ctx.saved[1].T, ctx.saved[0].T @ g),
     lambda ctx, g: (g @ ctx.saved[1], ctx.saved[0].T @ g), 2),
    ("xexp_dropped_term", lambda ctx, x: (ctx.save(x), x * np.exp(x))[1],
     lambda ctx, g: (g * np.exp(ctx.saved[0]) * (1.0 + ctx.saved[0]),),
     lambda ctx, g: (g * np.exp(ctx.saved[0]),), 1),
    ("softmax_dropped_sum",
     lambda ctx, x: (ctx.save(e := np.exp(x) / np.exp(x).sum(-1, keepdims=True)), e)[1],
     lambda ctx, g: (ctx.saved[0] * (g - (g * ctx.saved[0]).sum(-1, keepdims=True)),),
     lambda ctx, g: (ctx.saved[0] * g,), 1),
]


@pytest.mark.parametrize("shape", [SMALL, LARGE], ids=["full", "projections"])
@pytest.mark.parametrize("name,forward,good_vjp,bad_vjp,n", WRONG_RULES,
                         ids=[r[0] for r in WRONG_RULES])
def test_gradcheck_catches_wrong_vjp(temp_op, record, name, forward, good_vjp, bad_vjp, n, shape):
    mode = "full" if shape == SMALL else "3 projections"
    shape = (shape[0], shape[0]) if name.startswith("matmul") else shape  # square: shapes agree
    good = temp_op(f"good_{name}", forward, good_vjp, doc="y = f(x); grad_x = correct.")
    bad = temp_op(f"bad_{name}", forward, bad_vjp, doc="y = f(x); grad_x = deliberately wrong.")
    arrays = inputs(n, shape)
    wrt = list(range(n))
    good_r = gc.check_gradient(caller(good), arrays, {}, wrt)
    bad_r = gc.check_gradient(caller(bad), arrays, {}, wrt)
    assert good_r.tol["mode"] == bad_r.tol["mode"] == mode
    expect_caught(record, name, good_r, bad_r, f"{shape}")


def test_forward_check_catches_wrong_forward(temp_op, record):
    """A forward off by a relative 1e-8 fails the float64 reference check (tolerance 1e-10)."""
    ok = temp_op("exp_ok", lambda ctx, x: np.exp(x), lambda ctx, g: (g,), doc="y = exp(x).")
    off = temp_op("exp_off", lambda ctx, x: np.exp(x) * (1 + 1e-8), lambda ctx, g: (g,),
                  doc="y = exp(x)(1+1e-8).")
    arrays = inputs(1, SMALL)
    expect_caught(record, "exp_off", gc.check_forward(caller(ok), np.exp, arrays, {}),
                  gc.check_forward(caller(off), np.exp, arrays, {}), "(2,3)")


def test_backward_twice_catches_vjp_that_mutates_its_state(temp_op, record):
    """Arrays given to ctx.save are read-only (a vjp writing one raises at once); state kept as
    a ctx attribute is not, and the backward-twice check catches a vjp that mutates it."""
    def forward(ctx, x):
        ctx.x2 = x * 2.0
        return x * x

    def mutating(ctx, g):
        ctx.x2 *= 2.0  # corrupts the kept array: the second backward sees 4x
        return (g * ctx.x2,)

    good = temp_op("sq_ok", forward, lambda ctx, g: (g * ctx.x2,), doc="y = x*x.")
    bad = temp_op("sq_mutates", forward, mutating, doc="y = x*x; vjp mutates its state.")
    arrays = inputs(1, SMALL)
    expect_caught(record, "sq_mutates", gc.check_backward_twice(caller(good), arrays, {}, [0]),
                  gc.check_backward_twice(caller(bad), arrays, {}, [0]), "(2,3)")


def test_vjp_writing_a_saved_array_raises(temp_op):
    def forward(ctx, x):
        ctx.save(x * 1.0)
        return x * x

    def mutating(ctx, g):
        (x,) = ctx.saved
        x *= 2.0
        return (2.0 * g * x,)

    bad = temp_op("sq_writes_saved", forward, mutating, doc="y = x*x; vjp writes ctx.saved.")
    x = mt.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match="read-only"):
        mt.apply(bad, x).sum().backward()


def test_backward_twice_catches_vjp_that_mutates_input(temp_op, record):
    """An input kept as a ctx attribute (not through ctx.save, which would make it read-only)
    and written by the vjp: the backward-twice check sees it."""
    def mutating(ctx, g):
        ctx.x += 1.0  # writes into the caller's input array
        return (g,)

    def forward(ctx, x):
        ctx.x = x
        return x + 0.0

    good = temp_op("id_ok", forward, lambda ctx, g: (g,), doc="y = x.")
    bad = temp_op("id_mutates", forward, mutating, doc="y = x; vjp writes into x.")
    arrays = inputs(1, SMALL)
    bad_r = gc.check_backward_twice(caller(bad), arrays, {}, [0])
    expect_caught(record, "id_mutates", gc.check_backward_twice(caller(good), inputs(1, SMALL),
                                                                {}, [0]), bad_r, "(2,3)")
    assert "modified in place" in bad_r.detail


def test_needs_grad_check_catches_rule_that_misuses_needs_grad(temp_op, record):
    """Right gradients when both inputs need them, wrong when one does not: gradcheck alone
    cannot see it; the needs_grad check does."""
    forward = lambda ctx, a, b: (ctx.save(a, b), a * b)[1]  # noqa: E731

    def sloppy(ctx, g):
        a, b = ctx.saved
        if not ctx.needs_grad[0]:
            return None, g  # forgot the factor a on this path
        return ctx.needed(g * b, g * a)

    good = temp_op("mul_ok", forward,
                   lambda ctx, g: ctx.needed(g * ctx.saved[1], g * ctx.saved[0]), doc="y = a*b.")
    bad = temp_op("mul_sloppy", forward, sloppy, doc="y = a*b; wrong when a needs no grad.")
    arrays = inputs(2, SMALL)
    assert gc.check_gradient(caller(bad), arrays, {}, [0, 1]).passed
    expect_caught(record, "mul_sloppy", gc.check_needs_grad(caller(good), arrays, {}, [0, 1]),
                  gc.check_needs_grad(caller(bad), arrays, {}, [0, 1]), "(2,3)x(2,3)")


def test_kink_check_catches_wrong_convention(temp_op, record):
    """relu with grad 1 at 0 passes gradcheck away from 0 but fails the kink convention."""
    forward = lambda ctx, x: (ctx.save(x), np.maximum(x, 0.0))[1]  # noqa: E731
    good = temp_op("relu_ok", forward, lambda ctx, g: (g * (ctx.saved[0] > 0),), doc="relu.")
    bad = temp_op("relu_ge", forward, lambda ctx, g: (g * (ctx.saved[0] >= 0),), doc="relu.")
    assert gc.check_gradient(caller(bad), inputs(1, SMALL), {}, [0]).passed
    at = (np.array([-1.0, 0.0, 1.0]),)
    want = (np.array([0.0, 0.0, 1.0]),)
    expect_caught(record, "relu_ge", gc.check_kink(caller(good), at, {}, want),
                  gc.check_kink(caller(bad), at, {}, want), "[-1,0,1]")


def test_grad_meta_catches_float32_upcast(temp_op, record):
    good = temp_op("twice_ok", lambda ctx, x: x * 2.0, lambda ctx, g: (g * 2.0,), doc="y = 2x.")
    bad = temp_op("twice_f64", lambda ctx, x: (ctx.save(x), x.astype(np.float64) * 2.0)[1],
                  lambda ctx, g: ((g * 2.0).astype(ctx.saved[0].dtype),),
                  doc="y = 2x, always float64.")
    arrays = inputs(1, SMALL)
    expect_caught(record, "twice_f64",
                  gc.check_grad_meta(caller(good), arrays, {}, [0], np.float32),
                  gc.check_grad_meta(caller(bad), arrays, {}, [0], np.float32), "(2,3) f32")


def test_no_graph_check_catches_differentiable_comparison(temp_op, record):
    """A float 0/1 mask op wrongly marked differentiable records a graph (bool outputs never do:
    the engine records nodes for float outputs only)."""
    mask = lambda ctx, a, b: (a < b).astype(a.dtype)  # noqa: E731
    good = temp_op("lt_ok", mask, doc="y = float(a < b); not differentiable.",
                   differentiable=False)
    bad = temp_op("lt_graph", mask, doc="y = float(a < b); marked differentiable.")
    arrays = inputs(2, SMALL)
    expect_caught(record, "lt_graph", gc.check_no_graph(caller(good), arrays, {}),
                  gc.check_no_graph(caller(bad), arrays, {}), "(2,3)x(2,3)")


@pytest.mark.slow
@pytest.mark.torch
def test_torch_parity_catches_wrong_vjp(temp_op, record):
    pytest.importorskip("torch")
    from verification.test_torch_parity import run_both

    forward = lambda ctx, x: (ctx.save(y := np.tanh(x)), y)[1]  # noqa: E731
    bad = temp_op("tanh_bad", forward, lambda ctx, g: (g * (1.0 - ctx.saved[0]),),
                  doc="y = tanh(x); grad_x = g*(1-y) (wrong: should be 1-y^2).")
    spec = OpSpec("tanh_bad", lambda rng: [], np.tanh, "reals",
                  torch=lambda x: __import__("torch").tanh(x), call=caller(bad))
    arrays = inputs(1, SMALL)
    out, tout, grads, tgrads = run_both(spec, arrays, {}, [0])
    fwd_ok, *_ = gc.errors(out, tout, 1e-10, 1e-10)
    grad_ok, max_abs, max_rel = gc.errors(grads[0], tgrads[0], 1e-10, 1e-10)
    record("negative_control:torch_grad", "tanh_bad", "(2,3)", max_abs, max_rel,
           {"atol": 1e-10, "rtol": 1e-10}, fwd_ok and not grad_ok)
    assert fwd_ok and not grad_ok


def test_coverage_diff_names_an_op_without_spec(temp_op, monkeypatch):
    assert coverage_diff() == ([], [])
    temp_op("unspecified_op", lambda ctx, x: x, lambda ctx, g: (g,), doc="y = x; grad_x = g.")
    monkeypatch.setitem(SPECS, "ghost_op", SPECS["neg"])
    assert coverage_diff() == (["unspecified_op"], ["ghost_op"])


def test_broadcast_probe_flags_a_new_binary_op(temp_op):
    """A new broadcasting binary op is detected, so its spec must carry the broadcast pairs."""
    op = temp_op("hypot_like", lambda ctx, a, b: np.sqrt(a * a + b * b),
                 lambda ctx, g: (g, g), doc="y = sqrt(a^2 + b^2).")
    assert _broadcasts(op) and not _broadcasts(mt.REGISTRY["matmul"])


def test_registry_is_clean_after_temp_ops():
    """Runs after the tests above (file order): no test-only op is left in REGISTRY."""
    assert not [n for n in mt.REGISTRY if n not in SPECS]
    assert all(isinstance(s, Sample) for s in SPECS["mul"].make_samples())
