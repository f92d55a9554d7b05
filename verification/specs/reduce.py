"""Specs of the reductions and the softmax pair (engine/ops/reduce.py)."""

from __future__ import annotations

import numpy as np

import minitorch as mt

from .core import BIG, Kink, Sample, _tdims, along, distinct, real, reduction, sid, spec
from .references import np_logsumexp

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




def _prod_samples(rng):
    cases = [((), None, False), ((3,), None, False), ((2, 3), 1, False), ((2, 3), 0, True),
             ((2, 3, 4), -1, False), ((2, 3, 4), 1, True), (BIG, 1, False)]
    out = [Sample(f"{sid(s)},axis={a}{',keep' if k else ''}", (real(rng, s),),
                  {"axis": a, "keepdims": k}) for s, a, k in cases]
    out.append(Sample("(3,2).T,axis=0", (real(rng, (3, 2)).T,), {"axis": 0, "keepdims": False}))
    zeros = real(rng, (3, 4))
    zeros[0, 1] = zeros[1, 0] = zeros[1, 3] = 0.0  # row 0: one zero, row 1: two, row 2: none
    out += [Sample("(3,4)zeros,axis=1", (zeros,), {"axis": 1, "keepdims": False}),
            Sample("(3,4)zeros,axis=0", (zeros,), {"axis": 0, "keepdims": False})]
    one = real(rng, (2, 3))
    one[1, 2] = 0.0
    out.append(Sample("(2,3)one zero,axis=None", (one,), {"axis": None, "keepdims": False}))
    return out


spec("prod", _prod_samples, lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
     "reals, and slices with one and with two zeros (the gradient there needs no division)",
     torch=lambda x, axis=None, keepdims=False: x.prod() if axis is None
     else x.prod(axis, keepdims))
spec("cumsum", along(real), lambda x, axis: np.cumsum(x, axis=axis) if x.ndim else x.copy(),
     "reals", torch=lambda x, axis: x.cumsum(axis))


def _argsort_samples(rng):
    cases = [((), -1, False), ((3,), 0, False), ((2, 3), 1, True), ((2, 3), 0, False),
             ((2, 3, 4), -1, True), ((2, 3, 4), 1, False)]
    out = [Sample(f"{sid(s)},axis={a}{',desc' if d else ''}", (distinct(rng, s),),
                  {"axis": a, "descending": d}) for s, a, d in cases]
    out.append(Sample("(3,2).T,axis=0", (distinct(rng, (3, 2)).T,),
                      {"axis": 0, "descending": False}))
    ties = np.array([[1.0, 2.0, 1.0, 2.0, 1.0], [0.0, 0.0, 0.0, -1.0, -1.0]])
    out += [Sample(f"(2,5)ties{',desc' if d else ''}", (ties,), {"axis": -1, "descending": d})
            for d in (False, True)]
    return out


def _np_argsort(x, axis, descending):
    if x.ndim == 0:
        return np.zeros((), np.int64)
    return np.argsort(-x if descending else x, axis=axis, kind="stable")


spec("argsort", _argsort_samples, _np_argsort,
     "distinct values, and rows of ties (stable order, as torch's stable=True)",
     differentiable=False, out_dtype=lambda s: np.int64,
     torch=lambda x, axis, descending: x.argsort(dim=axis, descending=descending, stable=True))


def _scan_samples(draw):
    """along()'s samples but its huge row (a running product of it overflows)."""
    return lambda rng: [s for s in along(draw)(rng) if "huge" not in s.id]


def _cumprod_samples(rng):
    """along()'s reals, and rows holding one and two zeros (cumprod is a polynomial: smooth
    there, so finite differences check the zero rule under any cotangent)."""
    x = real(rng, (3, 5))
    x[0, 2] = x[1, 1] = x[1, 3] = x[2, 0] = 0.0
    return _scan_samples(real)(rng) + [Sample("(3,5)zeros,axis=1", (x,), {"axis": 1}),
                                       Sample("(3,5)zeros,axis=0", (x.copy(),), {"axis": 0})]


spec("cumprod", _cumprod_samples,
     lambda x, axis: np.cumprod(x, axis=axis) if x.ndim else x.copy(), "reals, and rows with zeros",
     torch=lambda x, axis: x.cumprod(axis),
     kinks=(Kink("one zero: cumprod([2,0,3,4])", (np.array([2.0, 0.0, 3.0, 4.0]),),
                 (np.array([1.0, 2 + 6 + 24, 0.0, 0.0]),), doc="at the first zero",
                 attrs={"axis": 0}),
            Kink("two zeros: cumprod([2,0,3,0,5]) per row",
                 (np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 0.0, 1.0, 2.0, 3.0]]),),
                 (np.array([[1.0, 8.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0]]),),
                 doc="after it 0", attrs={"axis": 1})))


def _np_cummax(x, axis):
    return np.maximum.accumulate(x, axis=axis) if x.ndim else x.copy()


spec("cummax", _scan_samples(distinct), _np_cummax, "distinct values (no ties)",
     call=lambda x, axis: x.cummax(axis).values, torch=lambda x, axis: x.cummax(axis).values,
     kinks=(Kink("ties: cummax([1,3,3,2])", (np.array([1.0, 3.0, 3.0, 2.0]),),
                 (np.array([1.0, 1.0, 2.0, 0.0]),), doc="the later index on ties",
                 attrs={"axis": 0}),))
spec("cummin", _scan_samples(distinct), lambda x, axis: -_np_cummax(-x, axis),
     "distinct values (no ties)",
     call=lambda x, axis: x.cummin(axis).values, torch=lambda x, axis: x.cummin(axis).values,
     kinks=(Kink("ties: cummin([3,1,1,2])", (np.array([3.0, 1.0, 1.0, 2.0]),),
                 (np.array([1.0, 1.0, 2.0, 0.0]),), doc="the later index on ties",
                 attrs={"axis": 0}),))


def _with_mean(name):
    """mt.var_mean or mt.std_mean with var's spec attrs, both outputs stacked (one tensor)."""
    def call(x, axis=None, keepdims=False, ddof=0):
        return mt.stack(list(getattr(mt, name)(x, axis, keepdim=keepdims, correction=ddof)))

    def torch_call(x, axis=None, keepdims=False, ddof=0):
        import torch

        return torch.stack(getattr(torch, name)(x, _tdims(x, axis), keepdim=keepdims,
                                                correction=ddof))

    return call, torch_call


def _np_with_mean(root: bool):
    def ref(x, axis, keepdims, ddof):
        var = np.var(x, axis=axis, keepdims=keepdims, ddof=ddof)
        return np.stack([np.sqrt(var) if root else var, np.mean(x, axis=axis, keepdims=keepdims)])

    return ref


for _name, _root in (("var_mean", False), ("std_mean", True)):
    _call, _torch_call = _with_mean(_name)
    spec(_name, (lambda rng: [s for s in _var_samples(rng) if not s.id.startswith("(),")])
         if _root else _var_samples, _np_with_mean(_root),
         "reals (std_mean: no 0-d sample, where the std is 0 and its slope infinite)",
         call=_call, torch=_torch_call)
