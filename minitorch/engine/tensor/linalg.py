"""Linear algebra: matmul (the @ operator) and its 2-D/1-D forms mm, bmm, mv, dot."""

from __future__ import annotations

import numpy as np

from .base import TensorBase


class Linalg(TensorBase):
    """Matrix products; batch dims broadcast as in torch.matmul."""

    __slots__ = ()

    def matmul(self, other) -> TensorBase:
        """torch.matmul: (..., M, K) @ (..., K, N) with batch dims broadcast; a 1-D operand is a
        vector (a row on the left, a column on the right) whose dim is removed from the result."""
        return _matmul(*self._pair(other))

    __matmul__ = matmul

    def mm(self, other) -> TensorBase:
        if self.ndim != 2 or getattr(other, "ndim", 2) != 2:
            raise RuntimeError(f"mm: both operands must be 2-D, got {self.shape} and "
                               f"{np.shape(getattr(other, 'data', other))}")
        return self.matmul(other)

    def bmm(self, other) -> TensorBase:
        if self.ndim != 3 or getattr(other, "ndim", 3) != 3:
            raise RuntimeError(f"bmm: both operands must be 3-D, got {self.shape} and "
                               f"{np.shape(getattr(other, 'data', other))}")
        return self.matmul(other)

    def mv(self, other) -> TensorBase:
        if self.ndim != 2 or getattr(other, "ndim", 1) != 1:
            raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got {self.shape}")
        return self.matmul(other)

    def dot(self, other) -> TensorBase:
        if self.ndim != 1 or getattr(other, "ndim", 1) != 1:
            raise RuntimeError(f"dot: both operands must be 1-D, got {self.shape}")
        return self.matmul(other)

    def __rmatmul__(self, other):
        a, b = self._pair(other)
        return _matmul(b, a)


def _matmul(a: TensorBase, b: TensorBase) -> TensorBase:
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{a.shape} and {b.shape}")
    if a.ndim >= 2 and b.ndim >= 2:
        return a._apply("matmul", a, b)
    y = a._apply("matmul", a.reshape((1,) + a.shape) if a.ndim == 1 else a,
                 b.reshape(b.shape + (1,)) if b.ndim == 1 else b)
    if b.ndim == 1:
        y = y.squeeze(-1)  # (..., M)
    if a.ndim == 1:
        y = y.squeeze(-1 if b.ndim == 1 else -2)  # the row vector's dim
    return y
