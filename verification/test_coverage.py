"""Coverage is provable in both directions: every registered op and composite has exactly one
spec, every spec describes something registered, the required sample families are present, every
Op documents its math, and every public Tensor method runs through registered ops."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import runtime
from verification.specs import MARGIN, PAIRS, SPECS, sid
from verification.specs.methods import CALLS, NON_OPS

# Python protocol members of Tensor that are not operators.
PROTOCOL = {"__module__", "__doc__", "__slots__", "__init__", "__len__",
            "__repr__", "__hash__", "__weakref__"}
# The Tensor class of each family module (engine/tensor/<family>.py), the core included.
FAMILIES = {name: cls for cls in mt.Tensor.__mro__
            if (name := cls.__module__.rpartition(".")[2]) in CALLS}


def _x():
    return mt.Tensor(np.arange(1.0, 7.0).reshape(2, 3) / 7.0, requires_grad=True)


def _members(cls: type) -> set[str]:
    """The public members a class defines itself, and its operators."""
    return {n for n in vars(cls) if not n.startswith("_") or n.startswith("__")} - PROTOCOL


def coverage_diff() -> tuple[list[str], list[str]]:
    """(registered names with no spec, spec names with nothing registered)."""
    registered = set(mt.REGISTRY) | set(mt.COMPOSITES)
    return sorted(registered - set(SPECS)), sorted(set(SPECS) - registered)


def test_specs_match_registry(record):
    """set(REGISTRY) | set(COMPOSITES) == set(SPECS), with a diff naming both sides."""
    registered = set(mt.REGISTRY) | set(mt.COMPOSITES)
    missing, stale = coverage_diff()
    record("coverage", "registry", f"{len(registered)} registered, {len(SPECS)} specs",
           len(missing) + len(stale), None, {"exact": True}, not (missing or stale),
           missing=missing, stale=stale)
    assert not missing and not stale, (
        f"ops without a spec (add them to verification/specs/<family>.py): {missing}; "
        f"specs for nothing registered (remove them): {stale}")


def _broadcasts(op) -> bool:
    """Does `op` act elementwise with broadcasting on two float operands? (probe, no spec used)"""
    for sa, sb in PAIRS:
        a, b = mt.Tensor(np.ones(sa), True), mt.Tensor(np.ones(sb), True)
        try:
            out = mt.apply(op, a, b)
            if op.differentiable:  # both operands must be real inputs, with gradients
                out.backward(np.ones(out.shape))
        except Exception:
            return False
        if out.shape != np.broadcast_shapes(sa, sb):
            return False
    return True


def test_binary_specs_have_broadcast_pairs():
    probed = {n for n, op in mt.REGISTRY.items() if _broadcasts(op)}
    undeclared = sorted(n for n in probed if n in SPECS and not SPECS[n].binary)
    assert not undeclared, f"ops that broadcast but whose spec is not marked binary: {undeclared}"
    problems = {}
    for name in sorted(probed | {n for n, s in SPECS.items() if s.binary}):
        ids = {s.id for s in SPECS[name].make_samples()}
        lacking = [sid(a, b) for a, b in PAIRS if sid(a, b) not in ids]
        if lacking:
            problems[name] = lacking
    assert not problems, f"binary specs missing broadcast pairs: {problems}"
    assert {"add", "mul", "where", "masked_fill"} <= probed | {
        n for n, s in SPECS.items() if s.binary}


def test_matmul_samples_broadcast_batch_dims():
    """Batched matmul samples include unequal batch dims, and a 2-D operand against a batch."""
    pairs = [(a.shape, b.shape) for a, b in (s.inputs for s in SPECS["matmul"].make_samples())]
    assert any(min(len(a), len(b)) > 2 and a[:-2] != b[:-2] for a, b in pairs), pairs
    assert any(2 == min(len(a), len(b)) < max(len(a), len(b)) for a, b in pairs), pairs


def test_samples_cover_shape_families():
    """Ops that take a scalar take every rank 0..3; every spec has a non-contiguous input."""
    problems = []
    for name, spec in sorted(SPECS.items()):
        samples = spec.make_samples()
        if not any(not a.flags.c_contiguous for s in samples for a in s.inputs):
            problems.append(f"{name}: no non-contiguous (transposed) input")
        if spec.kind == "op" and _takes_scalar(mt.REGISTRY[name]):
            ranks = {a.ndim for s in samples for a in s.inputs if a.dtype.kind == "f"}
            if not {0, 1, 2, 3} <= ranks:
                problems.append(f"{name}: float input ranks {sorted(ranks)} lack some of 0..3")
    assert not problems, "\n".join(problems)


def _takes_scalar(op) -> bool:
    for n_inputs in (1, 2):
        try:
            mt.apply(op, *[mt.Tensor(np.array(0.5))] * n_inputs)
            return True
        except Exception:
            continue
    return False


@pytest.mark.parametrize("name", ["getitem", "embedding", "cross_entropy"])
def test_index_specs_include_repeated_indices(name):
    def repeated(arr):
        return isinstance(arr, np.ndarray) and arr.dtype.kind in "iu" and (
            np.unique(arr).size < arr.size)

    found = False
    for s in SPECS[name].make_samples():
        index = s.attrs.get("index")
        parts = index if isinstance(index, tuple) else (index,)
        found |= any(repeated(p) for p in parts) or any(repeated(a) for a in s.inputs)
    assert found, f"{name}: no sample with a repeated index"


# How far from its kink or domain edge every differentiable sample of these ops must stay.
KINK_DISTANCE = {
    "relu": lambda s: np.abs(s.inputs[0]).min(),
    "abs": lambda s: np.abs(s.inputs[0]).min(),
    "div": lambda s: np.abs(s.inputs[1]).min(),
    "log": lambda s: s.inputs[0].min(),
    "sqrt": lambda s: s.inputs[0].min(),
    "pow": lambda s: np.inf if float(s.attrs["exponent"]).is_integer() else s.inputs[0].min(),
    "max": lambda s: np.diff(np.sort(s.inputs[0], axis=None)).min(initial=np.inf),
}


@pytest.mark.parametrize("name", sorted(KINK_DISTANCE))
def test_samples_stay_away_from_kinks(name):
    worst = min(KINK_DISTANCE[name](s) for s in SPECS[name].make_samples())
    assert worst >= max(1e-3, MARGIN / 2), f"{name}: a sample is {worst:.3g} from its kink/edge"


def test_every_op_documents_its_math():
    problems = []
    for name, op in sorted(mt.REGISTRY.items()):
        doc = " ".join((op.__dict__.get("__doc__") or "").split())
        if "y =" not in doc:
            problems.append(f"{name}: docstring lacks the forward ('y = ...')")
        if op.differentiable and "grad" not in doc:
            problems.append(f"{name}: docstring lacks the gradient rule ('grad_x = ...')")
        if not op.differentiable and "not differentiable" not in doc:
            problems.append(f"{name}: non-differentiable op must say so in its docstring")
    assert not problems, "\n".join(problems)


def test_spec_fields_are_complete():
    problems = []
    for name, spec in sorted(SPECS.items()):
        if spec.torch is None:
            problems.append(f"{name}: no torch reference")
        if not spec.domain:
            problems.append(f"{name}: no domain")
        if spec.tol is not None and not spec.tol.reason:
            problems.append(f"{name}: tolerance without a reason")
        for key, reason in (spec.xfail or {}).items():
            if not reason:
                problems.append(f"{name}: xfail {key} without a reason")
        if spec.kind == "op" and spec.differentiable != mt.REGISTRY[name].differentiable:
            problems.append(f"{name}: spec and op disagree on differentiability")
    assert not problems, "\n".join(problems)


def test_every_tensor_member_is_listed_under_its_own_family():
    """Each family module's members are exactly its CALLS and NON_OPS entries (specs/methods.py),
    so a method lives in the module its family names, and a new one cannot go unchecked."""
    assert set(FAMILIES) == set(CALLS), f"families without a mixin: {set(CALLS) - set(FAMILIES)}"
    problems = []
    for family, cls in FAMILIES.items():
        listed = set(CALLS[family]) | NON_OPS.get(family, set())
        members = _members(cls)
        if members != listed:
            problems.append(f"{family} ({cls.__module__}): unlisted {sorted(members - listed)}, "
                            f"listed elsewhere or stale {sorted(listed - members)}")
    assert not problems, "\n".join(problems)


def test_no_family_overrides_another():
    """A member is defined by one family only (a second definition would shadow the first
    silently, by the order of Tensor's bases)."""
    owners: dict[str, list[str]] = {}
    for family, cls in FAMILIES.items():
        for name in _members(cls):
            owners.setdefault(name, []).append(family)
    assert not {n: f for n, f in owners.items() if len(f) > 1}


def test_tensor_methods_resolve_to_registered_ops():
    bad = {}
    calls = {name: call for family in CALLS.values() for name, call in family.items()}
    for name, call in sorted(calls.items()):
        seen: list[str] = []
        runtime.forward_hooks.append(lambda op, *_, seen=seen: seen.append(op.name))
        try:
            out = call(_x())
        finally:
            runtime.forward_hooks.pop()
        unknown = [n for n in seen if mt.REGISTRY.get(n) is None]
        if not seen or unknown or not isinstance(out, (mt.Tensor, tuple)):
            bad[name] = seen
    assert not bad, f"Tensor members that bypass the registry (ops seen): {bad}"


def test_every_opinfo_of_minitorch_api_is_mapped():
    """A function, Tensor method or nn.functional entry minitorch has, that an OpInfo of torch's
    op_db carries (by name or alias), must be in the OpInfo table (opinfo_table.MAPPED): a new
    op lands with its OpInfo samples run, as it lands with its spec."""
    pytest.importorskip("torch")
    pytest.importorskip("expecttest")
    from minitorch.nn import functional as F
    from verification.opinfo import db
    from verification.opinfo_table import MAPPED, NOT_IN_API

    def has(n: str) -> bool:
        if n.startswith("nn.functional."):
            return hasattr(F, n.removeprefix("nn.functional."))
        return "." not in n and (callable(getattr(mt, n, None)) or hasattr(mt.Tensor, n))

    missing = sorted(full for full, o in db().items() if full not in MAPPED
                     and NOT_IN_API.get(full) not in ("complex", "cuda", "dtype")
                     and any(has(n) for n in [o.name, *(a.name for a in o.aliases)]))
    assert not missing, f"minitorch has these OpInfos' ops, unmapped in opinfo_table: {missing}"
