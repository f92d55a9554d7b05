"""torch.utils.data.dataloader: DataLoader with torch's signature, argument checks, samplers and
collation. Batches are always made in this process: num_workers > 0 is accepted and gives the
batches torch gives with num_workers=0 (no worker processes; get_worker_info() stays None).
"""

from __future__ import annotations

import itertools
import multiprocessing
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from ...engine import Generator
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, draw_seed

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)

# the attributes torch refuses to change once a loader is built (its iterators read them)
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def get_worker_info() -> None:
    """None: torch's answer in the main process, where minitorch makes every batch."""
    return None


class _InfiniteConstantSampler(Sampler[None]):
    """None forever: the 'indices' of an IterableDataset, which is read in order instead."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


class DataLoader(Generic[T_co]):
    """Batches of a dataset: map-style ones through a sampler (sequential, shuffled each epoch,
    or the one given), IterableDatasets read in order; torch's signature and positional order.

    Args:
        dataset: a map-style dataset (__getitem__, __len__) or an IterableDataset.
        batch_size: samples per batch; None: no batching (each sample through default_convert).
        shuffle: a new random order every epoch (a RandomSampler on `generator`).
        sampler: the index order (an iterable of indices); excludes shuffle.
        batch_sampler: an iterable of index lists; excludes batch_size, shuffle, sampler and
            drop_last.
        num_workers: accepted; batches are made in this process, in order, worker_init_fn is
            not called (as torch with num_workers=0).
        collate_fn: list of samples -> batch (default default_collate, or default_convert
            without batching).
        pin_memory: accepted; a no-op on the CPU (with torch's warning that no accelerator was
            found).
        drop_last: drop a last batch smaller than batch_size.
        timeout, worker_init_fn, multiprocessing_context, prefetch_factor, persistent_workers,
            pin_memory_device, in_order: checked as torch checks them, otherwise unused.
        generator: the random source of shuffle=True (and of torch's per-iterator base seed).
    """

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler[list] | Iterable[list] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers)
        context = _context(multiprocessing_context, num_workers)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value, given in (
                    ("shuffle", shuffle, shuffle not in (None, False)),
                    ("sampler", sampler, sampler is not None),
                    ("batch_sampler", batch_sampler, batch_sampler is not None)):
                if given:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value!r}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.prefetch_factor = num_workers, _prefetch(num_workers,
                                                                        prefetch_factor)
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout, self.worker_init_fn, self.in_order = timeout, worker_init_fn, in_order
        self.multiprocessing_context = context
        self.persistent_workers = persistent_workers
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterable = iterable
        self._IterableDataset_len_called: int | None = None  # torch's name: scripts read it
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_initialized") and name in _FROZEN:
            raise ValueError(f"DataLoader: {name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _DataLoaderIter:
        return _DataLoaderIter(self)

    def __len__(self) -> int:
        if not self._iterable:
            return len(self._index_sampler)  # type: ignore[arg-type]
        n = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class _DataLoaderIter:
    """One pass over a DataLoader (torch's single-process iterator): one index or batch of
    indices from the sampler, then the samples, then collate_fn."""

    def __init__(self, loader: DataLoader) -> None:
        if loader.num_workers == 0 and loader.timeout != 0:
            raise ValueError(f"DataLoader: timeout={loader.timeout} needs num_workers > 0 "
                             "(torch refuses a timeout for batches made in this process)")
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                          f"used as the device,ignore pin_memory_device="
                          f"'{loader.pin_memory_device}'.", stacklevel=3)
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        self._loader, self._num_yielded = loader, 0
        self._sampler_iter = iter(loader._index_sampler)
        # torch draws its workers' base seed at every iter(loader); drawn here too, so a
        # generator (or the default one) advances at the same calls as torch's
        self._base_seed = draw_seed(loader.generator)
        self._samples = iter(loader.dataset) if loader._iterable else None  # type: ignore
        self._ended = False

    def __iter__(self) -> _DataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader._index_sampler)  # type: ignore[arg-type]

    def __next__(self) -> Any:
        loader = self._loader
        index = next(self._sampler_iter)
        data = self._fetch_stream(index) if loader._iterable else self._fetch_map(index)
        self._num_yielded += 1
        told = loader._IterableDataset_len_called
        if loader._iterable and told is not None and self._num_yielded > told:
            warnings.warn(f"Length of IterableDataset {loader.dataset} was reported to be "
                          f"{told}(when accessing len(dataloader)), but {self._num_yielded} "
                          "samples have been fetched. ", stacklevel=2)
        return data

    def _fetch_map(self, index: Any) -> Any:
        loader = self._loader
        if not loader._auto_collation:
            return loader.collate_fn(loader.dataset[index])
        getitems = getattr(loader.dataset, "__getitems__", None)
        samples = getitems(index) if callable(getitems) else [loader.dataset[i] for i in index]
        return loader.collate_fn(samples)

    def _fetch_stream(self, index: Any) -> Any:
        loader, samples = self._loader, self._samples
        if self._ended:
            raise StopIteration
        if not loader._auto_collation:
            return loader.collate_fn(next(samples))  # type: ignore[arg-type]
        batch = list(itertools.islice(samples, len(index)))  # type: ignore[arg-type]
        self._ended = len(batch) < len(index)
        if not batch or (loader.drop_last and self._ended):
            raise StopIteration
        return loader.collate_fn(batch)


def _check_workers(num_workers: int, timeout: float, prefetch_factor: int | None,
                   persistent_workers: bool) -> None:
    """torch's checks of the worker options, each refused in one line."""
    if num_workers < 0:
        raise ValueError("DataLoader: num_workers option should be non-negative; use "
                         "num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("DataLoader: timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                         "multiprocessing; let num_workers > 0 to enable multiprocessing, "
                         "otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("DataLoader: prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")


def _prefetch(num_workers: int, prefetch_factor: int | None) -> int | None:
    """torch's default: 2 batches per worker when there are workers."""
    return 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor


def _context(context: Any, num_workers: int) -> Any:
    """A start method's name or a multiprocessing context, checked as torch checks it."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError(f"DataLoader: multiprocessing_context can only be used with "
                         f"multi-process loading (num_workers > 0), but got "
                         f"num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"DataLoader: multiprocessing_context option should specify a "
                             f"valid start method in {methods!r}, but got "
                             f"multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(f"DataLoader: multiprocessing_context option should be a valid context "
                        f"object or a string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    return context
