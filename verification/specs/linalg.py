"""Specs of matmul (engine/ops/linalg.py) and einsum (engine/contraction.py)."""

from __future__ import annotations

import numpy as np

import minitorch as mt

from .core import Sample, _tt, real, sid, spec


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




# (equation, operand shapes): products, batches, '...' broadcasting, traces and diagonals,
# outer products, three operands, implicit outputs (A-Z before a-z), size-1 broadcasting
EINSUM_CASES = [
    ("ij,jk->ik", ((2, 3), (3, 4))), ("ij,jk", ((2, 3), (3, 4))),
    ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))), ("i,i->", ((3,), (3,))), ("i,j->ij", ((3,), (4,))),
    ("ii->i", ((3, 3),)), ("ii", ((3, 3),)), ("iij->j", ((3, 3, 2),)), ("iii->i", ((2, 2, 2),)),
    ("ij->ji", ((2, 3),)), ("ij->", ((2, 3),)), ("ba", ((2, 3),)), ("Aa,aB", ((2, 3), (3, 4))),
    ("...ij->...ji", ((2, 3, 4),)), ("...ij,...jk->...ik", ((2, 1, 3, 4), (5, 4, 2))),
    ("ij...->ij", ((2, 3, 4),)), ("ijk,ik->ij", ((2, 3, 4), (2, 4))),
    ("i,i,i->i", ((3,), (3,), (3,))), ("ab,bc,cd->ad", ((2, 3), (3, 4), (4, 5))),
    ("bn,anm,bm->ba", ((2, 3), (4, 3, 5), (2, 5))), ("ij,ij->ij", ((2, 1), (1, 3))),
    ("i,->i", ((3,), ())), ("bhqd,bhkd->bhqk", ((2, 2, 3, 4), (2, 2, 5, 4))),
]


def _einsum_samples(rng):
    out = [Sample(f"{eq}:{sid(*shapes)}", tuple(real(rng, s) for s in shapes), {"equation": eq})
           for eq, shapes in EINSUM_CASES]
    out.append(Sample("ij,jk:(3,2).Tx(3,4)", (real(rng, (3, 2)).T, real(rng, (3, 4))),
                      {"equation": "ij,jk"}))
    return out


def _call_einsum(*xs, equation):
    return mt.einsum(equation, *xs)


def _torch_einsum(*xs, equation):
    import torch

    return torch.einsum(equation, *xs)


def _np_einsum(*xs, equation):
    """NumPy's einsum, with torch's rule for an output that leaves out '...': summed."""
    lhs, arrow, rhs = equation.partition("->")
    if arrow and "..." in lhs and "..." not in rhs:
        y = np.einsum(f"{lhs}->...{rhs}", *xs)
        return y.sum(axis=tuple(range(y.ndim - len(rhs))))
    return np.einsum(equation, *xs)


spec("einsum", _einsum_samples, _np_einsum,
     "reals; the subscripts of EINSUM_CASES", call=_call_einsum, torch=_torch_einsum)
