"""The spec machinery: OpSpec and Sample, value domains, shape-family sample builders, torch
helpers, and the SPECS table with `spec()` to add to it. The families' files fill the table."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import minitorch as mt

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


