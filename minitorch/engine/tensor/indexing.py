"""Indexing: x[index] and x[index] = v with torch's rules, select, narrow, unbind, gather,
index_select, scatter, masked_fill, where (torch.where and Tensor.where), nonzero and diag.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import runtime
from ..dtypes import is_float
from ..node import inplace
from ..registry import composite
from .base import TensorBase, check_dim, retold


class Indexing(TensorBase):
    """Picking elements, and writing them (x[index] = v)."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> TensorBase:
        """torch indexing: integers select first, then the advanced (array) indices apply as in
        NumPy to what is left, so `t[0, :, [0, 1]]` has shape (3, 2) on a (2, 3, 4) tensor."""
        if type(index) is slice or type(index) is int:  # x[a:b], x[i]: one basic stage
            if self._data.ndim:
                return self._apply("getitem", self, index=(index,))
        out = self
        for stage in _torch_index(index, self.ndim):
            out = self._apply("getitem", out, index=stage)
        return out

    def __setitem__(self, index: Any, value: Any) -> None:
        """torch's x[index] = value, in place (as x += y): a leaf that requires grad is refused
        while grad is enabled; where a gradient is needed the write joins the graph (op
        index_put), else it goes straight into x's array."""
        if not isinstance(value, TensorBase):
            value = self._lift(np.asarray(value, self.dtype))
        stages = tuple(_torch_index(index, self.ndim))
        if runtime.local.tape is not None or runtime.local.grad_enabled and (
                self.requires_grad or value.requires_grad):
            self._update("setitem", lambda t: self._apply("index_put", t, value, stages=stages))
        else:
            try:
                with inplace(self.data) as array:
                    for stage in stages[:-1]:
                        array = array[stage]  # basic: a view
                    array[stages[-1]] = value.data
            except (IndexError, ValueError) as e:  # out of range, shapes, a read-only x
                raise retold(e, f"setitem on a tensor of shape {self.shape}: {e}") from None

    def narrow(self, dim: int, start, length: int) -> TensorBase:
        """The slice start:start+length along dim (start may be negative), as torch."""
        if self.ndim == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor")
        if isinstance(start, (bool, np.bool_)) or (isinstance(start, TensorBase) and (
                start.dtype.kind not in "iu" or start.ndim)):
            raise TypeError(f"narrow: start must be an integer or a 0-d integer tensor, got "
                            f"{start!r}")
        d, start = check_dim(dim, self.ndim, "narrow"), int(start)
        n = self.shape[d]
        if not -n <= start <= n:
            raise IndexError(f"narrow: start {start} is out of range [{-n}, {n}] for dim {dim}")
        start = start + n if start < 0 else start
        if length < 0 or start + length > n:
            raise RuntimeError(f"narrow: start ({start}) + length ({length}) must be within "
                               f"dim {dim}'s size {n}, length non-negative")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def select(self, dim: int, index: int) -> TensorBase:
        """self indexed by `index` along dim, which is removed."""
        if self.ndim == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor")
        d, index = check_dim(dim, self.ndim, "select"), int(index)
        if not -self.shape[d] <= index < self.shape[d]:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{self.shape} at dimension {dim}")
        return self._apply("getitem", self, index=(slice(None),) * d + (index,))

    def unbind(self, dim: int = 0) -> tuple[TensorBase, ...]:
        if self.ndim == 0:
            raise IndexError("unbind: dimension specified as 0 but tensor has no dimensions")
        n = self.shape[check_dim(dim, self.ndim, "unbind")]
        return tuple(self.select(dim, i) for i in range(n))

    def index_select(self, dim: int, index: TensorBase) -> TensorBase:
        """The entries at `index` (a 1-D or 0-D integer tensor; repeats allowed) along dim; the
        gradient scatter-adds back (repeated indices accumulate)."""
        idx = index.data if isinstance(index, TensorBase) else None
        if idx is None or idx.dtype.kind not in "iu" or idx.ndim > 1:
            raise TypeError(f"index_select: index must be a 1-D integer tensor, got "
                            f"{getattr(idx, 'shape', type(index).__name__)} "
                            f"{getattr(idx, 'dtype', '')}".rstrip())
        d = check_dim(dim, self.ndim, "index_select")
        _check_in_range("index_select", idx, self.shape[d] if self.ndim else 1, dim)
        if self.ndim == 0:
            return self._apply("getitem", self, index=())
        return self._apply("getitem", self, index=(slice(None),) * d + (idx.reshape(-1),))

    def gather(self, dim: int, index: Any) -> TensorBase:
        """torch.gather: out[i][j][k] = self[i][index[i][j][k]][k] for dim = 1 (index has self's
        number of dims); the gradient scatter-adds back to the gathered positions."""
        index = np.asarray(index.data if isinstance(index, TensorBase) else index)
        vector = self.ndim == 0 and index.shape == (1,)  # torch's 0-d input with a (1,) index
        if (index.ndim != self.ndim and not vector) or index.dtype.kind not in "iu":
            raise RuntimeError(f"gather: index must be an integer tensor with {self.ndim} dims "
                               f"(as the input), got shape {index.shape} dtype {index.dtype}")
        _check_in_range("gather", index, self.shape[dim] if self.ndim else 1, dim)
        if self.ndim == 0:  # torch takes a 0-d or (1,) index: a 0-d index of the 0-d input
            return self._apply("getitem", self.reshape(1), index=index)
        parts = list(np.ix_(*(np.arange(n) for n in index.shape)))  # open grids, index's shape
        parts[dim % self.ndim] = index
        return self._apply("getitem", self, index=tuple(parts))

    def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None,
                reduce: str | None = None) -> TensorBase:
        """torch.scatter: a copy of self with out[i][index[i][j]] = src[i][j] for dim = 1 (src a
        tensor, or a number: value); with repeated indices one of the writes wins (torch leaves
        which unspecified). The legacy reduce='add'/'multiply' is scatter_reduce's sum/prod."""
        if reduce not in (None, "add", "multiply"):
            raise RuntimeError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        src = value if src is None else src
        if src is None:
            raise TypeError("scatter(): give src (a tensor) or value (a number)")
        mode = {None: "none", "add": "sum", "multiply": "prod"}[reduce]
        return self._scatter("scatter", dim, index, src, mode, True)

    def scatter_add(self, dim: int, index: Any, src: Any) -> TensorBase:
        """torch.scatter_add: a copy of self with src[i][j] added at out[i][index[i][j]] (dim =
        1); repeated indices accumulate."""
        return self._scatter("scatter_add", dim, index, src, "sum", True)

    def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, *,
                       include_self: bool = True) -> TensorBase:
        """torch.scatter_reduce: src combined into a copy of self at index along dim by reduce
        ('sum', 'prod', 'mean', 'amax', 'amin'), self's own value included unless
        include_self=False; max/min ties split the gradient equally, as torch."""
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError(f"scatter_reduce: reduce must be one of 'sum', 'prod', 'mean', "
                               f"'amax', 'amin', got {reduce!r}")
        return self._scatter("scatter_reduce", dim, index, src, reduce, include_self)

    def _scatter(self, name: str, dim: int, index: Any, src: Any, reduce: str,
                 include_self: bool) -> TensorBase:
        """The scatter family's checks (torch's), then the scatter_reduce op."""
        index = np.asarray(index.data if isinstance(index, TensorBase) else index)
        if not isinstance(src, TensorBase):
            if not isinstance(src, (int, float)):
                raise TypeError(f"{name}(): src must be a Tensor or a number, got "
                                f"{type(src).__name__}")
            src = self._wrap(np.full(index.shape, src, dtype=self.dtype))
        elif src.dtype != self.dtype:
            raise RuntimeError(f"{name}: expected self and src to have one dtype, got "
                               f"{self.dtype} and {src.dtype} (as torch)")
        if index.dtype != np.int64 or not (index.ndim == self.ndim == src.ndim or (
                index.ndim <= 1 and self.ndim <= 1 and src.ndim <= 1)):
            raise RuntimeError(f"{name}: index must be an int64 tensor with self's number of "
                               f"dims ({self.ndim}), got shape {index.shape} dtype {index.dtype}")
        d = check_dim(dim, self.ndim, name)
        if self.ndim == 0 or index.ndim == 0:  # torch's 0-d cases: as 1-element vectors
            out = self.reshape(-1)._scatter(name, 0, index.reshape(-1), src.reshape(-1), reduce,
                                            include_self)
            return out.reshape(self.shape)
        small = [k for k in range(self.ndim) if index.shape[k] > src.shape[k] or (
            k != d and index.shape[k] > self.shape[k])]
        if small:
            raise RuntimeError(f"{name}: index {index.shape} must be no larger than src "
                               f"{src.shape}, nor than self {self.shape} outside dim {d}")
        _check_in_range(name, index, self.shape[d], d)
        return self._apply("scatter_reduce", self, src, index=index, axis=d, reduce=reduce,
                           include_self=include_self)

    def masked_fill(self, mask: Any, value: Any) -> TensorBase:
        """value where mask else self; a 0-d tensor value gets the gradient of the filled
        positions, as torch's (never read as a Python number, which would lose it)."""
        mask = mask if isinstance(mask, TensorBase) else self._lift(np.asarray(mask))
        if isinstance(value, TensorBase):
            if value.ndim:
                raise RuntimeError(f"masked_fill: only a 0-dimensional value tensor is "
                                   f"supported, got one of shape {value.shape} (as torch)")
            if value.requires_grad and is_float(self.dtype):
                if mask.dtype != np.bool_:
                    raise RuntimeError(f"masked_fill: mask must be a bool tensor, got "
                                       f"{mask.dtype} (as torch)")
                return where(mask, value.to(self.dtype), self)
            value = value.item()
        return self._apply("masked_fill", self, mask, value=float(value))

    def where(self, condition: Any, other: Any) -> TensorBase:
        """torch's Tensor.where: self where condition else other."""
        return where(condition, self, other)

    def nonzero(self, *, as_tuple: bool = False):
        """torch.nonzero: the (count, ndim) int64 indices of the non-zero elements, or with
        as_tuple one 1-D index tensor per dim (a 0-d tensor counts as 1-D there, as torch)."""
        if not as_tuple:
            return self._apply("nonzero", self)
        rows = self._apply("nonzero", self.reshape(1) if self.ndim == 0 else self)
        return tuple(rows[:, d] for d in range(rows.shape[1]))

    def diag(self, diagonal: int = 0) -> TensorBase:
        """torch.diag: a 1-D tensor as the `diagonal`-th diagonal of a square matrix (zeros
        elsewhere), or the `diagonal`-th diagonal of a 2-D one as a 1-D tensor."""
        return _diag(self, diagonal)


