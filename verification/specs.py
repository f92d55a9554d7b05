"""The spec table: one OpSpec per registered op and per composite (STYLE §6).

Each spec says how to call the op on Tensors, which inputs to try (enumerated shape families drawn
from a seeded generator inside the op's domain), what the forward must equal (a NumPy reference
and, where torch has the op, a torch reference) and which kink conventions hold. This module only
describes; the checks live in gradcheck.py and the test_*.py files.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import minitorch as mt
from minitorch.nn import functional as F

MARGIN = 0.05  # samples stay this far (>= 1e-3) from every kink and domain edge
MAX_ATOL, MAX_RTOL = 1e-5, 1e-3  # never loosen a gradient tolerance beyond PyTorch's defaults


@dataclass(frozen=True)
class Sample:
    """One call: `inputs` become Tensors (float ones are differentiated unless listed in `const`),
    `attrs` are keyword attributes. `id` is stable and shows up in test ids: `mul[(3,1)x(1,4)]`."""

    id: str
    inputs: tuple[np.ndarray, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    const: frozenset[int] = frozenset()

    @property
    def wrt(self) -> tuple[int, ...]:
        """Indices of the inputs the gradient is taken with respect to."""
        return tuple(i for i, a in enumerate(self.inputs)
                     if a.dtype.kind == "f" and i not in self.const)

    def fresh(self) -> list[np.ndarray]:
        """Copies of the inputs with the same memory layout (a transposed view stays strided)."""
        return [np.array(a, copy=True, order="K") for a in self.inputs]


@dataclass(frozen=True)
class Kink:
    """A point where the derivative is a convention: backward of sum(op(inputs)) (or of
    <cotangent, op>) must give exactly `grads`. `doc` must appear in the op's docstring."""

    what: str
    inputs: tuple[np.ndarray, ...]
    grads: tuple[np.ndarray | None, ...]
    doc: str
    attrs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tol:
    """A gradient tolerance looser than the default, with the reason it is needed."""

    atol: float
    rtol: float
    reason: str

    def __post_init__(self):
        if self.atol > MAX_ATOL or self.rtol > MAX_RTOL or not self.reason:
            raise ValueError(f"tolerance {self} is looser than {MAX_ATOL}/{MAX_RTOL} or lacks a "
                             "reason")


@dataclass(frozen=True)
class OpSpec:
    """Everything the suite needs to check one op or composite.

    Args:
        name: the REGISTRY or COMPOSITES name.
        samples: seeded generator: rng -> list of Samples (stable ids).
        reference: NumPy forward, same positional inputs (as arrays) and attrs.
        domain: where samples are drawn, in words.
        torch: torch forward on torch tensors with the same inputs and attrs, or None.
        kinks: conventions checked at the kink.
        tol: looser gradient tolerance (with a reason), or None for the defaults.
        xfail: {"<check>" or "<check>:<sample id>": reason}; applied as strict xfails.
        call: how to run it on Tensors; defaults to apply(REGISTRY[name], *tensors, **attrs).
        differentiable: False for comparisons and argmax (forward checks only).
        binary: an elementwise op of two broadcasting operands (must have broadcast pairs).
        out_dtype: dtype of the output for float32 inputs, if not float32 (sample -> dtype).
    """

    name: str
    samples: Callable[[np.random.Generator], list[Sample]]
    reference: Callable[..., np.ndarray]
    domain: str
    torch: Callable[..., Any] | None = None
    kinks: tuple[Kink, ...] = ()
    tol: Tol | None = None
    xfail: Mapping[str, str] | None = None
    call: Callable[..., mt.Tensor] | None = None
    differentiable: bool = True
    binary: bool = False
    out_dtype: Callable[[Sample], Any] | None = None

    @property
    def kind(self) -> str:
        return "composite" if self.name in mt.COMPOSITES else "op"

    def run(self, *tensors: mt.Tensor, **attrs: Any) -> mt.Tensor:
        if self.call is not None:
            return self.call(*tensors, **attrs)
        return mt.apply(mt.REGISTRY[self.name], *tensors, **attrs)

    def make_samples(self) -> list[Sample]:
        if self.name not in _SAMPLES:
            rng = np.random.default_rng(zlib.crc32(self.name.encode()))
            samples = self.samples(rng)
            ids = [s.id for s in samples]
            if len(set(ids)) != len(ids):
                raise ValueError(f"spec '{self.name}': duplicate sample ids {ids}")
            _SAMPLES[self.name] = samples
        return _SAMPLES[self.name]

    def xfail_reason(self, check: str, sample_id: str) -> str | None:
        xf = self.xfail or {}
        return xf.get(f"{check}:{sample_id}") or xf.get(check)


_SAMPLES: dict[str, list[Sample]] = {}

# ---- domains: value generators (float64) ------------------------------------------------------
Draw = Callable[[np.random.Generator, tuple], np.ndarray]


