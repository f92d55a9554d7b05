"""Specs of the shape and indexing ops (engine/ops/shape.py)."""

from __future__ import annotations

import numpy as np

from .core import BIG, Sample, _tindex, real, sid, spec


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


def _index_put_samples(rng):
    from minitorch.engine.tensor import _torch_index  # the stages x[index] = v hands the op

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


