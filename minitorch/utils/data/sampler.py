"""torch.utils.data.sampler: the orders in which a DataLoader visits a dataset's indices, and
their batching. Random draws come from minitorch's generators in the same calls torch makes
(randint in chunks of 32, one randperm per epoch), so the streams are minitorch's, not torch's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

from ...engine import (
    Generator,
    as_tensor,
    default_generator,
    float64,
    multinomial,
    randint,
    randperm,
)

T_co = TypeVar("T_co", covariant=True)


def draw_seed(generator: Generator | None) -> int:
    """A 63-bit seed from `generator` (default: minitorch's), as torch's
    `torch.empty((), dtype=torch.int64).random_(generator=...)`."""
    return int((generator or default_generator).rng.integers(0, 2**63 - 1))


class Sampler(Generic[T_co]):
    """Base class: subclasses define __iter__ (and __len__ if they can). No default __len__, as
    torch's: list(sampler) then falls back to iterating instead of failing."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1, every epoch."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Random indices of data_source: without replacement a fresh permutation per epoch (several
    when num_samples > len, the last one cut), with replacement num_samples uniform draws made
    lazily, 32 at a time, so num_samples=int(1e10) costs nothing up front.

    Args:
        data_source: anything with __len__.
        replacement: draw with replacement.
        num_samples: indices per epoch (default len(data_source)).
        generator: the random source; None: each epoch seeds a new one from minitorch's default.
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples should be a positive integer value, "
                             f"but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # read at every epoch: the dataset may grow between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if n == 0:
            raise ValueError("RandomSampler: cannot draw num_samples indices from an empty "
                             "data_source")
        generator = self.generator or Generator(draw_seed(None))
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(n, (32,), generator=generator).tolist()
            yield from randint(n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order (a new permutation each epoch)."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """num_samples indices of weights drawn with probability proportional to each weight (with
    replacement by default; without, each index at most once), one multinomial per epoch."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples should be a positive integer "
                             f"value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a boolean value, but "
                             f"got replacement={replacement}")
        self.weights = as_tensor(weights, dtype=float64)
        if self.weights.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but given "
                             f"weights have shape {tuple(self.weights.shape)}")
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Lists of batch_size consecutive indices of `sampler` (the last one shorter unless
    drop_last), taken lazily, so an endless sampler gives endless batches."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer value, but "
                             f"got batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]  (only samplers with a length have one)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
