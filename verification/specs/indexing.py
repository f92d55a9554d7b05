"""Specs of the indexing ops (engine/ops/indexing.py) and diag (the indexing mixin)."""

from __future__ import annotations

import numpy as np

from .core import (
    BIG,
    PAIRS,
    SHAPES,
    Kink,
    Sample,
    _tindex,
    real,
    sid,
    small_ints,
    spec,
)


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


def _index_put_samples(rng):
    from minitorch.engine.tensor.indexing import (
        _torch_index,  # the stages x[index] = v hands the op
    )

    cases = [  # (id, x shape, torch index, v shape); no repeated index (the write order rules)
        ("(3,)[1]=()", (3,), 1, ()),
        ("(2,3)[:,1:]=(2,)", (2, 3), (slice(None), slice(1, None)), (2,)),
        ("(4,)[[0,2]]=(2,)", (4,), np.array([0, 2]), (2,)),
        ("(2,3)[mask]=()", (2, 3), np.array([[True, False, True], [False, False, True]]), ()),
        ("(3,4)[[0,2],[1,3]]=(1,)", (3, 4), (np.array([0, 2]), np.array([1, 3])), (1,)),
        ("(2,3,4)[0,:,[1,3]]=(2,)", (2, 3, 4), (0, slice(None), np.array([1, 3])), (2,)),
        ("(4,5,6)[[3,0],1:]=(5,6)", BIG, (np.array([3, 0]), slice(1, None)), (4, 6)),
    ]
    out = [Sample(i, (real(rng, s), real(rng, vs)), {"stages": tuple(_torch_index(idx, len(s)))})
           for i, s, idx, vs in cases]
    out.append(Sample("(3,2).T[:,1]=(2,)", (real(rng, (3, 2)).T, real(rng, (2,))),
                      {"stages": ((slice(None), 1),)}))
    return out


def _np_index_put(x, v, stages):
    y = target = x.copy()
    for stage in stages[:-1]:
        target = target[stage]
    target[stages[-1]] = v
    return y


def _torch_index_put(x, v, stages):
    y = target = x.clone()
    for stage in stages[:-1]:
        target = target[_tindex(stage, target.shape)]
    target[_tindex(stages[-1], target.shape)] = v
    return y


spec("index_put", _index_put_samples, _np_index_put,
     "reals; basic, integer-array, bool and two-stage (int beside an array) indices, v broadcast",
     torch=_torch_index_put)


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


def _np_scatter_reduce(x, src, index, axis, reduce="none", include_self=True):
    """A loop over index's elements, each destination's contributors reduced at the end."""
    out = x.copy()
    contributors: dict[tuple, list] = {}
    for i in np.ndindex(index.shape):
        j = list(i)
        j[axis] = index[i]
        contributors.setdefault(tuple(j), []).append(src[i])
    for j, values in contributors.items():
        if reduce == "none":
            out[j] = values[-1]
            continue
        values = ([x[j]] if include_self else []) + values
        out[j] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max,
                  "amin": np.min}[reduce](values)
    return out


