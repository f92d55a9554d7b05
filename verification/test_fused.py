"""Every fused op equals its composite twin in float64: same forward, same gradient for a random
cotangent, on every sample of the fused op's spec. A negative control shows a fused op with a
wrong vjp (dropped bias gradient) is caught by the same comparison."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from verification import gradcheck as gc
from verification.specs import SPECS

from .helpers import temp_op_fixture  # noqa: F401  (provides the temp_op fixture)

FUSED = {  # fused op -> its composite (reference decomposition built from primitives)
    "linear": "linear_composite",
    "layer_norm": "layer_norm_composite",
    "rms_norm": "rms_norm_composite",
    "norm_linear": "norm_linear_composite",
    "cross_entropy": "cross_entropy_composite",
    "causal_self_attention": "causal_self_attention_composite",
}
TOL = 1e-12  # both sides are exact formulas; only rounding order differs


def test_every_fused_op_has_a_twin():
    fused_module = {n for n, op in mt.REGISTRY.items() if op.__module__.endswith("ops.fused")}
    assert fused_module == set(FUSED), "add the new fused op and its composite to FUSED"
    assert set(FUSED.values()) <= set(mt.COMPOSITES)


def compare(fused, composite, sample, seed=0):
    """Max abs differences (forward, each gradient) between two callables on one sample."""
    arrays, attrs, wrt = sample.fresh(), dict(sample.attrs), sample.wrt
    out_f, out_c = gc.evaluate(fused, arrays, attrs), gc.evaluate(composite, arrays, attrs)
    cot = np.random.default_rng(seed).standard_normal(out_f.shape)
    grads_f = gc.vjp(fused, arrays, attrs, wrt, cot)
    grads_c = gc.vjp(composite, arrays, attrs, wrt, cot)
    diffs = [float(np.max(np.abs(out_f - out_c), initial=0.0))]
    diffs += [float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(grads_f, grads_c)]
    return diffs


CASES = [(f, s) for f in sorted(FUSED) for s in SPECS[f].make_samples()]


@pytest.mark.parametrize("fused,sample", CASES, ids=[f"{f}[{s.id}]" for f, s in CASES])
def test_fused_equals_composite(fused, sample, record):
    diffs = compare(SPECS[fused].run, SPECS[FUSED[fused]].run, sample)
    passed = max(diffs) <= TOL
    record("fused_vs_composite", fused, sample.id, max(diffs), None, TOL, passed,
           composite=FUSED[fused])
    assert passed, f"{fused} vs {FUSED[fused]} on {sample.id}: max diffs {diffs}"


F32 = [(f, s) for f, s in CASES if "BIG" in s.id or s.id.startswith("(2,")]


@pytest.mark.parametrize("fused,sample", F32, ids=[f"{f}[{s.id}]" for f, s in F32])
def test_fused_equals_composite_float32(fused, sample):
    """In float32 the two agree to float32 rounding (and both stay float32)."""
    f32 = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in sample.fresh()]
    sample32 = type(sample)(sample.id, tuple(f32), sample.attrs, sample.const)
    diffs = compare(SPECS[fused].run, SPECS[FUSED[fused]].run, sample32)
    assert max(diffs) <= 2e-5, f"{fused} vs {FUSED[fused]} (float32) on {sample.id}: {diffs}"
    out = SPECS[fused].run(*gc.tensors(f32), **sample.attrs)
    assert out.dtype == np.float32


def test_negative_control_wrong_fused_vjp_is_caught(temp_op):
    """A linear op that forgets the bias gradient differs from the composite."""
    good = mt.REGISTRY["linear"]

    def bad_vjp(ctx, g):
        grad_x, grad_w, grad_b = good.vjp(ctx, g)
        return grad_x, grad_w, np.zeros_like(grad_b)

    bad = temp_op("linear_bad_bias", good.forward, bad_vjp, doc=good.__doc__)
    sample = next(s for s in SPECS["linear"].make_samples() if len(s.inputs) == 3)
    diffs = compare(lambda *t: mt.apply(bad, *t), SPECS["linear_composite"].run, sample)
    assert diffs[0] <= TOL and max(diffs[1:]) > 1e-3


@pytest.mark.parametrize("kind", ["layernorm", "layernorm-nobias", "rmsnorm"])
def test_prenorm_then_normlinear_is_linear_of_norm(kind):
    """The GPT's fused pair (PreLayerNorm/PreRMSNorm, then NormLinear: one norm_linear op) equals
    nn.Linear(nn.LayerNorm(x)) with the same parameters: output and every gradient."""
    from minitorch.models import gpt

    rng = np.random.default_rng(3)
    f64 = {"dtype": np.float64}
    pairs = {"layernorm": (gpt.PreLayerNorm(6, **f64), mt.nn.LayerNorm(6, **f64)),
             "layernorm-nobias": (gpt.PreLayerNorm(6, bias=False, **f64),
                                  mt.nn.LayerNorm(6, bias=False, **f64)),
             "rmsnorm": (gpt.PreRMSNorm(6, 1e-5, **f64), mt.nn.RMSNorm(6, 1e-5, **f64))}
    fused_norm, norm = pairs[kind]
    fused_lin, lin = gpt.NormLinear(6, 5, **f64), mt.nn.Linear(6, 5, **f64)
    for (_, p), (_, q) in zip([*fused_norm.named_parameters(), *fused_lin.named_parameters()],
                              [*norm.named_parameters(), *lin.named_parameters()], strict=True):
        p.data[...] = q.data[...] = rng.standard_normal(p.data.shape)
    x = rng.standard_normal((2, 3, 6))
    cot = rng.standard_normal((2, 3, 5))

    def run(n, m):
        xt = mt.tensor(x, requires_grad=True)
        y = m(n(xt))
        (y * mt.tensor(cot)).sum().backward()
        return [y.data, xt.grad.data, *[p.grad.data for p in [*n.parameters(), *m.parameters()]]]

    for a, b in zip(run(fused_norm, fused_lin), run(norm, lin), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)


def test_linear_has_no_norm_special_case():
    """nn.Linear is torch's: forward(x) only; the fusion lives in the model's NormLinear, which
    is nn.Linear when given a Tensor (that the GPT's forward runs norm_linear where each norm
    meets its Linear is test_debug.py's trace test)."""
    from minitorch.models import gpt

    lin = mt.nn.Linear(4, 5, dtype=np.float64)
    x = mt.tensor(np.random.default_rng(4).standard_normal((2, 4)))
    with pytest.raises(TypeError):
        lin(x, norm=mt.nn.LayerNorm(4, dtype=np.float64))
    fused = gpt.NormLinear(4, 5, dtype=np.float64)
    fused.load_state_dict(lin.state_dict())
    np.testing.assert_array_equal(fused(x).data, lin(x).data)


def test_norm_linear_names_a_missing_weight():
    x, w = mt.tensor(np.ones((2, 4))), mt.tensor(np.ones((3, 4)))
    with pytest.raises(ValueError, match="norm_linear: norm_weight and weight are required"):
        mt.nn.functional.norm_linear(x, None, None, w)


def test_cross_entropy_op_takes_leading_dims():
    """The primitive itself (F.cross_entropy always hands it 2-D logits) on (B, T, V) logits:
    the loss and a gradient in the logits' own shape, equal to the flattened call's."""
    rng = np.random.default_rng(5)
    z, t = rng.standard_normal((2, 3, 5)), rng.integers(0, 5, (2, 3))
    op = mt.REGISTRY["cross_entropy"]
    x3, x2 = mt.tensor(z, requires_grad=True), mt.tensor(z.reshape(6, 5), requires_grad=True)
    loss3, loss2 = mt.apply(op, x3, mt.tensor(t)), mt.apply(op, x2, mt.tensor(t.reshape(6)))
    loss3.backward()
    loss2.backward()
    assert loss3.item() == loss2.item()
    assert x3.grad.shape == (2, 3, 5)
    np.testing.assert_array_equal(x3.grad.data, x2.grad.data.reshape(2, 3, 5))
