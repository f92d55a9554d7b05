"""Specs of the movement ops (engine/ops/movement.py)."""

from __future__ import annotations

import numpy as np

from .core import (
    BIG,
    Sample,
    real,
    sid,
    spec,
    unary,
)

spec("copy", unary(real), np.copy, "reals", torch=lambda x: x.clone())


def _broadcast_to_samples(rng):
    cases = [((), (2, 3)), ((3,), (2, 3)), ((3, 1), (2, 3, 4)), ((2, 1, 4), (2, 3, 4)),
             ((1, 1), (1, 1)), ((4, 1, 6), BIG)]
    return [Sample(f"{sid(a)}->{sid(b)}", (real(rng, a),), {"shape": b}) for a, b in cases] + [
        Sample("(1,3,2).T->(4,2,3,5)", (real(rng, (1, 3, 2)).T,), {"shape": (4, 2, 3, 5)})]


spec("broadcast_to", _broadcast_to_samples, lambda x, shape: np.broadcast_to(x, shape),
     "reals; new leading dims and size-1 dims expanded", torch=lambda x, shape: x.expand(shape))


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