def _scatter_samples(rng):
    """x and src with all values distinct (no max ties, no zeros in products), index with
    repeated destinations for the reductions and unique ones for plain scatter (whose winner
    of a repeat is unspecified); each reduce with and without include_self."""
    def values(sx, si):
        n, m = int(np.prod(sx)), int(np.prod(si))
        v = (rng.permutation(n + m) - (n + m) / 2) * 0.25 + 0.125  # >= 0.125 from 0
        return v[:n].reshape(sx), v[n:].reshape(si)

    def unique_index(sx, si, axis):  # each destination hit once along axis
        order = np.argsort(rng.random(si[:axis] + (sx[axis],) + si[axis + 1:]), axis=axis)
        return np.take(order, np.arange(si[axis]), axis=axis)

    cases = [((3, 4), (2, 4), 0), ((3, 4), (3, 3), 1), ((2, 3, 4), (2, 5, 4), 1), ((5,), (7,), 0),
             (BIG, (4, 8, 6), 1)]
    out = []
    for reduce, include in [("none", True), ("sum", True), ("sum", False), ("prod", True),
                            ("prod", False), ("mean", True), ("mean", False), ("amax", True),
                            ("amax", False), ("amin", True), ("amin", False)]:
        for sx, si, axis in cases if reduce != "none" else [c for c in cases if c[1][c[2]] <=
                                                              c[0][c[2]]]:
            x, src = values(sx, si)
            index = (unique_index(sx, si, axis) if reduce == "none"
                     else rng.integers(0, sx[axis], si))
            label = f"{sid(sx, si)},axis={axis},{reduce}{'' if include else ',excl'}"
            out.append(Sample(label, (x, src), {"index": index, "axis": axis, "reduce": reduce,
                                                "include_self": include}))
    x, src = values((4, 3), (2, 3))
    out.append(Sample("(4,3).Tx(2,3),axis=0,sum", (x.T, src), {
        "index": rng.integers(0, 3, (2, 3)), "axis": 0, "reduce": "sum", "include_self": True}))
    return out


def _t_scatter_reduce(x, src, index, axis, reduce="none", include_self=True):
    import torch

    i = torch.from_numpy(index)
    if reduce == "none":
        return x.scatter(axis, i, src)
    return x.scatter_reduce(axis, i, src, reduce, include_self=include_self)


_SCATTER_TIES = {"index": np.array([0, 0, 1]), "axis": 0, "include_self": True}
spec("scatter_reduce", _scatter_samples, _np_scatter_reduce,
     "distinct values >= 0.125 from 0 (no ties, no zero products); repeated indices",
     torch=_t_scatter_reduce,
     kinks=(Kink("amax ties split the gradient", (np.array([2.0, 1.0]), np.array([2.0, 2.0, 0.0])),
                 (np.array([1 / 3, 1.0]), np.array([1 / 3, 1 / 3, 0.0])),
                 doc="split equally among the contributors", attrs={**_SCATTER_TIES,
                                                                     "reduce": "amax"}),
            Kink("prod at a zero: the product of the others",
                 (np.array([3.0, 1.0]), np.array([0.0, 2.0, 5.0])),
                 (np.array([0.0, 5.0]), np.array([6.0, 0.0, 1.0])),
                 doc="exact at zeros", attrs={**_SCATTER_TIES, "reduce": "prod"})))


def _nonzero_samples(rng):
    out = [Sample(sid(s), (small_ints(rng, s),)) for s in [(), (3,), (2, 3), (2, 3, 4), (2, 0)]]
    out.append(Sample("(3,2).T", (small_ints(rng, (3, 2)).T,)))
    out.append(Sample("0-d zero", (np.zeros(()),)))
    out.append(Sample("with nan", (np.array([[0.0, np.nan], [1.5, 0.0]]),)))
    return out


spec("nonzero", _nonzero_samples, np.argwhere, "values in {-1, 0, 1} (many zeros), nan",
     differentiable=False, out_dtype=lambda s: np.int64, torch=lambda x: x.nonzero())


def _diag_samples(rng):
    cases = [((3,), 0), ((3,), 1), ((3,), -2), ((1,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -2),
             ((3, 4), 3), ((4, 4), -3), ((2, 5), 3)]
    out = [Sample(f"{sid(s)},diagonal={k}", (real(rng, s),), {"diagonal": k}) for s, k in cases]
    out.append(Sample("(4,3).T,diagonal=1", (real(rng, (4, 3)).T,), {"diagonal": 1}))
    return out


spec("diag", _diag_samples, lambda x, diagonal: np.diag(x, diagonal),
     "reals; 1-D into a square, 2-D to its diagonal, offsets to the corners",
     call=lambda x, diagonal: x.diag(diagonal), torch=lambda x, diagonal: x.diag(diagonal))
