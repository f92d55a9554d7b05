"""minitorch.utils.data as torch.utils.data for in-memory data: TensorDataset, DataLoader
(batches, drop_last, torch's default collation), shuffling and random_split from minitorch's
generators. Unshuffled batches are compared with torch's value for value; shuffled ones by
their properties (the random streams differ between the libraries)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
import torch

import minitorch as mt

Pair = namedtuple("Pair", "x y")


def _summary(batch):
    if hasattr(batch, "dtype") and hasattr(batch, "shape"):
        return (str(batch.dtype).removeprefix("torch."), batch.tolist())
    if isinstance(batch, dict):
        return {k: _summary(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        kind = type(batch).__name__ if not hasattr(batch, "_fields") else "namedtuple"
        return kind, [_summary(b) for b in batch]
    return batch


DATASETS = {
    "tensor dataset": lambda L: L.utils.data.TensorDataset(
        L.arange(14).float().view(7, 2), L.arange(7)),
    "python items": lambda L: [(1.5 * i, i, f"s{i}", {"k": np.full(2, i, np.float32)})
                               for i in range(5)],
    "bools and namedtuples": lambda L: [Pair(i % 2 == 0, [i, -i]) for i in range(5)],
}


@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("batch_size,drop_last", [(2, False), (2, True), (5, False), (None, False)])
def test_batches_as_torch(name, batch_size, drop_last):
    def batches(L):
        loader = L.utils.data.DataLoader(DATASETS[name](L), batch_size=batch_size,
                                         drop_last=drop_last)
        return len(loader), [_summary(b) for b in loader]

    assert batches(mt) == batches(torch)


def test_shuffle_is_a_fresh_permutation_each_epoch_and_reproducible():
    data = mt.utils.data.TensorDataset(mt.arange(20))

    def epochs(seed):
        loader = mt.utils.data.DataLoader(data, batch_size=6, shuffle=True,
                                          generator=mt.Generator(seed))
        return [[v for b in loader for v in b[0].tolist()] for _ in range(3)]

    first = epochs(3)
    assert all(sorted(e) == list(range(20)) for e in first)
    assert first[0] != first[1] and first == epochs(3) and first != epochs(4)
    mt.manual_seed(5)
    a = [b[0].tolist() for b in mt.utils.data.DataLoader(data, batch_size=20, shuffle=True)]
    mt.manual_seed(5)
    assert a == [b[0].tolist() for b in mt.utils.data.DataLoader(data, batch_size=20,
                                                                  shuffle=True)]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.5], [1.0 / 3] * 3])
def test_random_split_lengths_as_torch(lengths):
    for n in (10, 11):
        if sum(lengths) != n and not np.isclose(sum(lengths), 1.0):
            continue
        got = mt.utils.data.random_split(range(n), lengths, generator=mt.Generator(0))
        want = torch.utils.data.random_split(range(n), lengths)
        assert [len(s) for s in got] == [len(s) for s in want]
        assert sorted(i for s in got for i in s) == list(range(n))


@pytest.mark.parametrize("make", [
    lambda L: L.utils.data.TensorDataset(L.ones(3, 2), L.ones(4)),
    lambda L: L.utils.data.DataLoader([1, 2], batch_size=0),
    lambda L: L.utils.data.random_split(range(5), [2, 2]),
], ids=["sizes differ", "batch_size 0", "lengths do not add up"])
def test_bad_arguments_refused_in_one_line(make):
    with pytest.raises((ValueError, AssertionError)):
        make(torch)
    with pytest.raises(ValueError) as info:
        make(mt)
    assert "\n" not in str(info.value)


def test_a_training_loop_over_a_loader_as_torch():
    """The same model and data, unshuffled: the weights after an epoch of minibatch SGD."""
    rng = np.random.default_rng(0)
    x, w0 = rng.normal(size=(12, 3)), rng.normal(size=(1, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.1

    def train(L):
        model = L.nn.Linear(3, 1).double()
        with L.no_grad():
            model.weight.copy_(L.tensor(w0))
            model.bias.zero_()
        opt = L.optim.SGD(model.parameters(), lr=0.1)
        loader = L.utils.data.DataLoader(L.utils.data.TensorDataset(L.tensor(x), L.tensor(y)),
                                         batch_size=4)
        for xb, yb in loader:
            opt.zero_grad()
            L.nn.MSELoss()(model(xb), yb).backward()
            opt.step()
        return model.weight.detach().numpy(), model.bias.detach().numpy()

    for got, want in zip(train(mt), train(torch), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
