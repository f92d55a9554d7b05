"""Reductions (torch names: dim, keepdim): sum, mean, var/std (and with the mean), max/min with
their indices, prod, any/all, cumsum/cumprod/cummax/cummin, sort, logsumexp, softmax.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from ..dtypes import is_float
from ..registry import composite
from .base import TensorBase, as_axis, check_dim, numpy_aliases
from .indexing import where

MaxResult = namedtuple("MaxResult", ["values", "indices"])
SortResult = namedtuple("SortResult", ["values", "indices"])
CumResult = namedtuple("CumResult", ["values", "indices"])


class Reduce(TensorBase):
    """Reductions over dims, and the ones along one dim (cumsum, sort)."""

    __slots__ = ()

    @numpy_aliases
    def any(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self.ne(0).sum(dim, keepdim) > 0

    @numpy_aliases
    def all(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self.eq(0).sum(dim, keepdim) == 0

    @numpy_aliases
    def sum(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self._apply("sum", self, axis=as_axis(dim), keepdims=keepdim)

    @numpy_aliases
    def mean(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self._apply("mean", self, axis=as_axis(dim), keepdims=keepdim)

    @numpy_aliases
    def var(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> TensorBase:
        """sum((x - mean)^2) / (N - correction) over `dim` (default all), with torch's overloads:
        the second positional argument is `unbiased` (correction 1 or 0), var(True) is
        var(unbiased=True), and correction= is keyword-only."""
        dim, correction = _correction("var", dim, unbiased, correction)
        return self._apply("var", self, axis=as_axis(dim), keepdims=keepdim, ddof=correction)

    @numpy_aliases
    def std(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> TensorBase:
        """sqrt of var, with var's arguments."""
        dim, correction = _correction("std", dim, unbiased, correction)
        return self.var(dim, keepdim=keepdim, correction=correction).sqrt()

    @numpy_aliases
    def amax(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self._apply("max", self, axis=as_axis(dim), keepdims=keepdim)

    @numpy_aliases
    def prod(self, dim: int | None = None, keepdim: bool = False, *, dtype=None) -> TensorBase:
        """Product over all elements or along one dim (int64 for integers and bools, as torch);
        the gradient is exact where elements are 0. dtype= casts first, as torch."""
        if dim is None and keepdim:
            raise TypeError("prod: keepdim needs a dim (as torch)")
        out = self._apply("prod", self._cast(dtype), axis=dim, keepdims=keepdim)
        return out if dtype is None else out._cast(dtype)  # dtype=bool: the product of bools

    @numpy_aliases
    def cumsum(self, dim: int, *, dtype=None) -> TensorBase:
        return self._apply("cumsum", self._cast(dtype), axis=dim)

    @numpy_aliases
    def cumprod(self, dim: int, *, dtype=None) -> TensorBase:
        return self._apply("cumprod", self._cast(dtype), axis=dim)

    @numpy_aliases
    def cummax(self, dim: int):
        """(values, indices): the running maximum along dim and where it was taken."""
        return _cummax(self, dim)

    @numpy_aliases
    def cummin(self, dim: int):
        """(values, indices): the running minimum along dim (as cummax of the flipped order)."""
        return _cummin(self, dim)

    def _cast(self, dtype) -> TensorBase:
        """self converted to dtype first (None: self), as the dtype= argument of torch's
        reductions and softmax does."""
        return self if dtype is None else self.to(dtype)

    def argsort(self, dim: int = -1, descending: bool = False, *,
                stable: bool = False) -> TensorBase:
        """Indices that sort along dim; always stable (ties keep their order), nan the largest."""
        return self._apply("argsort", self, axis=dim, descending=descending)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False):
        """(values, indices) sorted along dim, stably; values are gathered at indices, so the
        gradient goes back to the positions they came from."""
        indices = self.argsort(dim, descending)
        if self.ndim == 0:
            return SortResult(self.clone(), indices)
        return SortResult(self.gather(dim, indices), indices)

    @numpy_aliases
    def max(self, dim=None, keepdim: bool = False):
        """Like torch: the maximum over all elements (ties share the gradient), or (values,
        indices) along `dim`, where values are taken at indices (the first maximum), so the
        whole gradient goes there. x.max(other) with a Tensor is maximum, as torch's."""
        if isinstance(dim, TensorBase):
            return self.maximum(dim)
        if dim is None:
            return self._apply("max", self, axis=None, keepdims=False, select=True)
        indices = self.argmax(dim, keepdim=True)
        if self.ndim == 0:
            return MaxResult(self.clone(), indices)
        d = dim % self.ndim
        index = list(np.ix_(*(np.arange(n) for n in indices.shape)))  # open grids, keepdim shape
        index[d] = indices.data
        values = self._apply("getitem", self, index=tuple(index))
        if not keepdim:
            values, indices = values.squeeze(d), indices.squeeze(d)
        return MaxResult(values, indices)

    @numpy_aliases
    def argmax(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self._apply("argmax", self, axis=dim, keepdims=keepdim)

    def _flipped(self) -> TensorBase:
        """The order reversed exactly: -x for floats, ~x = -x - 1 for integers (no overflow at
        the most negative one) and not x for bools. min is max of this, flipped back."""
        return -self if is_float(self.dtype) else ~self

    @numpy_aliases
    def amin(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self._flipped().amax(dim, keepdim)._flipped()

    @numpy_aliases
    def min(self, dim=None, keepdim: bool = False):
        """torch.min: over all elements, or (values, indices) along `dim` (as max); with a
        Tensor, minimum."""
        if isinstance(dim, TensorBase):
            return self.minimum(dim)
        if dim is None:
            return self._flipped().max()._flipped()
        values, indices = self._flipped().max(dim, keepdim)
        return MaxResult(values._flipped(), indices)

    @numpy_aliases
    def argmin(self, dim=None, keepdim: bool = False) -> TensorBase:
        return self._flipped().argmax(dim, keepdim)

    @numpy_aliases
    def logsumexp(self, dim, keepdim: bool = False) -> TensorBase:
        """log(sum(exp(x), dim)), shifted by the (constant) maximum so it cannot overflow; the
        gradient is softmax(x, dim)."""
        x = self._floating()
        if x.numel() == 0:  # no maximum to shift by: the sum of no exps is 0, its log -inf
            shift = x.detach().sum(dim, keepdim=True)
        else:
            shift = x.detach().amax(dim, keepdim=True)
            shift = where(shift.isfinite(), shift, 0.0)  # all -inf or inf rows: no shift
        out = (x - shift).exp().sum(dim, keepdim=True).log() + shift
        return out if keepdim else out.sum(dim)  # summing the size-1 dims drops them

    @numpy_aliases
    def softmax(self, dim: int = -1, dtype=None) -> TensorBase:
        return self._apply("softmax", self._cast(dtype), axis=dim)

    @numpy_aliases
    def log_softmax(self, dim: int = -1, dtype=None) -> TensorBase:
        return self._apply("log_softmax", self._cast(dtype), axis=dim)


@composite("var_mean")
def var_mean(x: TensorBase, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple[TensorBase, TensorBase]:
    """torch.var_mean: (sum((x - mean)^2) / (N - correction), mean) over `dim`, with var's
    overloads (unbiased positional or correction= keyword; a bool first argument is unbiased)."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return x.var(dim, keepdim=keepdim, correction=correction), x.mean(dim, keepdim)


@composite("std_mean")
def std_mean(x: TensorBase, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple[TensorBase, TensorBase]:
    """torch.std_mean: (sqrt of var_mean's variance, the mean), with var's arguments."""
    var, mean = var_mean(x, dim, unbiased, keepdim, correction=correction)
    return var.sqrt(), mean


def _correction(name: str, dim, unbiased, correction) -> tuple[Any, int]:
    """torch's var/std overloads -> (dim, correction): (dim, unbiased) or (dim, *, correction);
    a bool first argument is `unbiased`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim if unbiased is None else unbiased
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}: give unbiased or correction, not both (as torch)")
    if correction is None:
        correction = 1 if unbiased is None else int(unbiased)
    return dim, correction


def _running_argmax(a: np.ndarray, axis: int) -> np.ndarray:
    """Where the running maximum along axis was taken, with torch's rule: a tie takes the later
    index, and nan is the largest (the latest nan). The running maximum only changes at a record,
    so each position takes the latest i <= j with a[i] == max(a[:i+1])."""
    run = np.maximum.accumulate(a, axis=axis)  # propagates nan
    record = (a == run) | (np.isnan(a) & np.isnan(run)) if a.dtype.kind == "f" else a == run
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    pos = np.where(record, np.arange(a.shape[axis]).reshape(shape), 0)
    return np.maximum.accumulate(pos, axis=axis).astype(np.int64)


@composite("cummax")
def _cummax(x: TensorBase, dim: int) -> CumResult:
    """values[j] = max(x[:j+1]) along dim, taken at indices[j] (the later index on ties, nan the
    largest, as torch); values are gathered there, so the gradient goes to the index taken."""
    d = check_dim(dim, x.ndim, "cummax")
    if x.ndim == 0:
        return CumResult(x.clone(), x._wrap(np.zeros((), np.int64)))
    indices = x._wrap(_running_argmax(x.data, d))
    return CumResult(x.gather(d, indices), indices)


@composite("cummin")
def _cummin(x: TensorBase, dim: int) -> CumResult:
    """values[j] = min(x[:j+1]) along dim: cummax of the order flipped (-x, ~x), flipped back;
    the later index on ties, nan the smallest's rule as torch (nan wins)."""
    values, indices = _cummax(x._flipped(), dim)
    return CumResult(values._flipped(), indices)
