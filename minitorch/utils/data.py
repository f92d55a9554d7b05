"""torch.utils.data for in-memory training data: Dataset, TensorDataset, Subset, random_split
and a single-process DataLoader (batching, shuffling from minitorch's generators, drop_last,
torch's default collation). Uses the engine only; no worker processes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..engine import Generator, Tensor, default_generator, stack, tensor


class Dataset:
    """A map-style dataset: `__getitem__(i)` and `__len__()`, as torch's."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Item i is (t[i] for t in tensors); every tensor has the same first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors or any(t.ndim == 0 or t.shape[0] != tensors[0].shape[0]
                              for t in tensors):
            raise ValueError(f"TensorDataset: every tensor needs the same first dimension, got "
                             f"shapes {[tuple(t.shape) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[float],
                 generator: Generator | None = None) -> list[Subset]:
    """Split into non-overlapping Subsets of the given lengths, or fractions summing to 1 (the
    remainder spread one by one from the first, as torch), after a random permutation."""
    n = len(dataset)
    if lengths and all(0 <= f <= 1 for f in lengths) and math.isclose(sum(lengths), 1.0) \
            and sum(lengths) != n:
        counts = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n or any(int(k) != k or k < 0 for k in lengths):
        raise ValueError(f"random_split: lengths {list(lengths)} must be non-negative integers "
                         f"summing to the dataset's length {n}, or fractions summing to 1")
    order = (generator or default_generator).rng.permutation(n).tolist()
    bounds = np.cumsum([0, *lengths]).tolist()
    return [Subset(dataset, order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def default_collate(batch: list) -> Any:
    """torch's rule: tensors and arrays stacked (a new first dim), Python floats to a float64
    tensor, ints to int64, bools to bool, strings left as they come, and tuples, lists and
    dicts collated field by field (a tuple's fields come back as a list, as torch's)."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch)
    if isinstance(first, np.ndarray):
        return stack([tensor(a) for a in batch])
    if isinstance(first, bool):
        return tensor(batch, dtype=np.bool_)
    if isinstance(first, numbers.Integral):
        return tensor(batch, dtype=np.int64)
    if isinstance(first, numbers.Real):
        return tensor(batch, dtype=np.float64)
    if isinstance(first, str):
        return batch
    if isinstance(first, Mapping):
        return {key: default_collate([item[key] for item in batch]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(item) != len(first) for item in batch):
            raise RuntimeError("default_collate: each element in the batch must have the same "
                               "number of fields")
        fields = [default_collate(f) for f in zip(*batch)]
        if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple keeps its type
            return type(first)(*fields)
        return fields
    raise TypeError(f"default_collate: cannot batch a {type(first).__name__} (tensors, arrays, "
                    "numbers, strings, and tuples, lists and dicts of them)")


def default_convert(item: Any) -> Any:
    """What batch_size=None yields, as torch's: arrays become tensors, tuples lists (a
    namedtuple keeps its type), dicts and lists converted field by field, the rest as is."""
    if isinstance(item, np.ndarray):
        return tensor(item)
    if isinstance(item, Mapping):
        return {key: default_convert(value) for key, value in item.items()}
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return type(item)(*(default_convert(v) for v in item))
    if isinstance(item, (tuple, list)):
        return [default_convert(v) for v in item]
    return item


class DataLoader:
    """Batches of a map-style dataset, in order or shuffled (a new permutation each epoch, drawn
    from `generator` or minitorch's default generator), in this process.

    Args:
        dataset: anything with __getitem__ and __len__.
        batch_size: items per batch; None yields single items (default_convert).
        shuffle: a new random order every epoch.
        drop_last: drop a last batch smaller than batch_size.
        collate_fn: list of items -> batch (default: default_collate).
        num_workers, pin_memory: accepted; batches are made in this process.
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool = False,
                 drop_last: bool = False, collate_fn: Callable | None = None,
                 generator: Generator | None = None, num_workers: int = 0,
                 pin_memory: bool = False) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"DataLoader: batch_size must be a positive int or None, got "
                             f"{batch_size!r}")
        if num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be >= 0, got {num_workers}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.drop_last, self.generator = drop_last, generator
        self.collate_fn = collate_fn or default_collate

    def _order(self) -> list[int]:
        n = len(self.dataset)
        if self.shuffle:
            return (self.generator or default_generator).rng.permutation(n).tolist()
        return list(range(n))

    def __iter__(self) -> Iterator:
        order = self._order()
        if self.batch_size is None:
            yield from (default_convert(self.dataset[i]) for i in order)
            return
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            if self.drop_last and len(chunk) < self.batch_size:
                return
            yield self.collate_fn([self.dataset[i] for i in chunk])

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
