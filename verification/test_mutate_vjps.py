"""verification/mutate_vjps.py as the producer of the report's mutation.json: runs over subsets
of ops merge without losing earlier rows, every row keeps its commit, and the mutation kinds
added for the fused ops (in-place updates, conditional expressions) really change a gradient.
No mutant is run through pytest here."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from verification import gradcheck as gc
from verification import mutate_vjps as M
from verification.specs import SPECS


def _mutant(op: str, status: str, desc: str = "d") -> dict:
    return {"op": op, "kind": "ast", "desc": desc, "line": 1, "status": status}


def test_merge_keeps_ops_not_remeasured_and_records_each_commit():
    old = {"command": "python -m verification.mutate_vjps", "files": ["a.py"],
           "ops": ["mul", "argmax", "linear"], "killed": 3, "survived": 1, "total": 4,
           "runs": [{"commit": "old", "ops": ["mul", "argmax", "linear"], "killed": 3,
                     "survived": 1}],
           "mutants": [{**_mutant("mul", "killed"), "commit": "old"},
                       {**_mutant("mul", "survived"), "commit": "old"},
                       {**_mutant("linear", "killed"), "commit": "old"},
                       {**_mutant("linear", "killed"), "commit": "old"}]}
    run = {"commit": "new", "files": ["a.py", "b.py"], "ops": ["linear", "rms_norm"],
           "killed": 2, "survived": 1, "total": 3}
    new = M.merge(old, run, [_mutant("linear", "killed"), _mutant("rms_norm", "killed"),
                             _mutant("rms_norm", "survived")])
    assert new["table"]["mul"] == {"killed": 1, "survived": 1, "other": 0, "commit": "old"}
    assert new["table"]["linear"] == {"killed": 1, "survived": 0, "other": 0, "commit": "new"}
    assert new["table"]["rms_norm"] == {"killed": 1, "survived": 1, "other": 0, "commit": "new"}
    assert (new["killed"], new["survived"], new["total"]) == (3, 2, 5)
    assert [r["commit"] for r in new["runs"]] == ["old", "new"]
    assert new["ops"] == ["argmax", "linear", "mul", "rms_norm"]
    assert {m["commit"] for m in new["mutants"] if m["op"] == "linear"} == {"new"}


def _vjp_of(op: str, sample) -> list[np.ndarray]:
    arrays, attrs = sample.fresh(), dict(sample.attrs)
    cot = np.random.default_rng(0).standard_normal(gc.evaluate(SPECS[op].run, arrays,
                                                                attrs).shape)
    return gc.vjp(SPECS[op].run, arrays, attrs, sample.wrt, cot)


@pytest.mark.parametrize("op,desc", [
    ("cross_entropy", "drop in-place update: grad[np.arange(t.size), t] -= scale"),
    ("layer_norm", "_norm_grad: in-place Sub -> Add: d -= np.multiply(xhat, proj"),
    ("rms_norm", "_norm_grad: in-place Mult -> Div: d *= rstd"),
    ("norm_linear", "in-place Sub -> Add: d -= K.row_mean(d)"),
    ("norm_linear", "in-place Add -> Sub: grad_w += np.matmul(grad_b"),
    ("causal_self_attention", "rotate(inverse=True) negated: rotate(d,"),
    ("causal_self_attention", "slice write x 2: grad[:, :, 2]"),
    ("linear", "grad[2] negated"),  # the variadic bias input gets wrapped too
])
def test_fused_op_mutation_kinds_exist_and_change_the_gradient(op, desc):
    mutant = next((m for m in M.mutants_for(op) if m["desc"].startswith(desc)), None)
    assert mutant is not None, f"no mutant '{desc}' for {op}"
    cls = mt.REGISTRY[op]
    original = cls.__dict__["vjp"]
    samples = [s for s in SPECS[op].make_samples() if op != "causal_self_attention"
               or "cos" in s.attrs]  # the rotation only runs with RoPE
    before = [_vjp_of(op, s) for s in samples]
    try:
        M.apply_mutant(mutant)
        after = [_vjp_of(op, s) for s in samples]
    finally:
        cls.vjp = original
    assert any(not np.allclose(a, b) for ga, gb in zip(before, after, strict=True)
               for a, b in zip(ga, gb, strict=True)), f"{op}: '{desc}' changed nothing"
    assert all(np.array_equal(a, b) for ga, gb in zip(before, [_vjp_of(op, s) for s in samples],
                                                      strict=True)
               for a, b in zip(ga, gb, strict=True))  # restored


def test_sample_spreads_over_ops_is_seeded_and_keeps_input_order():
    mutants = [{"op": op, "i": i} for op, n in (("a", 10), ("b", 3), ("c", 1)) for i in range(n)]
    drawn = M.sample(mutants, 6, seed=1)
    assert len(drawn) == 6 and drawn == M.sample(mutants, 6, seed=1)
    ops = [m["op"] for m in drawn]
    assert ops.count("c") == 1 and ops.count("b") >= 2  # every op before any op twice
    assert drawn == [m for m in mutants if m in drawn]  # input order
    assert M.sample(mutants, 100, seed=0) == mutants  # more than there are: all of them