def real(rng, shape):
    return rng.standard_normal(shape)


def away0(rng, shape):
    """Reals with |x| >= MARGIN (kink at 0)."""
    return rng.uniform(MARGIN, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def positive(rng, shape):
    return rng.uniform(0.2, 2.0, shape)


def distinct(rng, shape):
    """All values distinct, pairwise at least 0.1 apart (no ties for max)."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * 0.25 + rng.uniform(0, 0.1)).reshape(shape)


def small_ints(rng, shape):
    """Values in {-1, 0, 1} as floats: many ties, to exercise equal/less_equal at equality."""
    return rng.integers(-1, 2, shape).astype(np.float64)


SHAPES = [(), (3,), (2, 3), (2, 3, 4)]
BIG = (4, 5, 6)  # 120 elements: more than gradcheck.FULL_MAX, so checked by random projections
PAIRS = [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3))]  # required broadcast pairs


def sid(*shapes: tuple) -> str:
    """'(3,1)x(1,4)' style id."""
    return "x".join("(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
                    for s in shapes)


def unary(draw: Draw, attrs: Mapping | None = None, scalar: bool = True):
    """Samples (), (3,), (2,3), (2,3,4) and a transposed (non-contiguous) (3,2).T view."""

    def make(rng):
        shapes = SHAPES if scalar else SHAPES[1:]
        out = [Sample(sid(s), (draw(rng, s),), dict(attrs or {})) for s in shapes]
        out.append(Sample("(3,2).T", (draw(rng, (3, 2)).T,), dict(attrs or {})))
        out.append(Sample(sid(BIG), (draw(rng, BIG),), dict(attrs or {})))
        return out

    return make


def binary(draw_a: Draw, draw_b: Draw):
    """Same-shape pairs, a transposed pair, and the three required broadcast pairs."""

    def make(rng):
        out = [Sample(sid(s, s), (draw_a(rng, s), draw_b(rng, s))) for s in SHAPES]
        out.append(Sample("(3,2).Tx(2,3)", (draw_a(rng, (3, 2)).T, draw_b(rng, (2, 3)))))
        out += [Sample(sid(sa, sb), (draw_a(rng, sa), draw_b(rng, sb)))
                for sa, sb in PAIRS + [(BIG, BIG[-1:])]]
        return out

    return make


def reduction(draw: Draw, extra: Mapping | None = None, scalar: bool = True):
    """Samples over the reduced axes: all, one, negative, several, keepdims."""
    cases = [((), None, False), ((3,), None, False), ((2, 3), 1, False), ((2, 3), 0, True),
             ((2, 3, 4), (0, 2), False), ((2, 3, 4), -1, True), ((2, 3, 4), None, True),
             (BIG, 1, False)]
    if not scalar:
        cases = cases[1:]

    def make(rng):
        out = []
        for shape, axis, keep in cases:
            attrs = {"axis": axis, "keepdims": keep, **(extra or {})}
            out.append(Sample(f"{sid(shape)},axis={axis}{',keep' if keep else ''}",
                              (draw(rng, shape),), attrs))
        out.append(Sample("(3,2).T,axis=0", (draw(rng, (3, 2)).T,),
                          {"axis": 0, "keepdims": False, **(extra or {})}))
        return out

    return make


def along(draw: Draw):
    """Samples for ops along one axis (softmax family), including a large-magnitude row."""

    def make(rng):
        cases = [((), -1), ((3,), -1), ((2, 3), -1), ((2, 3), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
                 (BIG, 1)]
        out = [Sample(f"{sid(s)},axis={a}", (draw(rng, s),), {"axis": a}) for s, a in cases]
        out.append(Sample("(3,2).T,axis=-1", (draw(rng, (3, 2)).T,), {"axis": -1}))
        big = np.array([[800.0, 0.0, -800.0], [-1000.0, -1001.0, -1003.0]])  # exp would overflow
        out.append(Sample("(2,3)huge,axis=-1", (big,), {"axis": -1}))
        return out

    return make


# ---- torch helpers (torch is imported lazily: specs load without it) --------------------------
def _tdtype(dtype):
    import torch

    return {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
            np.dtype(np.int64): torch.int64}[np.dtype(dtype)]


def _tindex(index, shape):
    """A NumPy index as torch accepts it. torch has no negative slice steps, so such a slice
    becomes an index tensor (the same selection when it is the only advanced index)."""
    import torch

    parts = index if isinstance(index, tuple) else (index,)
    out, axis = [], 0
    for p in parts:
        if isinstance(p, slice) and (p.step or 1) < 0:
            out.append(torch.arange(*p.indices(shape[axis])))
        else:
            out.append(torch.from_numpy(p) if isinstance(p, np.ndarray) else p)
        axis = len(shape) - (len(parts) - len(out)) if p is Ellipsis else axis + (p is not None)
    return tuple(out) if isinstance(index, tuple) else out[0]


def _tdims(x, axis):
    return tuple(range(x.ndim)) if axis is None else axis


def _tconst(arr, like):
    import torch

    return torch.from_numpy(np.asarray(arr)).to(like.dtype)


# ---- NumPy references (written independently of the ops) -------------------------------------
def np_logsumexp(x, axis):
    return np.logaddexp.reduce(x, axis=axis, keepdims=True)


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in np.ravel(x)],
                    dtype=np.asarray(x).dtype).reshape(np.shape(x))


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    return y * (1.0 if w is None else w) + (0.0 if b is None else b)


def np_rms_norm(x, w=None, eps=1e-5):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * (1.0 if w is None else w)


def np_cross_entropy(logits, targets):
    V = logits.shape[-1]
    flat = logits.reshape(-1, V)
    logp = flat - np_logsumexp(flat, -1)
    return -np.mean(logp[np.arange(flat.shape[0]), targets.reshape(-1)])


def np_attention(q, k, v, is_causal=True):
    Tq, Tk = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if is_causal:  # query i is position i + Tk - Tq; it sees keys j <= that position
        visible = np.arange(Tk)[None, :] <= np.arange(Tq)[:, None] + (Tk - Tq)
        s = np.where(visible, s, -np.inf)
    return np.exp(s - np_logsumexp(s, -1)) @ v


def np_rope(x, cos, sin):
    half = x.shape[-1] // 2
    z = (x[..., :half] + 1j * x[..., half:]) * (cos + 1j * sin)  # rotation as a complex product
    return np.concatenate([z.real, z.imag], axis=-1)


def t_attention(q, k, v, is_causal=True):
    import torch

    Tq, Tk = q.shape[-2], k.shape[-2]
    mask = torch.ones(Tq, Tk, dtype=torch.bool).tril(Tk - Tq) if is_causal else None
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def t_rope(x, cos, sin):
    import torch

    half = x.shape[-1] // 2
    c, s = _tconst(cos, x), _tconst(sin, x)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def t_layer_norm(x, w=None, b=None, eps=1e-5):
    import torch

    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, eps)


def t_rms_norm(x, w=None, eps=1e-5):
    import torch

    return torch.nn.functional.rms_norm(x, x.shape[-1:], w, eps)


def t_cross_entropy(logits, targets):
    import torch

    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets.reshape(-1))


# ---- the table ------------------------------------------------------------------------------
SPECS: dict[str, OpSpec] = {}


def spec(name: str, samples, reference, domain: str, **kw) -> None:
    if name in SPECS:
        raise ValueError(f"duplicate spec '{name}'")
    SPECS[name] = OpSpec(name, samples, reference, domain, **kw)


def _tt(method: str):
    """torch reference that calls torch.<method>(*inputs)."""

    def ref(*xs, **_):
        import torch

        return getattr(torch, method)(*xs)

    return ref


spec("add", binary(real, real), np.add, "reals", torch=_tt("add"), binary=True)
spec("sub", binary(real, real), np.subtract, "reals", torch=_tt("sub"), binary=True)
spec("mul", binary(real, real), np.multiply, "reals", torch=_tt("mul"), binary=True)
spec("div", binary(real, away0), np.divide, f"a real, |b| >= {MARGIN}", torch=_tt("div"),
     binary=True)
for _n, _f in [("less", np.less), ("less_equal", np.less_equal), ("greater", np.greater),
               ("greater_equal", np.greater_equal), ("equal", np.equal),
               ("not_equal", np.not_equal)]:
    spec(_n, binary(small_ints, small_ints), _f, "{-1, 0, 1} (ties on purpose)",
         torch=_tt({"less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
                    "equal": "eq", "not_equal": "ne"}[_n]),
         differentiable=False, binary=True, out_dtype=lambda s: np.bool_)

spec("neg", unary(real), np.negative, "reals", torch=_tt("neg"))
spec("exp", unary(real), np.exp, "reals", torch=_tt("exp"))
spec("log", unary(positive), np.log, "x in [0.2, 2]", torch=_tt("log"))
spec("sqrt", unary(positive), np.sqrt, "x in [0.2, 2]", torch=_tt("sqrt"),
     kinks=(Kink("sqrt'(0) = inf", (np.array([0.0, 4.0]),), (np.array([np.inf, 0.25]),),
                 doc="at x = 0 the gradient is inf"),))
spec("tanh", unary(real), np.tanh, "reals", torch=_tt("tanh"))
spec("sigmoid", unary(real), lambda x: 1.0 / (1.0 + np.exp(-x)), "reals", torch=_tt("sigmoid"))
spec("relu", unary(away0), lambda x: np.where(x > 0, x, 0.0), f"|x| >= {MARGIN} (kink at 0)",
     torch=_tt("relu"),
     kinks=(Kink("relu'(0) = 0", (np.array([-1.0, 0.0, 1.0]),), (np.array([0.0, 0.0, 1.0]),),
                 doc="relu'(0) = 0"),))
spec("abs", unary(away0), np.abs, f"|x| >= {MARGIN} (kink at 0)", torch=_tt("abs"),
     kinks=(Kink("|x|'(0) = 0", (np.array([-2.0, 0.0, 3.0]),), (np.array([-1.0, 0.0, 1.0]),),
                 doc="|x|'(0) = 0"),))
def _gelu_samples(rng):
    out = []
    for mode in ("none", "tanh"):
        out += [Sample(f"{s.id},{mode}", s.inputs, s.attrs)
                for s in unary(real, {"approximate": mode})(rng)]
    return out


spec("gelu", _gelu_samples, np_gelu, "reals; exact (erf) and tanh-approximated",
     torch=lambda x, approximate: __import__("torch").nn.functional.gelu(
         x, approximate=approximate))


def _power_samples(rng):
    return binary(positive, real)(rng) + [
        Sample("(3,)x(3,),a<0,int b", (-positive(rng, (3,)), np.array([2.0, 3.0, -1.0])),
               const=frozenset({1}))]  # d/db is nan for a < 0 (log a), as in torch


spec("power", _power_samples, np.power,
     "a in [0.2, 2] with real b, or a < 0 with integer b (torch gives nan otherwise)",
     torch=_tt("pow"), binary=True,
     kinks=(Kink("d/db a**b = 0 at a = 0, b >= 0; d/da a**0 = 0",
                 (np.array([0.0, 0.0, 2.0]), np.array([0.0, 2.0, 0.0])),
                 (np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, math.log(2.0)])),
                 doc="0 where a = 0 and b >= 0"),))
spec("copy", unary(real), np.copy, "reals", torch=lambda x: x.clone())


def _broadcast_to_samples(rng):
    cases = [((), (2, 3)), ((3,), (2, 3)), ((3, 1), (2, 3, 4)), ((2, 1, 4), (2, 3, 4)),
             ((1, 1), (1, 1)), ((4, 1, 6), BIG)]
    return [Sample(f"{sid(a)}->{sid(b)}", (real(rng, a),), {"shape": b}) for a, b in cases] + [
        Sample("(1,3,2).T->(4,2,3,5)", (real(rng, (1, 3, 2)).T,), {"shape": (4, 2, 3, 5)})]


spec("broadcast_to", _broadcast_to_samples, lambda x, shape: np.broadcast_to(x, shape),
     "reals; new leading dims and size-1 dims expanded", torch=lambda x, shape: x.expand(shape))


def _pow_samples(rng):
    out = []
    for p, draw in [(2.0, real), (3.0, real), (0.5, positive), (-1.5, positive), (1.0, real)]:
        out += [Sample(f"{sid(s)},p={p}", (draw(rng, s),), {"exponent": p})
                for s in [(), (3,), (2, 3)]]
    out.append(Sample("(3,2).T,p=2.0", (real(rng, (3, 2)).T,), {"exponent": 2.0}))
    out.append(Sample("(2,3,4),p=-1.0", (positive(rng, (2, 3, 4)),), {"exponent": -1.0}))
    out.append(Sample("(4,5,6),p=3.0", (real(rng, BIG),), {"exponent": 3.0}))
    return out


spec("pow", _pow_samples, lambda x, exponent: np.power(x, exponent),
     "reals for integer p, x in [0.2, 2] otherwise",
     torch=lambda x, exponent: x**exponent,
     kinks=(Kink("d/dx x**0 = 0 at x = 0", (np.array([0.0, 2.0]),), (np.zeros(2),),
                 doc="x**0", attrs={"exponent": 0.0}),
            Kink("d/dx x**2 = 0 at x = 0", (np.array([0.0, -1.0]),), (np.array([0.0, -2.0]),),
                 doc="grad_x = g*p*x**(p-1)", attrs={"exponent": 2.0})))


def _astype_samples(rng):
    # In float64 the cast is exact (to float64), so finite differences apply; the float32 dtype
    # check then casts float32 -> float64 and requires a float32 gradient.
    return [Sample(f"{sid(s)},to=float64", (real(rng, s),), {"dtype": np.dtype(np.float64)})
            for s in [(), (3,), (2, 3)]] + [
        Sample("(3,2).T,to=float64", (real(rng, (3, 2)).T,), {"dtype": np.dtype(np.float64)})]


spec("astype", _astype_samples, lambda x, dtype: x.astype(dtype), "reals",
     torch=lambda x, dtype: x.to(_tdtype(dtype)), out_dtype=lambda s: s.attrs["dtype"])


def _where_samples(rng):
    def cond(shape):
        return rng.random(shape) < 0.5

    out = [Sample(sid(s, s), (cond(s), real(rng, s), real(rng, s))) for s in SHAPES]
    out.append(Sample("(3,2).Tx(2,3)", (cond((2, 3)), real(rng, (3, 2)).T, real(rng, (2, 3)))))
    for sa, sb in PAIRS:
        full = np.broadcast_shapes(sa, sb)
        out.append(Sample(sid(sa, sb), (cond(full), real(rng, sa), real(rng, sb))))
    out.append(Sample("cond(3,1)x(1,4)x()", (cond((3, 1)), real(rng, (1, 4)), real(rng, ()))))
    out.append(Sample(sid(BIG, BIG[-1:]), (cond(BIG), real(rng, BIG), real(rng, BIG[-1:]))))
    return out


spec("where", _where_samples, lambda c, a, b: np.where(c, a, b), "reals, random bool condition",
     torch=lambda c, a, b: __import__("torch").where(c, a, b), binary=True)


def _masked_fill_samples(rng):
    pairs = [((2, 3), (2, 3)), ((), ()), ((3,), (3,)), ((2, 3, 4), (2, 3, 4))] + PAIRS + [
        (BIG, BIG[-2:])]
    out = [Sample(sid(sx, sm), (real(rng, sx), rng.random(sm) < 0.5), {"value": -1.5})
           for sx, sm in pairs]
    out.append(Sample("(3,2).Tx(2,3)", (real(rng, (3, 2)).T, rng.random((2, 3)) < 0.5),
                      {"value": 0.0}))
    return out


spec("masked_fill", _masked_fill_samples, lambda x, m, value: np.where(m, value, x),
     "reals, random bool mask (broadcasts with x)",
     torch=lambda x, m, value: x.masked_fill(m, value) if x.shape == m.shape
     else x.expand(np.broadcast_shapes(x.shape, m.shape)).masked_fill(m, value),
     binary=True)

# ---- reductions and the softmax pair --------------------------------------------------------
spec("sum", reduction(real), lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
     "reals", torch=lambda x, axis=None, keepdims=False: x.sum(dim=_tdims(x, axis),
                                                               keepdim=keepdims))
spec("mean", reduction(real), lambda x, axis, keepdims: np.mean(x, axis=axis, keepdims=keepdims),
     "reals", torch=lambda x, axis=None, keepdims=False: x.mean(dim=_tdims(x, axis),
                                                                keepdim=keepdims))


def _var_samples(rng):
    return (reduction(real, {"ddof": 0})(rng)
            + [Sample(s.id + ",ddof=1", s.inputs, {**s.attrs, "ddof": 1})
               for s in reduction(real, {"ddof": 1}, scalar=False)(rng)])


spec("var", _var_samples,
     lambda x, axis, keepdims, ddof: np.var(x, axis=axis, keepdims=keepdims, ddof=ddof), "reals",
     torch=lambda x, axis=None, keepdims=False, ddof=0: x.var(
         dim=_tdims(x, axis), keepdim=keepdims, correction=ddof))


spec("max", reduction(distinct),
     lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
     "distinct values, >= 0.1 apart (no ties)",
     torch=lambda x, axis=None, keepdims=False: x.amax(dim=_tdims(x, axis), keepdim=keepdims),
     kinks=(Kink("ties split: max([1,3,3])", (np.array([1.0, 3.0, 3.0]),),
                 (np.array([0.0, 0.5, 0.5]),), doc="ties split", attrs={"axis": None}),
            Kink("ties split per row, axis=1", (np.array([[2.0, 2.0, 2.0], [0.0, 5.0, 1.0]]),),
                 (np.array([[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]]),), doc="ties split",
                 attrs={"axis": 1}),
            Kink("ties split over all, keepdims", (np.full((2, 2), 7.0),),
                 (np.full((2, 2), 0.25),), doc="ties split",
                 attrs={"axis": None, "keepdims": True})))
def _argmax_samples(rng):
    cases = [((), None, False), ((3,), None, False), ((2, 3), 1, False), ((2, 3), 0, True),
             ((2, 3, 4), -1, False), ((2, 3, 4), 1, True)]
    out = [Sample(f"{sid(s)},axis={a}{',keep' if k else ''}", (distinct(rng, s),),
                  {"axis": a, "keepdims": k}) for s, a, k in cases]
    out.append(Sample("(3,2).T,axis=0", (distinct(rng, (3, 2)).T,), {"axis": 0}))
    return out


spec("argmax", _argmax_samples,
     lambda x, axis=None, keepdims=False: np.argmax(x, axis=axis, keepdims=keepdims),
     "distinct values (no ties)", differentiable=False, out_dtype=lambda s: np.int64,
     torch=lambda x, axis=None, keepdims=False: x.argmax(dim=axis, keepdim=keepdims)
     if axis is not None else x.argmax())
spec("softmax", along(real), lambda x, axis: np.exp(x - np_logsumexp(x, axis)),
     "reals, plus a row that would overflow exp", torch=lambda x, axis: x.softmax(axis))
spec("log_softmax", along(real), lambda x, axis: x - np_logsumexp(x, axis),
     "reals, plus a row that would overflow exp", torch=lambda x, axis: x.log_softmax(axis))


# ---- linear algebra -------------------------------------------------------------------------
def _matmul_samples(rng):
    pairs = [((2, 3), (3, 4)), ((4, 4), (4, 4)), ((3, 1), (1, 4)), ((2, 2, 3), (2, 3, 4)),
             ((2, 2, 3), (3, 4)), ((2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 3, 2)),
             ((3, 8, 5), (5, 6)), ((2, 1, 4, 5), (3, 5, 6))]
    out = [Sample(sid(a, b), (real(rng, a), real(rng, b))) for a, b in pairs]
    out.append(Sample("(3,2).Tx(3,4)", (real(rng, (3, 2)).T, real(rng, (3, 4)))))
    out.append(Sample("(2,3)x(4,3).T", (real(rng, (2, 3)), real(rng, (4, 3)).T)))
    return out


spec("matmul", _matmul_samples, np.matmul, "reals; 2-D and batched, batch dims broadcast",
     torch=_tt("matmul"))


# ---- shape and indexing -----------------------------------------------------------------------
def _reshape_samples(rng):
    cases = [((), (1,)), ((3,), (3, 1)), ((2, 3), (3, 2)), ((2, 3, 4), (4, -1)),
             ((2, 3, 4), (24,)), ((1,), ()), (BIG, (6, -1, 2))]
    out = [Sample(f"{sid(s)}->{sid(t)}", (real(rng, s),), {"shape": t}) for s, t in cases]
    out.append(Sample("(3,2).T->(6,)", (real(rng, (3, 2)).T,), {"shape": (6,)}))
    return out


spec("reshape", _reshape_samples, lambda x, shape: np.reshape(x, shape), "reals",
     torch=lambda x, shape: x.reshape(shape))


def _permute_samples(rng):
    cases = [((), ()), ((3,), (0,)), ((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)),
             ((2, 3, 4), (-1, 0, 1)), ((2, 3, 4), (0, 2, 1)), (BIG, (1, 2, 0))]
    out = [Sample(f"{sid(s)},axes={a}", (real(rng, s),), {"axes": a}) for s, a in cases]
    out.append(Sample("(3,2).T,axes=(1, 0)", (real(rng, (3, 2)).T,), {"axes": (1, 0)}))
    return out


spec("permute", _permute_samples, lambda x, axes: np.transpose(x, axes), "reals",
     torch=lambda x, axes: x.permute(tuple(axes)))


def _getitem_samples(rng):
    cases = [
        ("(3,)[1]", (3,), 1),
        ("(2,3)[-1]", (2, 3), -1),
        ("(2,3)[:,1:]", (2, 3), (slice(None), slice(1, None))),
        ("(2,3,4)[...,::-2]", (2, 3, 4), (Ellipsis, slice(None, None, -2))),
        ("(2,3)[None,1]", (2, 3), (None, 1)),
        ("()[()]", (), ()),
        ("(4,)[[0,0,2,0]]", (4,), np.array([0, 0, 2, 0])),
        ("(3,4)[[0,2,0],[1,1,1]]", (3, 4), (np.array([0, 2, 0]), np.array([1, 1, 1]))),
        ("(3,4)[[[2,2],[0,2]]]", (3, 4), np.array([[2, 2], [0, 2]])),
        ("(2,3)[mask]", (2, 3), np.array([[True, False, True], [False, False, True]])),
        ("(2,3,4)[:,[1,1]]", (2, 3, 4), (slice(None), np.array([1, 1]))),
        ("(4,5,6)[[3,0,3],1:]", BIG, (np.array([3, 0, 3]), slice(1, None))),
    ]
    out = [Sample(i, (real(rng, s),), {"index": idx}) for i, s, idx in cases]
    out.append(Sample("(3,2).T[1:]", (real(rng, (3, 2)).T,), {"index": slice(1, None)}))
    return out


spec("getitem", _getitem_samples, lambda x, index: np.asarray(x[index]),
     "reals; basic, integer-array (with repeats) and bool indices",
     torch=lambda x, index: x[_tindex(index, x.shape)])


def _variadic_samples(cases, transposed_with):
    """Samples for an op over several tensors along `axis`: the listed shape cases, plus a
    transposed (non-contiguous) (3,2).T joined with one of shape `transposed_with`."""

    def make(rng):
        out = [Sample(sid(*ss) + f",axis={a}", tuple(real(rng, s) for s in ss), {"axis": a})
               for ss, a in cases]
        out.append(Sample(f"(3,2).Tx{sid(transposed_with)},axis=0",
                          (real(rng, (3, 2)).T, real(rng, transposed_with)), {"axis": 0}))
        return out

    return make


_cat_samples = _variadic_samples(
    [([(3,), (2,)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3, 4), (1, 3, 4)], 0),
     ([(2, 3), (2, 3)], -1), ([(1,)], 0), ([BIG, (4, 2, 6)], 1)], (1, 3))


spec("concatenate", _cat_samples, lambda *xs, axis: np.concatenate(xs, axis=axis), "reals",
     torch=lambda *xs, axis: __import__("torch").cat(xs, dim=axis))


_stack_samples = _variadic_samples(
    [([(), ()], 0), ([(3,), (3,), (3,)], 0), ([(2, 3), (2, 3)], 1),
     ([(2, 3, 4), (2, 3, 4)], -1), ([(2,)], 0), ([BIG, BIG], 2)], (2, 3))


spec("stack", _stack_samples, lambda *xs, axis: np.stack(xs, axis=axis), "reals",
     torch=lambda *xs, axis: __import__("torch").stack(xs, dim=axis))


def _embedding_samples(rng):
    cases = [("ids(5,)[repeats]", np.array([1, 1, 3, 0, 1]), (4, 3)),
             ("ids(2,3)[repeats]", np.array([[2, 0, 2], [2, 1, 0]]), (3, 4)),
             ("ids()", np.array(2), (4, 2)),
             ("ids(2,2)[all same]", np.full((2, 2), 1), (2, 3)),
             ("ids(4,6)xW(10,8)", np.arange(24).reshape(4, 6) % 7, (10, 8))]
    out = [Sample(i, (ids, real(rng, w))) for i, ids, w in cases]
    out.append(Sample("ids(3,)xW(3,4).T", (np.array([0, 3, 3]), real(rng, (3, 4)).T)))
    return out


spec("embedding", _embedding_samples, lambda ids, w: np.take(w, ids, axis=0),
     "reals; integer ids in range, with repeated ids",
     torch=lambda ids, w: __import__("torch").nn.functional.embedding(ids, w))


# ---- composites -------------------------------------------------------------------------------
def _linear_samples(rng):
    return [Sample("(2,3)x(4,3)+b", (real(rng, (2, 3)), real(rng, (4, 3)), real(rng, (4,)))),
            Sample("(2,2,3)x(4,3)", (real(rng, (2, 2, 3)), real(rng, (4, 3)))),
            Sample("(1,3)x(2,3)+b", (real(rng, (1, 3)), real(rng, (2, 3)), real(rng, (2,)))),
            Sample("(4,5,6)x(7,6)+b", (real(rng, BIG), real(rng, (7, 6)), real(rng, (7,)))),
            Sample("(3,2).Tx(4,3)+b", (real(rng, (3, 2)).T, real(rng, (4, 3)), real(rng, (4,))))]


for _name, _call in [("linear", F.linear), ("linear_composite", F.linear_composite)]:
    spec(_name, _linear_samples, lambda x, w, b=None: x @ w.T + (0.0 if b is None else b),
         "reals", call=_call,
         torch=lambda x, w, b=None: __import__("torch").nn.functional.linear(x, w, b))


def _norm_samples(affine: int):
    def make(rng):
        shapes = [(2, 3), (2, 3, 4), (4,), BIG]
        out = [Sample(sid(s) + ",affine", (real(rng, s), *(real(rng, s[-1:]) for _ in
                                                            range(affine)))) for s in shapes]
        out.append(Sample("(2,3),plain", (real(rng, (2, 3)),)))
        out.append(Sample("(3,2).T,affine", (real(rng, (3, 2)).T,
                                             *(real(rng, (3,)) for _ in range(affine)))))
        out.append(Sample("(2,4)offset,eps=0.1", (real(rng, (2, 4)) * 0.1 + 3.0,
                                                  *(real(rng, (4,)) for _ in range(affine))),
                          {"eps": 0.1}))
        return out

    return make


for _name, _fn in [("layer_norm", F.layer_norm), ("layer_norm_composite", F.layer_norm_composite)]:
    spec(_name, _norm_samples(2), np_layer_norm, "reals (and a row far from zero mean)",
         call=lambda x, w=None, b=None, _fn=_fn, **kw: _fn(x, w, b, **kw), torch=t_layer_norm)
for _name, _fn in [("rms_norm", F.rms_norm), ("rms_norm_composite", F.rms_norm_composite)]:
    spec(_name, _norm_samples(1), np_rms_norm, "reals",
         call=lambda x, w=None, _fn=_fn, **kw: _fn(x, w, **kw), torch=t_rms_norm)


def _ce_samples(rng):
    return [Sample("(4,5),t[repeats]", (real(rng, (4, 5)), np.array([1, 1, 4, 0]))),
            Sample("(2,3,5)", (real(rng, (2, 3, 5)), rng.integers(0, 5, (2, 3)))),
            Sample("(1,3)", (real(rng, (1, 3)), np.array([2]))),
            Sample("(3,4)huge", (real(rng, (3, 4)) * 300.0, np.array([0, 3, 1]))),
            Sample("(5,4).T", (real(rng, (5, 4)).T, np.array([4, 0, 0, 2]))),
            Sample("(2,6,12)", (real(rng, (2, 6, 12)), rng.integers(0, 12, (2, 6))))]


for _name, _call in [("cross_entropy", F.cross_entropy),
                     ("cross_entropy_composite", F.cross_entropy_composite)]:
    spec(_name, _ce_samples, np_cross_entropy, "reals; integer targets in range (repeats)",
         call=_call, torch=t_cross_entropy)


def _attn_samples(rng):
    def qkv(sq, skv):
        return real(rng, sq), real(rng, skv), real(rng, skv)

    return [Sample("(1,3,4)causal", qkv((1, 3, 4), (1, 3, 4))),
            Sample("(2,2,3,4)causal", qkv((2, 2, 3, 4), (2, 2, 3, 4))),
            Sample("q(1,2,4)kv(1,3,4)causal", qkv((1, 2, 4), (1, 3, 4))),
            Sample("(2,3,2)full", qkv((2, 3, 2), (2, 3, 2)), {"is_causal": False}),
            Sample("(1,1,2)causal", qkv((1, 1, 2), (1, 1, 2))),
            Sample("(2,2,5,8)causal", qkv((2, 2, 5, 8), (2, 2, 5, 8))),
            Sample("q(1,4,3).mT,causal", (real(rng, (1, 4, 3)).swapaxes(-1, -2),
                                          *qkv((1, 3, 4), (1, 3, 4))[1:]))]


spec("scaled_dot_product_attention", _attn_samples, np_attention,
     "reals; causal (bottom-right aligned) and full masks", call=F.scaled_dot_product_attention,
     torch=t_attention)


def _rope_samples(rng):
    out = []
    for shape, offset in [((1, 3, 4), 0), ((2, 2, 3, 6), 5), ((4, 2), 0), ((2, 2, 5, 8), 3)]:
        cos, sin = F.rope_tables(shape[-2], shape[-1], offset=offset)
        out.append(Sample(f"{sid(shape)},offset={offset}", (real(rng, shape),),
                          {"cos": cos, "sin": sin}))
    cos, sin = F.rope_tables(3, 4)
    out.append(Sample("(1,4,3).mT", (real(rng, (1, 4, 3)).swapaxes(-1, -2),),
                      {"cos": cos, "sin": sin}))
    return out


spec("rope", _rope_samples, np_rope, "reals; cos/sin tables are constants", call=F.rope,
     torch=t_rope)


def _split_heads(qkv, n_head):
    """(B, T, 3C) -> q, k, v, each (B, nh, T, hs), as the fused projection is laid out."""
    B, T, C3 = qkv.shape
    return [a.reshape(B, T, n_head, C3 // 3 // n_head).swapaxes(1, 2)
            for a in np.split(qkv, 3, axis=-1)]


def np_causal_self_attention(qkv, n_head, cos=None, sin=None):
    q, k, v = _split_heads(qkv, n_head)
    if cos is not None:
        q, k = np_rope(q, cos, sin), np_rope(k, cos, sin)
    y = np_attention(q, k, v)  # (B, nh, T, hs)
    return y.swapaxes(1, 2).reshape(qkv.shape[0], qkv.shape[1], -1)


def t_causal_self_attention(qkv, n_head, cos=None, sin=None):
    B, T, C3 = qkv.shape
    q, k, v = (a.reshape(B, T, n_head, C3 // 3 // n_head).transpose(1, 2)
               for a in qkv.split(C3 // 3, dim=-1))
    if cos is not None:
        q, k = t_rope(q, cos, sin), t_rope(k, cos, sin)
    return t_attention(q, k, v).transpose(1, 2).reshape(B, T, C3 // 3)


def _csa_samples(rng):
    def rope(T, hs):
        cos, sin = F.rope_tables(T, hs)
        return {"cos": cos, "sin": sin}

    return [Sample("(1,3,6),nh=1", (real(rng, (1, 3, 6)),), {"n_head": 1}),
            Sample("(2,4,24),nh=2", (real(rng, (2, 4, 24)),), {"n_head": 2}),
            Sample("(2,4,24),nh=2,rope", (real(rng, (2, 4, 24)),), {"n_head": 2, **rope(4, 4)}),
            Sample("(1,1,6),nh=1", (real(rng, (1, 1, 6)),), {"n_head": 1}),
            Sample("(2,5,24),nh=2,rope", (real(rng, (2, 5, 24)),), {"n_head": 2, **rope(5, 4)}),
            Sample("(3,2,12).T01,nh=2", (real(rng, (3, 2, 12)).swapaxes(0, 1),), {"n_head": 2})]


for _name, _call in [("causal_self_attention", F.causal_self_attention),
                     ("causal_self_attention_composite", F.causal_self_attention_composite)]:
    spec(_name, _csa_samples, np_causal_self_attention,
         "reals; q|k|v packed along the last dim, causal mask, optional RoPE", call=_call,
         torch=t_causal_self_attention)
