"""minitorch.utils.data.DataLoader's API against torch's: the signature and positional order, the
argument errors (the same calls refused, each in one line), IterableDataset batching, the
dataset classes, torch's module paths, and an endless loader over an int(1e10)-sample sampler.
Deliberate difference, tested here: batches are always made in this process (num_workers > 0
gives torch's num_workers=0 batches; worker_init_fn is not called; get_worker_info() is None).
"""

from __future__ import annotations

import collections
import importlib
import inspect
import tracemalloc
import warnings

import numpy as np
import pytest
import torch

import minitorch as mt
from verification.test_data_samplers import count_draws  # randint wrapped: draws counted

LIBS = {"minitorch": mt, "torch": torch}


def _summary(batch):
    """A batch as plain data: dtype and values of each tensor, the containers' kinds."""
    if hasattr(batch, "dtype") and hasattr(batch, "shape"):
        return str(batch.dtype).removeprefix("torch."), batch.tolist()
    if isinstance(batch, dict):
        return type(batch).__name__, {k: _summary(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch).__name__, [_summary(b) for b in batch]
    return batch


def _epoch(loader):
    return [_summary(b) for b in loader]


def _squares(L):
    return L.utils.data.TensorDataset(L.arange(10) ** 2, L.arange(10).float())


def _stream(L, n, length=None):
    """An IterableDataset of library L yielding n samples (a float, an int, an array), with a
    __len__ when `length` is given (possibly a wrong one)."""
    class Stream(L.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(n):
                yield 0.5 * i, i, np.full(2, i, np.float32)

    if length is not None:
        Stream.__len__ = lambda self: length
    return Stream()


def test_signature_as_torch():
    """Names, kinds (positional or keyword-only), order and defaults of DataLoader.__init__."""
    def params(cls):
        return [(p.name, p.kind, p.default) for p in
                inspect.signature(cls.__init__).parameters.values()]

    assert params(mt.utils.data.DataLoader) == params(torch.utils.data.DataLoader)


@pytest.mark.parametrize("args", [
    (3,), (3, False), (3, None, None, None, 0, None, False, True),
    (4, False, None, None, 2, None, True, True),
    (None,), (1, None, "sequential"), (1, None, None, "batches"),
    (2, None, None, None, 0, "count"),
], ids=["batch_size", "shuffle False", "drop_last 9th", "num_workers and pin_memory",
        "batch_size None", "sampler 4th", "batch_sampler 5th", "collate_fn 7th"])
def test_positional_arguments_bind_as_torch(args):
    """The same positional call on both libraries: the same batches, twice, and the same len."""
    def loader(L):
        named = {"sequential": L.utils.data.SequentialSampler(range(10)),
                 "batches": L.utils.data.BatchSampler(range(10), 4, False), "count": len}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pin_memory without an accelerator
            made = L.utils.data.DataLoader(_squares(L), *(named.get(a, a) for a in args))
            return len(made), _epoch(made), _epoch(made)

    assert loader(mt) == loader(torch)


@pytest.mark.parametrize("kwargs", [
    {"shuffle": True, "sampler": "sequential"},
    {"batch_sampler": "batches", "batch_size": 2},
    {"batch_sampler": "batches", "shuffle": True},
    {"batch_sampler": "batches", "sampler": "sequential"},
    {"batch_sampler": "batches", "drop_last": True},
    {"batch_size": None, "drop_last": True},
    {"batch_size": 0}, {"batch_size": -2}, {"drop_last": 1},
    {"num_workers": -1}, {"timeout": -1.0},
    {"prefetch_factor": 2}, {"num_workers": 2, "prefetch_factor": -1},
    {"persistent_workers": True},
    {"multiprocessing_context": "fork"},
    {"num_workers": 2, "multiprocessing_context": "no such method"},
    {"num_workers": 2, "multiprocessing_context": 3},
    {"stream": True, "shuffle": True}, {"stream": True, "sampler": "sequential"},
    {"stream": True, "batch_sampler": "batches"},
], ids=lambda kw: ",".join(kw))
def test_argument_errors_as_torch(kwargs):
    """Each combination torch refuses is refused, with torch's exception type where that is a
    ValueError or TypeError, in one line."""
    def make(L):
        kw = dict(kwargs)
        data = _stream(L, 10) if kw.pop("stream", False) else _squares(L)
        named = {"sequential": L.utils.data.SequentialSampler(range(10)),
                 "batches": L.utils.data.BatchSampler(range(10), 4, False)}
        return L.utils.data.DataLoader(data, **{k: named.get(v, v) if "sampler" in k else v
                                                for k, v in kw.items()})

    with pytest.raises((ValueError, TypeError)) as want:
        make(torch)
    with pytest.raises(want.type) as got:
        make(mt)
    assert "\n" not in str(got.value)


@pytest.mark.parametrize("kwargs", [
    {"shuffle": False, "sampler": "sequential"}, {"batch_sampler": "batches", "batch_size": 1},
    {"batch_sampler": "batches", "shuffle": False}, {"num_workers": 2, "prefetch_factor": 3},
    {"num_workers": 2, "persistent_workers": True, "timeout": 5.0},
    {"num_workers": 2, "multiprocessing_context": "spawn"},
    {"stream": True, "shuffle": False}, {"batch_size": None, "sampler": "sequential"},
], ids=lambda kw: ",".join(kw))
def test_combinations_torch_accepts_are_accepted(kwargs):
    """The neighbours of the refused calls: accepted, and (map-style) the same batches."""
    def epoch(L):
        kw = dict(kwargs)
        data = _stream(L, 10) if kw.pop("stream", False) else _squares(L)
        named = {"sequential": L.utils.data.SequentialSampler(range(10)),
                 "batches": L.utils.data.BatchSampler(range(10), 4, False)}
        kw = {k: named.get(v, v) if "sampler" in k else v for k, v in kw.items()}
        loader = L.utils.data.DataLoader(data, **kw)
        return _epoch(loader) if kw.get("num_workers", 0) == 0 else len(loader)

    assert epoch(mt) == epoch(torch)


def test_timeout_without_workers_refused_at_iteration_as_torch():
    """torch builds the loader and refuses at iter(): batches made in this process cannot time
    out. The same with workers in minitorch is accepted (its batches are made in-process)."""
    with pytest.raises(AssertionError):
        iter(torch.utils.data.DataLoader(_squares(torch), timeout=5))
    with pytest.raises(ValueError) as info:
        iter(mt.utils.data.DataLoader(_squares(mt), timeout=5))
    assert "\n" not in str(info.value)
    assert len(list(mt.utils.data.DataLoader(_squares(mt), num_workers=2, timeout=5))) == 10


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", ["batch_size", "sampler", "batch_sampler", "drop_last",
                                  "dataset", "persistent_workers"])
