"""minitorch.utils.data's samplers against torch.utils.data's: lengths, the deterministic orders
value for value, and the random ones by their properties (permutations per epoch, uniform or
weighted frequencies, reproducible under a seed) and by the generator calls they make. The
random streams themselves differ: minitorch's Generator is NumPy's PCG64, not torch's
Mersenne Twister, so no sequence is compared across the libraries."""

from __future__ import annotations

import importlib
import itertools
import math
import tracemalloc
from collections import Counter

import numpy as np
import pytest
import torch

import minitorch as mt

LIBS = {"minitorch": mt, "torch": torch}


def _gen(L, seed):
    return L.Generator().manual_seed(seed)


def _z_chi2(counts, expected):
    """Pearson's chi-square over the cells as a standard normal deviate (Wilson-Hilferty): a
    right sample stays below 5 but once in ~3.5 million."""
    chi2 = sum((c - e) ** 2 / e for c, e in zip(counts, expected, strict=True))
    k = len(counts) - 1
    return ((chi2 / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))


@pytest.mark.parametrize("n", [0, 1, 7])
def test_sequential_sampler_as_torch(n):
    got = mt.utils.data.SequentialSampler(range(n))
    want = torch.utils.data.SequentialSampler(range(n))
    assert (len(got), list(got)) == (len(want), list(want))


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("num_samples", [None, 5, 7, 17, 21])
def test_random_sampler_without_replacement_is_a_fresh_permutation_per_epoch(lib, num_samples):
    """Each whole block of n indices is a permutation; the cut last block has no repeats."""
    L, n = LIBS[lib], 7
    sampler = L.utils.data.RandomSampler(range(n), num_samples=num_samples,
                                         generator=_gen(L, 1))
    want_len = n if num_samples is None else num_samples
    epochs = [list(sampler) for _ in range(4)]
    assert len(sampler) == want_len and all(len(e) == want_len for e in epochs)
    for e in epochs:
        blocks = [e[i:i + n] for i in range(0, len(e), n)]
        assert all(sorted(b) == list(range(n)) for b in blocks if len(b) == n)
        assert all(len(set(b)) == len(b) for b in blocks)
    assert len({tuple(e) for e in epochs}) > 1  # epochs differ: 4 equal ones have odds 1/7!^3


@pytest.mark.parametrize("lib", LIBS)
def test_random_sampler_draws_as_torch_calls_its_generator(lib):
    """torch's stream structure, checked on both libraries: randint in chunks of 32 (then the
    remainder) with replacement; one randperm per block of n (the last one cut) without."""
    L, n = LIBS[lib], 11
    drawn = list(L.utils.data.RandomSampler(range(n), True, 70, _gen(L, 3)))
    g = _gen(L, 3)
    chunks = [L.randint(0, n, (k,), generator=g).tolist() for k in (32, 32, 6)]
    assert drawn == [i for c in chunks for i in c]
    drawn = list(L.utils.data.RandomSampler(range(n), False, 25, _gen(L, 4)))
    g = _gen(L, 4)
    perms = [L.randperm(n, generator=g).tolist() for _ in range(3)]
    assert drawn == perms[0] + perms[1] + perms[2][:3]


@pytest.mark.parametrize("lib", LIBS)
def test_random_sampler_with_replacement_is_uniform(lib):
    L, n, draws = LIBS[lib], 10, 200_000
    sampler = L.utils.data.RandomSampler(range(n), replacement=True, num_samples=draws,
                                         generator=_gen(L, 5))
    counts = Counter(sampler)
    assert len(sampler) == draws and sum(counts.values()) == draws
    assert sorted(counts) == list(range(n))
    assert _z_chi2([counts[i] for i in range(n)], [draws / n] * n) < 5
    # with replacement a small epoch repeats indices (no repeat in 20 draws of 10: impossible)
    small = list(L.utils.data.RandomSampler(range(n), True, 20, generator=_gen(L, 6)))
    assert len(set(small)) < len(small)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("replacement", [False, True])