def _check_in_range(name: str, index: np.ndarray, n: int, dim) -> None:
    """RuntimeError naming the first index outside [0, n), the size of dim (gather,
    index_select: NumPy would wrap a negative one)."""
    bad = index[(index < 0) | (index >= n)]
    if bad.size:
        raise RuntimeError(f"{name}: index {int(bad.flat[0])} is out of bounds for dim {dim} "
                           f"of size {n}")


def _index_part(p: Any) -> Any:
    """One part of an index as the getitem op takes it: Tensors and lists become ndarrays, and a
    0-d integer array becomes a Python int (torch treats it as an integer)."""
    if isinstance(p, TensorBase):
        p = p.data
    elif isinstance(p, list):
        p = np.asarray(p)
    if isinstance(p, np.ndarray) and p.ndim == 0 and p.dtype.kind in "iu":
        return int(p)
    return p


def _is_int(p: Any) -> bool:
    return isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))


def _torch_index(index: Any, ndim: int) -> list[tuple]:
    """torch's indexing as one or two NumPy indices applied in turn. torch applies integers as
    selections first; NumPy treats an integer beside an index array as one more advanced index
    (and, separated from it by a slice, moves the result's dims to the front). So with both
    present: stage 1 applies the ints, slices, None and Ellipsis, every index array replaced by
    full slices; stage 2 applies the index arrays to what is left."""
    parts = [_index_part(p) for p in (index if isinstance(index, tuple) else (index,))]
    used = 0  # dims of self the index consumes
    for p in parts:
        if isinstance(p, np.ndarray):
            used += p.ndim if p.dtype.kind == "b" else 1
        elif p is not None and p is not Ellipsis and not isinstance(p, (bool, np.bool_)):
            used += 1
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} ({used} indexed)")
    has_array = any(isinstance(p, np.ndarray) for p in parts)
    if not (has_array and any(_is_int(p) for p in parts)):
        return [tuple(parts)]  # NumPy and torch agree
    first: list = []
    second: list = []
    for p in parts:
        if p is Ellipsis:
            first.append(p)
            second.extend([slice(None)] * (ndim - used))
        elif _is_int(p):
            first.append(p)
        elif isinstance(p, np.ndarray):
            first.extend([slice(None)] * (p.ndim if p.dtype.kind == "b" else 1))
            second.append(p)
        else:  # a slice, None or a Python bool (both add a dim)
            first.append(p)
            second.append(slice(None))
    return [tuple(first), tuple(second)]