def test_frozen_attributes_refused_after_init(lib, name):
    loader = LIBS[lib].utils.data.DataLoader(_squares(LIBS[lib]), batch_size=2)
    with pytest.raises(ValueError):
        setattr(loader, name, None)
    loader.num_workers = 0  # the others may change, as in torch


def test_num_workers_gives_the_batches_of_torch_with_and_without_workers():
    """minitorch with num_workers=3 (made in this process) against torch with num_workers=0
    and with two real worker processes: the same batches in the same order."""
    got = _epoch(mt.utils.data.DataLoader(_squares(mt), 3, num_workers=3))
    assert got == _epoch(torch.utils.data.DataLoader(_squares(torch), 3))
    assert got == _epoch(torch.utils.data.DataLoader(_squares(torch), 3, num_workers=2))


def test_in_process_loading_calls_no_worker_init_fn_and_has_no_worker_info():
    """The deliberate difference: as torch with num_workers=0, whatever num_workers says."""
    def run(L, num_workers):
        calls, infos = [], []

        class Probe(L.utils.data.Dataset):
            def __getitem__(self, i):
                infos.append(L.utils.data.get_worker_info())
                return i

            def __len__(self):
                return 4

        batches = _epoch(L.utils.data.DataLoader(Probe(), 2, num_workers=num_workers,
                                                 worker_init_fn=calls.append))
        return batches, calls, infos, L.utils.data.get_worker_info()

    want = run(torch, 0)
    assert want[1] == [] and want[2] == [None] * 4 and want[3] is None
    assert run(mt, 0) == want and run(mt, 4) == want


def test_pin_memory_is_a_no_op_with_torch_warning():
    """Without an accelerator torch warns once per iterator and pins nothing: the same here."""
    def run(L):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = _epoch(L.utils.data.DataLoader(_squares(L), 4, pin_memory=True))
        return batches, [str(w.message) for w in caught if w.category is UserWarning]

    assert not torch.accelerator.is_available()
    got, want = run(mt), run(torch)
    assert got == want and len(want[1]) == 1


@pytest.mark.parametrize("n", [0, 7, 9])
@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (1, False),
                                                  (None, False), (20, False), (20, True)])
def test_iterable_dataset_batches_as_torch(n, batch_size, drop_last):
    def epochs(L):
        loader = L.utils.data.DataLoader(_stream(L, n), batch_size, drop_last=drop_last)
        return _epoch(loader), _epoch(loader)

    assert epochs(mt) == epochs(torch)


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_dataset_len_as_torch(batch_size, drop_last):
    """len(loader) only when the dataset has a length (a TypeError otherwise, as torch's)."""
    for L in (mt, torch):
        with pytest.raises(TypeError):
            len(L.utils.data.DataLoader(_stream(L, 7), batch_size, drop_last=drop_last))

    def length(L):
        return len(L.utils.data.DataLoader(_stream(L, 7, 7), batch_size, drop_last=drop_last))

    assert length(mt) == length(torch)