def test_random_sampler_reproducible_under_a_seed(lib, replacement):
    """Under a generator: seeded alike, the same epochs. Without one: each epoch seeds a new
    generator from the default one, so manual_seed reproduces them."""
    L = LIBS[lib]

    def epochs(sampler):
        return [list(sampler) for _ in range(3)]

    def with_seed(seed):
        return epochs(L.utils.data.RandomSampler(range(30), replacement, 40, _gen(L, seed)))

    first = with_seed(7)
    assert first == with_seed(7) and first != with_seed(8) and first[0] != first[1]
    L.manual_seed(9)
    a = epochs(L.utils.data.RandomSampler(range(30), replacement, 40))
    L.manual_seed(9)
    assert a == epochs(L.utils.data.RandomSampler(range(30), replacement, 40))
    assert a[0] != a[1]


def test_random_sampler_without_a_generator_draws_one_seed_from_the_default():
    """Its first index draws one 63-bit seed from the default generator, then a Generator of
    that seed makes the epoch (torch: random_() on an int64 tensor, then manual_seed)."""
    mt.manual_seed(11)
    got = list(mt.utils.data.RandomSampler(range(9)))
    mt.manual_seed(11)
    seed = int(mt.default_generator.rng.integers(0, 2**63 - 1))
    assert got == mt.randperm(9, generator=mt.Generator(seed)).tolist()


def count_draws(monkeypatch, L) -> list[int]:
    """Wrap the randint each library's RandomSampler draws its indices with; returns the list of
    the sizes drawn, filled as the sampler draws (the cost is counted, not timed)."""
    sizes: list[int] = []
    owner = importlib.import_module("minitorch.utils.data.sampler") if L is mt else torch
    draw = owner.randint

    def counted(*args, **kwargs):
        out = draw(*args, **kwargs)
        sizes.append(int(out.numel()))
        return out

    monkeypatch.setattr(owner, "randint", counted)
    return sizes


@pytest.mark.parametrize("lib", LIBS)
def test_random_sampler_endless_is_lazy(lib, monkeypatch):
    """num_samples=int(1e10): its length as given, and the first 100,000 indices cost 100,000
    draws, 32 at a time (torch's chunks), with a small traced peak: nothing of num_samples' size
    is drawn or allocated."""
    L = LIBS[lib]
    sampler = L.utils.data.RandomSampler(range(50), replacement=True, num_samples=int(1e10))
    assert len(sampler) == int(1e10)
    sizes = count_draws(monkeypatch, L)
    tracemalloc.start()
    head = list(itertools.islice(sampler, 100_000))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(head) == 100_000 and set(head) == set(range(50))
    assert sizes == [32] * 3125, (len(sizes), set(sizes))
    assert peak < 20e6, peak


