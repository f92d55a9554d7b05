"""torch.utils.data.dataset: map-style datasets (Dataset, TensorDataset, StackDataset,
ConcatDataset, Subset, random_split) and iterable ones (IterableDataset, ChainDataset), for data
held in memory or streamed by Python code. Uses the engine only.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ...engine import Generator, Tensor, default_generator, randperm

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: `__getitem__(i)` and usually `__len__()`, as torch's (which gives no
    default __len__: a subclass without one is refused by len() with a TypeError)."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A stream of samples: subclasses define __iter__ (and __len__ only if they know it). The
    DataLoader iterates it directly, batching consecutive samples."""

    def __add__(self, other: Dataset) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Item i is (t[i] for t in tensors); every tensor has the same first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors or any(t.ndim == 0 or t.shape[0] != tensors[0].shape[0]
                              for t in tensors):
            raise ValueError(f"TensorDataset: every tensor needs the same first dimension, got "
                             f"shapes {[tuple(t.shape) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Item i is (d[i] for d in args), or {key: d[i]} for keyword datasets; same lengths."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("StackDataset: give datasets either positionally (tuple items) or "
                             "by keyword (dict items), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        self.datasets: tuple | dict = args or kwargs
        parts = args or tuple(kwargs.values())
        self._length = len(parts[0])  # type: ignore[arg-type]
        if any(len(d) != self._length for d in parts):  # type: ignore[arg-type]
            raise ValueError(f"StackDataset: size mismatch between datasets "
                             f"{[len(d) for d in parts]}")  # type: ignore[arg-type]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """The map-style datasets one after another: index i falls in the first whose cumulative
    size exceeds it; negative indices count from the end."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise ValueError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: index {idx} out of range for length "
                                 f"{len(self)}")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """IterableDatasets one after another, chained as they are iterated."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def _checked(self) -> Iterator[IterableDataset]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise ValueError(f"ChainDataset only supports IterableDataset, got "
                                 f"{type(d).__name__}")
            yield d

    def __iter__(self) -> Iterator:
        for d in self._checked():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._checked())  # type: ignore[arg-type]


class Subset(Dataset[T_co]):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, indices
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            # the DataLoader fetches through __getitems__, which would skip the override
            raise NotImplementedError(f"{type(self).__name__} overrides __getitem__ but not "
                                      "__getitems__; define both (as torch requires)")

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        mapped = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(mapped)  # type: ignore[attr-defined]
        return [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[float],
                 generator: Generator | None = default_generator) -> list[Subset]:
    """Split into non-overlapping Subsets of the given lengths, or of fractions summing to 1
    (floor(n * f) each, the remainder spread one by one from the first, as torch), after one
    randperm of the dataset's indices."""
    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1")
        counts = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, k in enumerate(counts):
            if k == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
        lengths = counts
    if sum(lengths) != n or any(int(k) != k or k < 0 for k in lengths):
        raise ValueError(f"random_split: lengths {list(lengths)} must be non-negative integers "
                         f"summing to the dataset's length {n}, or fractions summing to 1")
    order = randperm(n, generator=generator).tolist()
    bounds = list(itertools.accumulate(int(k) for k in lengths))
    return [Subset(dataset, order[end - int(k):end]) for end, k in zip(bounds, lengths)]
