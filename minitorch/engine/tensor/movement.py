"""Movement: the same values in another shape or order (reshape/view, permute, transpose,
expand, squeeze, flatten, repeat, flip, split, chunk, clone).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels import ArgumentError
from .base import TensorBase, as_shape, check_dim, numpy_aliases


class Movement(TensorBase):
    """Shape and order; the values are never computed on."""

    __slots__ = ()

    def reshape(self, *shape) -> TensorBase:
        return self._apply("reshape", self, shape=as_shape(shape))

    view = reshape

    def permute(self, *dims) -> TensorBase:
        return self._apply("permute", self, axes=as_shape(dims))

    def transpose(self, dim0: int, dim1: int) -> TensorBase:
        """torch semantics: swap two dimensions (a 0-d tensor accepts 0 and -1: no change)."""
        if self.ndim == 0:
            if {dim0, dim1} <= {0, -1}:
                return self._apply("permute", self, axes=())
            raise IndexError(f"transpose: dims ({dim0}, {dim1}) are out of range for a 0-d tensor")
        axes = list(range(self.ndim))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return self._apply("permute", self, axes=tuple(axes))

    swapaxes = transpose

    @property
    def T(self) -> TensorBase:
        return self._apply("permute", self, axes=tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> TensorBase:
        return self.transpose(-2, -1)

    def t(self) -> TensorBase:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, got {self.ndim}-D")
        return self.T

    def view_as(self, other: TensorBase) -> TensorBase:
        return self.view(other.shape)

    @numpy_aliases
    def unsqueeze(self, dim: int) -> TensorBase:
        dim = dim if dim >= 0 else dim + self.ndim + 1
        return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

    @numpy_aliases
    def squeeze(self, dim: int | Sequence[int] | None = None) -> TensorBase:
        """Remove size-1 dims: all of them, or those of `dim` (an int or a tuple) that have
        size 1 (torch semantics)."""
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        given = [check_dim(d, self.ndim, "squeeze") for d in (dim if isinstance(dim, Sequence) else
                                                           (dim,))]
        dims = set(given)
        if len(dims) < len(given):
            raise RuntimeError(f"squeeze: a dim appears more than once in {dim} (as torch)")
        if self.ndim == 0:
            return self
        return self.reshape(tuple(n for i, n in enumerate(self.shape)
                                  if not (i in dims and n == 1)))

    def expand(self, *sizes) -> TensorBase:
        """torch.Tensor.expand: broadcast size-1 dims (and new leading dims) to `sizes`; -1 keeps
        a dim's size. The gradient sums over the expanded dims."""
        sizes = as_shape(sizes)
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise RuntimeError(f"expand: the number of sizes ({len(sizes)}) must be at least the "
                               f"tensor's dimension ({self.ndim})")
        shape = []
        for i, n in enumerate(sizes):
            if n == -1:
                if i < lead:
                    raise RuntimeError(f"expand: -1 is not allowed for a new leading dim {i}")
                n = self.shape[i - lead]
            shape.append(int(n))
        return self._apply("broadcast_to", self, shape=tuple(shape))

    def expand_as(self, other: TensorBase) -> TensorBase:
        return self.expand(other.shape)

    def clone(self) -> TensorBase:
        """A copy that stays in the graph (gradient flows through unchanged)."""
        return self._apply("copy", self)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> TensorBase:
        """torch.flatten: dims start_dim..end_dim merged into one (a 0-d tensor becomes (1,))."""
        if self.ndim == 0:
            return self.reshape(1)
        start, end = start_dim % self.ndim, end_dim % self.ndim
        if start > end:
            raise ArgumentError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        merged = int(np.prod(self.shape[start:end + 1]))  # not -1: ambiguous at size 0
        return self.reshape(self.shape[:start] + (merged,) + self.shape[end + 1:])

    def contiguous(self) -> TensorBase:
        return self  # NumPy arrays of any layout serve every op

    def repeat(self, *sizes) -> TensorBase:
        """torch's repeat (NumPy's tile): the tensor tiled sizes[i] times along dim i, with new
        leading dims when more sizes than dims are given; the gradient sums over the tiles."""
        sizes = as_shape(sizes)
        if len(sizes) < self.ndim or any(int(n) < 0 for n in sizes):
            raise RuntimeError(f"repeat: sizes {tuple(sizes)} must be non-negative and at least "
                               f"as many as the tensor's dims ({self.ndim})")
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
        pairs = [(int(r), n) for r, n in zip(sizes, shape)]
        x = self.reshape(tuple(d for _, n in pairs for d in (1, n)))  # (1, n0, 1, n1, ...)
        x = self._apply("broadcast_to", x, shape=tuple(d for p in pairs for d in p))
        return x.reshape(tuple(r * n for r, n in pairs))

    def flip(self, dims) -> TensorBase:
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        axes = [check_dim(d, self.ndim, "flip") for d in dims]
        if len(set(axes)) < len(axes):
            raise RuntimeError(f"flip: dim {dims} has a dim that appears twice (as torch)")
        index = [slice(None)] * self.ndim
        for d in axes if self.ndim else ():  # a 0-d tensor flips to itself
            index[d] = slice(None, None, -1)
        return self[tuple(index)]

    def roll(self, shifts, dims=None) -> TensorBase:
        """torch.roll: elements shifted by `shifts` along `dims` (an int or tuples of one
        length), wrapping around; with dims None over the flattened tensor, shape kept."""
        if dims is None:
            if not isinstance(shifts, int):
                if len(shifts) != 1:
                    raise RuntimeError(f"roll: {len(shifts)} shifts need as many dims")
                shifts = shifts[0]
            return self.flatten().roll(shifts, 0).view(self.shape)
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if len(shifts) != len(dims):
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: "
                               f"{len(shifts)}, dims:{len(dims)}")
        out = self
        for shift, dim in zip(shifts, dims):
            d = check_dim(dim, self.ndim, "roll")
            n = self.shape[d] if self.ndim else 1
            if n and int(shift) % n:  # positions taken from i - shift, wrapping
                source = (np.arange(n) - int(shift)) % n
                out = self._apply("getitem", out, index=(slice(None),) * d + (source,))
        return out if out is not self else self.clone()

    def split(self, split_size, dim: int = 0) -> tuple[TensorBase, ...]:
        """torch.split: pieces of split_size along dim (the last may be shorter), or of the
        sizes listed."""
        n = self.shape[dim]
        if isinstance(split_size, int):
            if split_size <= 0:
                raise ArgumentError(f"split: split_size must be > 0, got {split_size}")
            sizes = [min(split_size, n - i) for i in range(0, n, split_size)] or [0]
        else:
            sizes = list(split_size)
            if sum(sizes) != n:
                raise ArgumentError(f"split: sizes {sizes} do not add up to dim {dim}'s {n}")
        out, start = [], 0
        for k in sizes:
            index = [slice(None)] * self.ndim
            index[dim] = slice(start, start + k)
            out.append(self[tuple(index)])
            start += k
        return tuple(out)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[TensorBase, ...]:
        """torch.chunk: at most `chunks` pieces of ceil(n / chunks) along dim."""
        if chunks <= 0:
            raise ArgumentError(f"chunk: chunks must be > 0, got {chunks}")
        n = self.shape[dim]
        return self.split(max(-(-n // chunks), 1), dim)