def where(condition: Any, x: Any, y: Any) -> TensorBase:
    """x where condition else y (torch.where); x or y may be Python numbers."""
    t = next((v for v in (condition, x, y) if isinstance(v, TensorBase)), None)
    if t is None:
        raise TypeError("where(): condition must be a tensor (as torch)")
    cond = condition if isinstance(condition, TensorBase) else t._lift(np.asarray(condition))
    if not isinstance(x, TensorBase):
        x = t._lift(np.asarray(x, dtype=getattr(y, "dtype", None)))
    x, y = x._pair(y)
    return t._apply("where", cond, x, y)


@composite("diag")
def _diag(x: TensorBase, k: int = 0) -> TensorBase:
    """1-D x of n: out[i, i + k] = x[i] in an (n + |k|) square of zeros (x gathered where the
    k-th diagonal is, 0 elsewhere: the gradient is g's k-th diagonal); 2-D x: out[i] =
    x[i + max(-k, 0), i + max(k, 0)] (getitem: the gradient goes back to the diagonal)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"diag(): argument 'diagonal' must be int, not {type(k).__name__}")
    if x.ndim == 2:
        rows, cols = x.shape
        n = max(0, min(rows - max(-k, 0), cols - max(k, 0)))
        i = np.arange(n)
        return x._apply("getitem", x, index=(i + max(-k, 0), i + max(k, 0)))
    if x.ndim != 1:
        raise RuntimeError(f"diag(): supports 1-D or 2-D tensors, got {x.ndim}-D (as torch)")
    m = x.shape[0] + abs(int(k))
    if x.shape[0] == 0:  # nothing to place: an |k| square of zeros
        return x._lift(np.zeros((m, m), x.dtype))
    r, c = np.indices((m, m))
    on = (c - r == k) & (r - max(-k, 0) < x.shape[0])
    picked = x._apply("getitem", x, index=(np.where(on, r - max(-k, 0), 0),))
    zero = x._lift(np.zeros((), x.dtype))
    return where(x._lift(on), picked, zero)
