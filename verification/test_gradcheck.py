"""Generated checks over SPECS x samples: forward vs reference, float64 finite-difference
gradients, grad shape/dtype (float64 and float32), backward twice, needs_grad, and kinks.

Ids read `test_gradient[mul[(3,1)x(1,4)]]`; `pytest verification -k mul` selects one op.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from verification import gradcheck as gc
from verification.specs import SPECS


def cases(check: str, differentiable: bool | None = None):
    """pytest params (spec, sample) for `check`, with the spec's strict xfails attached."""
    out = []
    for name in sorted(SPECS):
        spec = SPECS[name]
        if differentiable is not None and spec.differentiable != differentiable:
            continue
        for sample in spec.make_samples():
            reason = spec.xfail_reason(check, sample.id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(spec, sample, id=f"{name}[{sample.id}]", marks=marks))
    return out


def kink_cases():
    return [pytest.param(SPECS[name], kink, id=f"{name}[{kink.what}]")
            for name in sorted(SPECS) for kink in SPECS[name].kinks]


def _finish(record, result, spec, sample_id):
    gc.record_result(record, result, spec.name, sample_id, kind=spec.kind)
    assert result.passed, f"{spec.name}[{sample_id}] {result}"


@pytest.mark.parametrize("spec,sample", cases("forward"))
def test_forward(spec, sample, record):
    result = gc.check_forward(spec.run, spec.reference, sample.fresh(), dict(sample.attrs))
    _finish(record, result, spec, sample.id)


@pytest.mark.parametrize("spec,sample", cases("gradcheck", differentiable=True))
def test_gradient(spec, sample, record):
    atol, rtol = (spec.tol.atol, spec.tol.rtol) if spec.tol else (gc.ATOL, gc.RTOL)
    result = gc.check_gradient(spec.run, sample.fresh(), dict(sample.attrs), sample.wrt,
                               atol=atol, rtol=rtol)
    _finish(record, result, spec, sample.id)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("spec,sample", cases("grad_meta"))
def test_grad_meta(spec, sample, dtype, record):
    wrt = sample.wrt if spec.differentiable else ()
    out_dtype = spec.out_dtype(sample) if spec.out_dtype else None
    result = gc.check_grad_meta(spec.run, sample.fresh(), dict(sample.attrs), wrt, dtype,
                                out_dtype)
    _finish(record, result, spec, sample.id)


@pytest.mark.parametrize("spec,sample", cases("backward_twice", differentiable=True))
def test_backward_twice(spec, sample, record):
    result = gc.check_backward_twice(spec.run, sample.fresh(), dict(sample.attrs), sample.wrt)
    _finish(record, result, spec, sample.id)


@pytest.mark.parametrize("spec,sample", cases("needs_grad", differentiable=True))
def test_needs_grad(spec, sample, record):
    result = gc.check_needs_grad(spec.run, sample.fresh(), dict(sample.attrs), sample.wrt)
    _finish(record, result, spec, sample.id)


@pytest.mark.parametrize("spec,sample", cases("no_graph", differentiable=False))
def test_no_graph(spec, sample, record):
    result = gc.check_no_graph(spec.run, sample.fresh(), dict(sample.attrs))
    _finish(record, result, spec, sample.id)


@pytest.mark.parametrize("spec,kink", kink_cases())
def test_kink(spec, kink, record):
    result = gc.check_kink(spec.run, kink.inputs, dict(kink.attrs), kink.grads)
    _finish(record, result, spec, kink.what)


@pytest.mark.parametrize("spec,kink", kink_cases())
def test_kink_documented(spec, kink):
    """The convention checked at the kink is the one the op's docstring states."""
    doc = (mt.REGISTRY.get(spec.name) or mt.COMPOSITES[spec.name]).__doc__ or ""
    assert kink.doc in " ".join(doc.split()), f"'{kink.doc}' missing from {spec.name}'s docstring"
