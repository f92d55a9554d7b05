"""Specs of matmul (engine/ops/linalg.py)."""

from __future__ import annotations

import numpy as np

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


