"""PyTorch parity per op and composite, forward and backward, over the same samples as the
gradcheck: float64 within 1e-10; float32 forward atol 1e-6 / rtol 1e-3, grads atol 1e-4 / rtol 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from verification import gradcheck as gc
from verification.specs import SPECS

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

TOLS = {  # dtype -> (forward (atol, rtol), grad (atol, rtol))
    np.float64: ((1e-10, 1e-10), (1e-10, 1e-10)),
    np.float32: ((1e-6, 1e-3), (1e-4, 1e-3)),
}


def cases():
    out = []
    for name in sorted(SPECS):
        spec = SPECS[name]
        if spec.torch is None:
            continue
        for sample in spec.make_samples():
            reason = spec.xfail_reason("torch", sample.id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(spec, sample, id=f"{name}[{sample.id}]", marks=marks))
    return out


def _cast(arrays, dtype):
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def _to_torch(a: np.ndarray, requires_grad: bool):
    t = torch.from_numpy(np.array(a, copy=True, order="C"))
    return t.requires_grad_(True) if requires_grad else t


def run_both(spec, arrays, attrs, wrt, cotangent_seed=0):
    """(minitorch out, torch out, minitorch grads, torch grads) for <v, op> with one seeded v."""
    ts = gc.tensors(arrays, wrt)
    out = spec.run(*ts, **attrs)
    tts = [_to_torch(a, i in wrt) for i, a in enumerate(arrays)]
    tout = spec.torch(*tts, **attrs)
    grads, tgrads = [], []
    if wrt:
        v = np.random.default_rng(cotangent_seed).standard_normal(out.shape).astype(out.dtype)
        out.backward(v)
        tout.backward(torch.from_numpy(v))
        grads = [ts[i].grad.data for i in wrt]
        tgrads = [tts[i].grad.numpy() for i in wrt]
    return out.data, tout.detach().numpy(), grads, tgrads


def _compare(record, check, spec, sample, got, want, atol, rtol):
    tol = {"atol": atol, "rtol": rtol}
    if np.shape(got) != np.shape(want):
        record(check, spec.name, sample.id, float("inf"), float("inf"), tol, False)
        pytest.fail(f"{check} {spec.name}[{sample.id}]: shape {np.shape(got)} != torch "
                    f"{np.shape(want)}")
    if np.asarray(want).dtype.kind in "biu":
        ok = bool(np.array_equal(got, want))
        record(check, spec.name, sample.id, 0.0 if ok else 1.0, 0.0, {"exact": True}, ok)
        assert ok, f"{check} {spec.name}[{sample.id}]: {got} != torch {want}"
        return
    ok, max_abs, max_rel = gc.errors(got, want, atol, rtol)
    record(check, spec.name, sample.id, max_abs, max_rel, tol, ok)
    assert ok, f"{check} {spec.name}[{sample.id}]: max_abs={max_abs:.3g} max_rel={max_rel:.3g}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("spec,sample", cases())
def test_torch_parity(spec, sample, dtype, record):
    (fatol, frtol), (gatol, grtol) = TOLS[dtype]
    wrt = sample.wrt if spec.differentiable else ()
    arrays = _cast(sample.fresh(), dtype)
    out, tout, grads, tgrads = run_both(spec, arrays, dict(sample.attrs), wrt)
    tag = np.dtype(dtype).name.replace("float", "f")
    _compare(record, f"torch_fwd_{tag}", spec, sample, out, tout, fatol, frtol)
    for i, g, tg in zip(wrt, grads, tgrads, strict=True):
        _compare(record, f"torch_grad_{tag}", spec, sample, g, tg, gatol, grtol)
        assert g.dtype == arrays[i].dtype, f"grad {i} is {g.dtype}, input is {arrays[i].dtype}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_embedding_repeated_ids_match_torch(dtype, record):
    """Repeated ids accumulate their rows' gradients exactly as torch.nn.functional.embedding."""
    rng = np.random.default_rng(7)
    ids = np.array([[3, 1, 3], [3, 0, 1]])  # id 3 three times, id 1 twice, id 2 never
    w = rng.standard_normal((5, 4)).astype(dtype)
    v = rng.standard_normal((2, 3, 4)).astype(dtype)
    weight = mt.Tensor(w, requires_grad=True)
    mt.nn.functional.embedding(mt.Tensor(ids), weight).backward(v)
    tw = torch.from_numpy(w.copy()).requires_grad_(True)
    torch.nn.functional.embedding(torch.from_numpy(ids), tw).backward(torch.from_numpy(v))
    atol, rtol = TOLS[dtype][1]
    ok, max_abs, max_rel = gc.errors(weight.grad.data, tw.grad.numpy(), atol, rtol)
    record("torch_embedding_repeats", "embedding", "ids(2,3)x3,1,1", max_abs, max_rel,
           {"atol": atol, "rtol": rtol}, ok)
    assert ok
    expected_row3 = v[0, 0] + v[0, 2] + v[1, 0]  # the three uses of id 3 sum
    assert np.allclose(weight.grad.data[3], expected_row3, rtol=1e-6, atol=1e-6)
    assert not weight.grad.data[2].any()  # an id never used gets a zero row