@pytest.mark.parametrize("kwargs,error", [
    ({"replacement": 1}, TypeError),
    ({"num_samples": 0}, ValueError),
    ({"num_samples": 2.5}, ValueError),
    ({"num_samples": -3}, ValueError),
], ids=["replacement not a bool", "num_samples 0", "num_samples a float", "num_samples < 0"])
def test_random_sampler_arguments_refused_as_torch(kwargs, error):
    with pytest.raises(error):
        torch.utils.data.RandomSampler(range(5), **kwargs)
    with pytest.raises(error) as info:
        mt.utils.data.RandomSampler(range(5), **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("lib", LIBS)
def test_random_sampler_of_an_empty_dataset_refused(lib):
    with pytest.raises(ValueError):
        LIBS[lib].utils.data.RandomSampler([])


@pytest.mark.parametrize("lib", LIBS)
def test_subset_random_sampler_permutes_its_indices(lib):
    L, indices = LIBS[lib], [3, 9, 4, 12, 30]
    sampler = L.utils.data.SubsetRandomSampler(indices, generator=_gen(L, 2))
    epochs = [list(sampler) for _ in range(6)]
    assert len(sampler) == 5 and all(sorted(e) == sorted(indices) for e in epochs)
    assert len({tuple(e) for e in epochs}) > 1
    g = _gen(L, 2)  # one randperm of the positions per epoch
    assert epochs[0] == [indices[i] for i in L.randperm(5, generator=g).tolist()]


@pytest.mark.parametrize("lib", LIBS)
def test_subset_random_sampler_reproducible_under_a_seed(lib):
    L = LIBS[lib]

    def epochs(seed):
        sampler = L.utils.data.SubsetRandomSampler(list(range(10, 30)), generator=_gen(L, seed))
        return [list(sampler) for _ in range(3)]

    assert epochs(4) == epochs(4) and epochs(4) != epochs(5)


@pytest.mark.parametrize("lib", LIBS)
def test_weighted_random_sampler_follows_the_weights(lib):
    L, weights, draws = LIBS[lib], [0.5, 0.0, 2.0, 1.0, 0.5], 100_000
    sampler = L.utils.data.WeightedRandomSampler(weights, draws, generator=_gen(L, 3))
    counts = Counter(sampler)
    assert len(sampler) == draws and counts[1] == 0  # a zero weight is never drawn
    cells = [0, 2, 3, 4]
    total = sum(weights)
    assert _z_chi2([counts[i] for i in cells], [draws * weights[i] / total for i in cells]) < 5
    unique = list(L.utils.data.WeightedRandomSampler([1, 1, 1, 1, 1], 5, replacement=False,
                                                     generator=_gen(L, 4)))
    assert sorted(unique) == list(range(5))


@pytest.mark.parametrize("args", [
    ([1.0, 2.0], 0), ([1.0, 2.0], True), ([1.0, 2.0], 2.0), ([[1.0, 2.0]], 2),
    ([1.0, 2.0], 2, 1),
], ids=["num_samples 0", "num_samples a bool", "num_samples a float", "2-d weights",
        "replacement not a bool"])
def test_weighted_random_sampler_arguments_refused_as_torch(args):
    with pytest.raises(ValueError):
        torch.utils.data.WeightedRandomSampler(*args)
    with pytest.raises(ValueError) as info:
        mt.utils.data.WeightedRandomSampler(*args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("n", [0, 1, 9, 10])
@pytest.mark.parametrize("batch_size", [1, 3, 10, 12])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_as_torch(n, batch_size, drop_last):
    def batches(L):
        sampler = L.utils.data.BatchSampler(L.utils.data.SequentialSampler(range(n)),
                                            batch_size, drop_last)
        return len(sampler), list(sampler), list(sampler)

    assert batches(mt) == batches(torch)


def test_batch_sampler_over_any_iterable_as_torch():
    """The sampler may be any iterable (a list, a generator's factory): batched lazily."""
    def batches(L):
        over_list = list(L.utils.data.BatchSampler([5, 1, 4, 1, 5], 2, False))
        endless = L.utils.data.BatchSampler(itertools.count(), 4, True)
        return over_list, list(itertools.islice(endless, 3))

    assert batches(mt) == batches(torch)


@pytest.mark.parametrize("batch_size,drop_last", [(0, False), (-1, False), (True, False),
                                                  (2.0, False), (2, 0), (2, None)])
def test_batch_sampler_arguments_refused_as_torch(batch_size, drop_last):
    with pytest.raises(ValueError):
        torch.utils.data.BatchSampler(range(4), batch_size, drop_last)
    with pytest.raises(ValueError) as info:
        mt.utils.data.BatchSampler(range(4), batch_size, drop_last)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("lib", LIBS)
def test_a_sampler_without_len_iterates_and_refuses_len(lib):
    """No default __len__ on Sampler (as torch): len() is a TypeError, list() still works."""
    L = LIBS[lib]

    class Evens(L.utils.data.Sampler[int]):
        def __iter__(self):
            return iter(range(0, 8, 2))

    with pytest.raises(TypeError):
        len(Evens())
    assert list(Evens()) == [0, 2, 4, 6]
    assert [b.tolist() for b in L.utils.data.DataLoader(np.arange(10), 3, sampler=Evens())] == \
        [[0, 2, 4], [6]]
