"""The dispatch and user-model benchmarks compare like with like: each op case computes the same
values on minitorch, torch and NumPy; the nanoGPT-style model has exactly the parameters of
minitorch's own GPT it is compared with; the per-op rows follow the harness's reliability rule.
No timing is asserted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import bench_dispatch as D
from benchmarks import bench_user_models as U
from benchmarks.user_models import nanogpt

torch = pytest.importorskip("torch")


def _value(out):
    return np.asarray(out.detach().numpy() if hasattr(out, "detach") else out.numpy())


@pytest.mark.parametrize("size", list(D.SIZES))
def test_every_case_computes_the_same_values_in_each_library(size):
    import minitorch as mt

    for name in D.cases(size):
        _, call, np_call, _ = D.CASES[name]
        got = _value(call(mt)(D.inputs("minitorch", size, False)))
        want = call(torch)(D.inputs("torch", size, False)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
        if np_call is not None:
            floor = np.asarray(np_call(D.inputs("numpy", size, False)))
            np.testing.assert_allclose(floor, want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("size", ["0d", "64x64"])
def test_every_case_runs_forward_and_backward(size):
    for name in D.cases(size):
        for lib in ("minitorch", "torch"):
            D.make_call(lib, name, size, "forward_backward")()


def _harness_out(mt_us, torch_us, kept):
    samples = [None if not k else 1.0 for k in kept]
    return {"load": 0.0, "max_ci": 0.10, "times": {
        "minitorch": {"samples_ms": samples, "results": [{"add": x} for x in mt_us]},
        "torch": {"samples_ms": samples, "results": [{"add": x} for x in torch_us]}}}


def test_per_op_rows_take_the_median_of_per_round_ratios():
    out = _harness_out([4.0, 4.2, 3.8, 4.0, 4.1, 3.9, 4.0, 4.0], [2.0] * 8, [True] * 8)
    row = next(r for r in D.per_op_rows(out, "8", "forward") if r["op"] == "add")
    assert row["ratio_vs_torch"] == pytest.approx(2.0)
    assert row["minitorch_us"] == pytest.approx(4.0) and row["reliable_vs_torch"]


def test_per_op_rows_are_unreliable_when_the_samples_were_dropped_for_load():
    kept = [True, True] + [False] * 6
    out = _harness_out([4.0, 4.0] + [9.0] * 6, [2.0] * 8, kept)
    row = next(r for r in D.per_op_rows(out, "8", "forward") if r["op"] == "add")
    assert not row["reliable_vs_torch"]
    # too few kept: like the harness, every sample is shown (flagged), not the 2 kept ones
    assert row["minitorch_us"] == pytest.approx(9.0)
    assert row["ratio_vs_torch"] == pytest.approx(4.5)


def test_the_user_gpt_has_the_parameters_of_minitorchs_own_gpt():
    import minitorch as mt
    from minitorch.models.gpt import GPT

    user = nanogpt.model(mt, **nanogpt.ARCH)
    own = GPT(nanogpt.own_gpt_config())
    shapes = sorted(tuple(p.shape) for p in user.parameters())
    assert shapes == sorted(tuple(p.shape) for p in own.parameters())


@pytest.mark.parametrize("model", U.MODELS)
def test_each_user_model_trains_on_both_libraries_from_a_similar_loss(model):
    first = {lib: U.make_step(lib, model, 1)() for lib in ("minitorch", "torch")}
    assert all(math.isfinite(v) for v in first.values())
    assert first["minitorch"] == pytest.approx(first["torch"], rel=0.1)
