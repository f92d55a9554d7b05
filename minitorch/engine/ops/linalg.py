"""Matrix multiplication: 2-D and batched, leading (batch) dims broadcast as in numpy.matmul."""

from __future__ import annotations

import numpy as np

from ..kernels import rows
from ..registry import Op, register


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b; a stack of rows times one matrix runs as a single 2-D GEMM."""
    if b.ndim == 2 and a.ndim > 2:
        return (rows(a) @ b).reshape(a.shape[:-1] + (b.shape[-1],))
    return a @ b


@register("matmul")
class MatMul(Op):
    """y = a @ b with a (..., M, K), b (..., K, N); grad_a = g @ b^T, grad_b = a^T @ g
    (both in the broadcast batch shape; the engine sums batch dims that were broadcast). Each
    input is saved only when the other needs its gradient (as torch)."""

    @staticmethod
    def forward(ctx, a, b):
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
            raise ValueError(f"cannot multiply shapes {a.shape} @ {b.shape} (need (..., M, K) @ "
                             "(..., K, N), both at least 2-D)")
        ctx.save(a if ctx.needs_grad[1] else None, b if ctx.needs_grad[0] else None)
        ctx.b_matrix = b.ndim == 2
        return _mm(a, b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.saved
        grad_a = _mm(g, b.swapaxes(-1, -2)) if ctx.needs_grad[0] else None
        grad_b = None
        if ctx.needs_grad[1]:
            if ctx.b_matrix:  # sum over all leading dims in one GEMM: (K, rows) @ (rows, N)
                grad_b = rows(a).T @ rows(g)
            else:
                grad_b = a.swapaxes(-1, -2) @ g
        return grad_a, grad_b
