"""Coverage is provable in both directions: every registered op and composite has exactly one
spec, every spec describes something registered, the required sample families are present, every
Op documents its math, and every public Tensor method runs through registered ops."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import hooks
from verification.specs import MARGIN, PAIRS, SPECS, sid

# Tensor members that are not computations: bookkeeping, conversion out of the engine, metadata.
NON_OPS = {
    "backward", "detach", "item", "numpy", "tolist", "zero_grad", "requires_grad_", "size", "dim",
    "numel", "shape", "dtype", "ndim", "is_leaf", "grad_fn", "data", "grad", "requires_grad",
    "accumulate_grad", "contiguous", "is_floating_point", "zero_", "fill_", "__float__", "__int__",
    "__bool__", "__index__", "__iter__", "__format__", "cpu", "device", "__array__", "retain_grad",
    "retains_grad", "nelement",
    # factories of new tensors (no computation on self), and int(), which refuses (no int32)
    "new_zeros", "new_ones", "new_full", "new_tensor", "int",
}
# Python protocol members of Tensor that are not operators.
PROTOCOL = {"__module__", "__doc__", "__slots__", "__init__", "__len__",
            "__repr__", "__hash__", "__weakref__"}


def _x():
    return mt.Tensor(np.arange(1.0, 7.0).reshape(2, 3) / 7.0, requires_grad=True)


# One call per public Tensor member that computes; each must reach at least one registered op.
CALLS = {
    "add": lambda x: x.add(x), "sub": lambda x: x.sub(1.0), "mul": lambda x: x.mul(x),
    "div": lambda x: x.div(2.0), "matmul": lambda x: x.matmul(x.T), "pow": lambda x: x.pow(2),
    "neg": lambda x: x.neg(), "exp": lambda x: x.exp(), "log": lambda x: x.log(),
    "sqrt": lambda x: x.sqrt(), "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(), "abs": lambda x: x.abs(), "gelu": lambda x: x.gelu(),
    "rsqrt": lambda x: x.rsqrt(), "sum": lambda x: x.sum(1), "mean": lambda x: x.mean(),
    "var": lambda x: x.var(0), "amax": lambda x: x.amax(1), "max": lambda x: x.max(1),
    "argmax": lambda x: x.argmax(1), "softmax": lambda x: x.softmax(0),
    "log_softmax": lambda x: x.log_softmax(-1), "reshape": lambda x: x.reshape(3, 2),
    "view": lambda x: x.view(6), "permute": lambda x: x.permute(1, 0),
    "transpose": lambda x: x.transpose(0, 1), "swapaxes": lambda x: x.swapaxes(0, 1),
    "T": lambda x: x.T, "mT": lambda x: x.mT, "unsqueeze": lambda x: x.unsqueeze(0),
    "squeeze": lambda x: x.unsqueeze(1).squeeze(1), "flatten": lambda x: x.flatten(),
    "masked_fill": lambda x: x.masked_fill(x.data > 0.3, 0.0), "eq": lambda x: x.eq(x),
    "ne": lambda x: x.ne(0.5), "to": lambda x: x.to(np.float32), "float": lambda x: x.float(),
    "double": lambda x: x.float().double(), "long": lambda x: x.detach().long(),
    "__add__": lambda x: x + 1.0, "__radd__": lambda x: 1.0 + x, "__sub__": lambda x: x - x,
    "__rsub__": lambda x: 1.0 - x, "__mul__": lambda x: x * 2.0, "__rmul__": lambda x: 2.0 * x,
    "__truediv__": lambda x: x / x, "__rtruediv__": lambda x: 1.0 / x,
    "__matmul__": lambda x: x @ x.T, "__rmatmul__": lambda x: np.ones((3, 2)) @ x,
    "__pow__": lambda x: x**3, "__rpow__": lambda x: 2.0**x, "__neg__": lambda x: -x,
    "__lt__": lambda x: x < 0.5, "__le__": lambda x: x <= 0.5, "__gt__": lambda x: x > 0.5,
    "__ge__": lambda x: x >= 0.5, "__getitem__": lambda x: x[0, 1:],
    "expand": lambda x: x[:1].expand(4, 3), "expand_as": lambda x: x[:1].expand_as(x),
    "clone": lambda x: x.clone(), "sin": lambda x: x.sin(), "cos": lambda x: x.cos(),
    "square": lambda x: x.square(), "reciprocal": lambda x: x.reciprocal(),
    "clamp": lambda x: x.clamp(0.2, 0.6), "clip": lambda x: x.clip(max=0.5),
    "maximum": lambda x: x.maximum(x.T.T * 0.5 + 0.2), "minimum": lambda x: x.minimum(0.4),
    "amin": lambda x: x.amin(1), "min": lambda x: x.min(0), "argmin": lambda x: x.argmin(1),
    "std": lambda x: x.std(1), "logsumexp": lambda x: x.logsumexp(1),
    "isfinite": lambda x: x.isfinite(),
    "flip": lambda x: x.flip(1), "split": lambda x: x.split(2, 1)[1],
    "chunk": lambda x: x.chunk(2, 0)[0], "mm": lambda x: x.mm(x.T), "mv": lambda x: x.mv(x[0]),
    "bmm": lambda x: x[None].bmm(x.T[None]), "dot": lambda x: x[0].dot(x[1]),
    "floor_divide": lambda x: x.floor_divide(0.3), "remainder": lambda x: x.remainder(0.3),
    "__floordiv__": lambda x: x // 0.3, "__rfloordiv__": lambda x: 1.0 // x,
    "__mod__": lambda x: x % 0.3, "__rmod__": lambda x: 1.0 % x,
    "bitwise_not": lambda x: (x > 0.3).bitwise_not(), "__invert__": lambda x: ~(x > 0.3),
    "bitwise_and": lambda x: (x > 0.3).bitwise_and(x < 0.6),
    "bitwise_or": lambda x: (x > 0.3).bitwise_or(x < 0.2),
    "bitwise_xor": lambda x: (x > 0.3).bitwise_xor(x < 0.6),
    "__and__": lambda x: (x > 0.3) & (x < 0.6), "__rand__": lambda x: True & (x > 0.3),
    "__or__": lambda x: (x > 0.3) | (x < 0.2), "__ror__": lambda x: False | (x > 0.3),
    "__xor__": lambda x: (x > 0.3) ^ (x < 0.6), "__rxor__": lambda x: True ^ (x > 0.3),
    "logical_not": lambda x: x.logical_not(), "any": lambda x: x.any(1), "all": lambda x: x.all(),
    "__eq__": lambda x: x == 0.5, "__ne__": lambda x: x != 0.5, "__abs__": lambda x: abs(x),
    "add_": lambda x: (x * 1).add_(x, alpha=2), "sub_": lambda x: (x * 1).sub_(x),
    "mul_": lambda x: (x * 1).mul_(x), "div_": lambda x: (x * 1).div_(2.0),
    "pow_": lambda x: (x * 1).pow_(2), "clamp_": lambda x: (x * 1).clamp_(0.2, 0.6),
    "copy_": lambda x: mt.zeros(2, 3).copy_(x), "__iadd__": lambda x: _twice(x, "__iadd__"),
    "__isub__": lambda x: _twice(x, "__isub__"), "__imul__": lambda x: _twice(x, "__imul__"),
    "__itruediv__": lambda x: _twice(x, "__itruediv__"),
    "__ifloordiv__": lambda x: _twice(x, "__ifloordiv__"),
    "__imod__": lambda x: _twice(x, "__imod__"), "__ipow__": lambda x: _twice(x, "__ipow__"),
    "__iand__": lambda x: _twice(x > 0.3, "__iand__"),
    "__ior__": lambda x: _twice(x > 0.3, "__ior__"),
    "__ixor__": lambda x: _twice(x > 0.3, "__ixor__"),
    "__setitem__": lambda x: _twice(x, "__setitem__"),
    "gather": lambda x: x.gather(1, mt.tensor([[0, 2], [1, 1]])),
    "__array_ufunc__": lambda x: np.ones((2, 3)) * x, "log10": lambda x: x.log10(),
    "sign": lambda x: x.sign(), "floor": lambda x: x.floor(), "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(), "trunc": lambda x: x.trunc(), "log1p": lambda x: x.log1p(),
    "expm1": lambda x: x.expm1(), "log2": lambda x: x.log2(), "isnan": lambda x: x.isnan(),
    "isinf": lambda x: x.isinf(), "nan_to_num": lambda x: x.nan_to_num(),
    "clamp_min": lambda x: x.clamp_min(0.3), "clamp_max": lambda x: x.clamp_max(x.T.T * 0.5),
    "lerp": lambda x: x.lerp(x * 2, 0.3), "lt": lambda x: x.lt(0.5), "le": lambda x: x.le(x),
    "gt": lambda x: x.gt(0.5), "ge": lambda x: x.ge(0.5),
    "where": lambda x: x.where(x.data > 0.3, 0.0),
    "masked_fill_": lambda x: (x * 1).masked_fill_(x.data > 0.3, 0.0),
    "exp_": lambda x: (x * 1).exp_(), "log_": lambda x: (x * 1).log_(),
    "sqrt_": lambda x: (x * 1).sqrt_(), "neg_": lambda x: (x * 1).neg_(),
    "abs_": lambda x: (x * 1).abs_(), "sigmoid_": lambda x: (x * 1).sigmoid_(),
    "tanh_": lambda x: (x * 1).tanh_(), "relu_": lambda x: (x * 1).relu_(),
    "t": lambda x: x.t(), "view_as": lambda x: x.view_as(x.T), "repeat": lambda x: x.repeat(2, 1),
    "unbind": lambda x: x.unbind(1), "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(0, 1), "index_select": lambda x: x.index_select(1, mt.tensor([2])),
    "type_as": lambda x: x.type_as(mt.zeros(1)), "bool": lambda x: x.bool(),
    "cumsum": lambda x: x.cumsum(1), "prod": lambda x: x.prod(0), "sort": lambda x: x.sort(),
    "argsort": lambda x: x.argsort(0),
}


def _twice(x, method):
    """x <op>= x on a copy of x (in place); for __setitem__, copy[0] = x[1]."""
    y = x * 1 if x.dtype != np.bool_ else x.bitwise_and(True)
    if method == "__setitem__":
        y[0] = x[1]
        return y
    return getattr(y, method)(x)


def _public_members() -> set[str]:
    members = {n for n in dir(mt.Tensor) if not n.startswith("_")}
    members |= {n for n in vars(mt.Tensor) if n.startswith("__")} - PROTOCOL
    return members


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


def test_tensor_methods_resolve_to_registered_ops():
    members = _public_members()
    unlisted = sorted(members - set(CALLS) - NON_OPS)
    stale = sorted((set(CALLS) | NON_OPS) - members)
    assert not unlisted and not stale, (
        f"Tensor members with no call in CALLS (nor in NON_OPS): {unlisted}; stale: {stale}")
    bad = {}
    for name, call in sorted(CALLS.items()):
        seen: list[str] = []
        hooks.forward_hooks.append(lambda op, *_, seen=seen: seen.append(op.name))
        try:
            out = call(_x())
        finally:
            hooks.forward_hooks.pop()
        unknown = [n for n in seen if mt.REGISTRY.get(n) is None]
        if not seen or unknown or not isinstance(out, (mt.Tensor, tuple)):
            bad[name] = seen
    assert not bad, f"Tensor members that bypass the registry (ops seen): {bad}"