def test_iterable_dataset_longer_than_its_len_warns_as_torch():
    """torch warns at each batch past the dataset's reported length (it compares batches with
    len(dataset), not with len(loader)): the same warnings here."""
    def run(L):
        loader = L.utils.data.DataLoader(_stream(L, 7, length=2), batch_size=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            n = len(loader)
            batches = _epoch(loader)
        return n, batches, len([w for w in caught if "Length of IterableDataset" in
                                str(w.message)])

    got, want = run(mt), run(torch)
    assert got == want and want[2] == 2  # torch compares batches with the dataset's length


def test_chain_and_concat_datasets_as_torch():
    def run(L):
        a, b = _squares(L), L.utils.data.TensorDataset(L.arange(3) - 7, L.ones(3))
        concat = L.utils.data.ConcatDataset([a, b])
        chain = L.utils.data.ChainDataset([_stream(L, 4), _stream(L, 3, 3)])
        added = a + b
        items = [_summary(concat[i]) for i in (0, 9, 10, 12, -1, -13)]
        return (len(concat), concat.cumulative_sizes, items, type(added).__name__, len(added),
                _epoch(L.utils.data.DataLoader(concat, 4)),
                _epoch(L.utils.data.DataLoader(chain, 3)),
                _epoch(L.utils.data.DataLoader(_stream(L, 2) + _stream(L, 2), 3)),
                type(_stream(L, 2) + _stream(L, 2)).__name__)

    assert run(mt) == run(torch)


def test_stack_and_subset_datasets_as_torch():
    def run(L):
        a, b = L.arange(6), L.arange(6) * 10
        stacked = L.utils.data.StackDataset(a, b)
        keyed = L.utils.data.StackDataset(x=a, y=b)
        subset = L.utils.data.Subset(_squares(L), [4, 1, 8])
        return (_summary(stacked[2]), _summary(keyed[3]), len(stacked),
                _epoch(L.utils.data.DataLoader(keyed, 4)),
                _epoch(L.utils.data.DataLoader(subset, 2)), _summary(subset[1]))

    assert run(mt) == run(torch)


@pytest.mark.parametrize("make", [
    lambda L: L.utils.data.ConcatDataset([]),
    lambda L: L.utils.data.ConcatDataset([_stream(L, 2)]),
    lambda L: L.utils.data.ConcatDataset([range(3)])[-4],
    lambda L: list(L.utils.data.ChainDataset([range(3)])),
    lambda L: L.utils.data.StackDataset(range(3), range(4)),
    lambda L: L.utils.data.StackDataset(),
    lambda L: L.utils.data.StackDataset(range(3), y=range(3)),
], ids=["concat of none", "concat of a stream", "concat index out of range",
        "chain of a map-style dataset", "stack of different lengths", "stack of none",
        "stack positional and keyword"])
def test_dataset_errors_as_torch(make):
    with pytest.raises((ValueError, AssertionError)):
        make(torch)
    with pytest.raises(ValueError) as info:
        make(mt)
    assert "\n" not in str(info.value)


def test_collation_of_numpy_scalars_and_mappings_as_torch():
    """NumPy scalars keep their dtype; an OrderedDict stays one; bytes stay as they come."""
    def run(L):
        items = [collections.OrderedDict(f=np.float32(i), i=np.int64(i), b=np.bool_(i % 2),
                                         s=b"x") for i in range(3)]
        single = L.utils.data.DataLoader(items, batch_size=None)
        return _epoch(L.utils.data.DataLoader(items, 2)), _epoch(single)

    assert run(mt) == run(torch)


@pytest.mark.parametrize("lib", LIBS)
def test_endless_loader_next_of_a_new_iterator(lib, monkeypatch):
    """A ported script's endless loader: RandomSampler(replacement=True, num_samples=int(1e10)),
    pin_memory and num_workers, and next(iter(loader)) 1,000 times (then 100 more traced);
    each batch a fresh draw costing one draw of 32 indices (torch's chunk), with a small traced
    peak: nothing of num_samples' size is drawn or allocated."""
    L = LIBS[lib]
    sizes = count_draws(monkeypatch, L)
    data = L.utils.data.TensorDataset(L.arange(1000), L.arange(1000).float() / 7)
    sampler = L.utils.data.RandomSampler(data, replacement=True, num_samples=int(1e10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator
        workers = 4 if L is mt else 0  # torch would start 4 processes per next(iter(...))
        loader = L.utils.data.DataLoader(data, sampler=sampler, batch_size=16, pin_memory=True,
                                         num_workers=workers)
        assert len(loader) == -(-int(1e10) // 16)
        batches = [next(iter(loader)) for _ in range(1000)]
        tracemalloc.start()  # (apart: tracing slows Python several times over)
        batches += [next(iter(loader)) for _ in range(100)]
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    indices = [tuple(b[0].tolist()) for b in batches]
    assert all(len(i) == 16 and all(0 <= v < 1000 for v in i) for i in indices)
    assert len(set(indices)) == 1100  # fresh draws: a repeated batch of 16 has odds ~1e-45
    assert all(np.allclose(b[1].numpy(), b[0].numpy() / 7) for b in batches)
    assert sizes == [32] * 1100, (len(sizes), set(sizes))
    assert peak < 20e6, peak


def test_endless_loader_while_true_over_a_recreated_iterator(monkeypatch):
    """The other idiom: one iterator consumed with next(), re-created on StopIteration (which
    an int(1e10)-sample epoch never reaches); and a short epoch re-created as it ends. The
    indices cost what the batches take: 8,000 indices in 250 draws of 32; a 40-sample epoch
    one draw of 32 and one of 8."""
    data = mt.utils.data.TensorDataset(mt.arange(100))
    sizes = count_draws(monkeypatch, mt)
    for num_samples, expect_restarts in ((int(1e10), 0), (40, 1000 * 8 // 40 - 1)):
        sizes.clear()
        sampler = mt.utils.data.RandomSampler(data, replacement=True, num_samples=num_samples,
                                              generator=mt.Generator(0))
        loader = mt.utils.data.DataLoader(data, sampler=sampler, batch_size=8, num_workers=4)
        it, restarts, seen = iter(loader), 0, []
        while len(seen) < 1000:
            try:
                seen.append(next(it)[0].tolist())
            except StopIteration:
                it, restarts = iter(loader), restarts + 1
        assert restarts == expect_restarts and all(len(b) == 8 for b in seen)
        per_epoch = [32] * 250 if num_samples > 8000 else [32, 8]
        assert sizes == per_epoch * (restarts + 1), (len(sizes), set(sizes))


@pytest.mark.parametrize("module,name", [
    ("dataloader", "DataLoader"), ("dataloader", "default_collate"),
    ("dataloader", "default_convert"), ("dataloader", "get_worker_info"),
    ("dataset", "Dataset"), ("dataset", "IterableDataset"), ("dataset", "TensorDataset"),
    ("dataset", "ConcatDataset"), ("dataset", "ChainDataset"), ("dataset", "StackDataset"),
    ("dataset", "Subset"), ("dataset", "random_split"), ("sampler", "Sampler"),
    ("sampler", "SequentialSampler"), ("sampler", "RandomSampler"),
    ("sampler", "SubsetRandomSampler"), ("sampler", "WeightedRandomSampler"),
    ("sampler", "BatchSampler"),
])
def test_torch_module_paths(module, name):
    """Where torch has a name, minitorch has it too: in the submodule and in the package."""
    for root in ("torch", "minitorch"):
        sub = importlib.import_module(f"{root}.utils.data.{module}")
        assert getattr(sub, name) is getattr(importlib.import_module(f"{root}.utils.data"),
                                             name)


def test_package_names_cover_torch_but_datapipes():
    """Every public name of torch.utils.data except the datapipes' machinery and
    DistributedSampler (issue 30 leaves it to the distributed package)."""
    datapipes = {"DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe",
                 "argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism",
                 "non_deterministic", "runtime_validation", "runtime_validation_disabled",
                 "_DatasetKind", "DistributedSampler"}
    wanted = set(torch.utils.data.__all__) - datapipes
    assert wanted <= set(mt.utils.data.__all__) <= set(torch.utils.data.__all__)
    assert all(hasattr(mt.utils.data, name) for name in mt.utils.data.__all__)


@pytest.mark.parametrize("lib", LIBS)
def test_dataset_base_classes_as_torch(lib):
    """Dataset has no default __len__ (len() is a TypeError); an IterableDataset without
    __iter__ cannot be made; both take a type parameter as torch's (Dataset[int])."""
    L = LIBS[lib]

    class NoLen(L.utils.data.Dataset[int]):
        def __getitem__(self, i):
            return i

    with pytest.raises(TypeError):
        len(NoLen())
    with pytest.raises(TypeError):
        L.utils.data.IterableDataset()
    with pytest.raises(NotImplementedError):
        L.utils.data.Dataset()[0]
    assert issubclass(L.utils.data.IterableDataset, L.utils.data.Dataset)
