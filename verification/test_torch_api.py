"""The rest of the torch API a ported script reaches for, side by side with torch: factories
(full, arange, rand, randint, from_numpy), tril/triu, topk, gather, multinomial, `.to(device)`,
`.cpu()`, `zero_grad(set_to_none=False)`, iteration, and torch's dtype names. Each case runs on
both libraries and must give the same dtype, values and gradients, or both refuse."""

from __future__ import annotations

import array

import numpy as np
import pytest
import torch

import minitorch as mt


def _result(r):
    if isinstance(r, tuple):
        return tuple(_result(x) for x in r)
    if hasattr(r, "detach"):
        return str(r.dtype).removeprefix("torch."), r.detach().numpy().tolist()
    return r


def _grad_of(L, fn, data):
    x = L.tensor(data, requires_grad=True)
    out = fn(L, x)
    out = out[0] if isinstance(out, tuple) else out
    (out * L.arange(1, out.numel() + 1).reshape(out.shape)).sum().backward()
    return _result(out), x.grad.numpy().tolist()


SAME = {
    "full int": lambda L: L.full((2,), 3),
    "full float": lambda L: L.full((2, 1), 3.5),
    "full bool": lambda L: L.full((3,), True),
    "arange ints": lambda L: L.arange(4),
    "arange floats": lambda L: L.arange(0.0, 2.0, 0.5),
    "tril": lambda L: L.tril(L.ones(3, 4)),
    "triu batched int": lambda L: L.triu(L.ones(2, 3, 3, dtype=L.long), 1),
    "tril below": lambda L: L.tril(L.ones(3, 3), -1),
    "topk": lambda L: L.topk(L.tensor([[1.0, 5.0, 3.0, 5.0], [4.0, 0.0, 6.0, 2.0]]), 2),
    "topk smallest dim 0": lambda L: L.topk(L.tensor([[3.0, 1.0], [2.0, 4.0]]), 1, 0, False),
    "gather": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]).gather(1, L.tensor([[0, 0], [1, 0]])),
    "multinomial one-hot rows": lambda L: L.multinomial(L.tensor([[0.0, 1.0, 0.0],
                                                                  [0.0, 0.0, 2.0]]), 2, True),
    "multinomial all, no replacement": lambda L: L.multinomial(L.ones(4), 4).sort()[0]
    if L is torch else L.tensor(np.sort(L.multinomial(L.ones(4), 4).numpy())),
    "to cpu": lambda L: L.ones(2).to("cpu"),
    "to cpu and dtype": lambda L: L.ones(2).to("cpu", L.double),
    "to other's dtype": lambda L: L.ones(2).to(L.zeros(1, dtype=L.long)),
    "to positional (device, dtype, non_blocking, copy)": lambda L: L.ones(2).to(
        "cpu", L.double, False, True),
    "to positional copy is a new tensor": lambda L: _to_copies(L),
    "cpu()": lambda L: L.ones(2).cpu(),
    "dtype names": lambda L: L.tensor([1, 0], dtype=L.bool) | L.tensor([0, 0], dtype=L.long).eq(
        L.zeros(2, dtype=L.float)),
    "iterate": lambda L: tuple(t * 2 for t in L.tensor([[1, 2], [3, 4]])),
    "tensor copies an array": lambda L: _tensor_then_write(L),
    "element writes land": lambda L: _element_writes(L),
    "randint(high, size)": lambda L: (L.randint(2, (5, 3)).shape, L.randint(10, (3,)).shape),
    "topk nan largest": lambda L: L.topk(L.tensor([1.0, float("nan"), 3.0, 2.0]), 2),
    "topk most negative int": lambda L: L.topk(L.tensor([3, np.iinfo(np.int64).min, 5]), 1),
    "topk smallest with nan": lambda L: L.topk(L.tensor([3.0, float("nan"), 1.0]), 2,
                                               largest=False),
    "arange numpy int": lambda L: L.arange(np.int64(5)),
    "full numpy int": lambda L: L.full((2,), np.int64(3)),
    "== None": lambda L: (L.ones(2) == None, L.ones(2) != "a", None in [L.ones(2)]),  # noqa: E711
    "format": lambda L: f"{L.tensor(2.0):.3f} {L.tensor(7):>4d} {L.tensor([1.5])}"[:14],
}


def _to_copies(L):
    """.to's positional copy flag (and copy=) give a new tensor even when nothing changes."""
    x = L.ones(2)
    return (x.to("cpu", None, False, True) is x, x.to(L.float, False, False) is x,
            x.to(x, True) is x, x.to("cpu", copy=True) is x)


def _tensor_then_write(L):
    a, b = np.zeros(3), array.array("q", [1, 2])
    t, u = L.tensor(a), L.tensor(b)
    t += 1
    t[0] = 5
    u += 1
    return a.tolist(), t.tolist(), list(b), u.tolist()


def _element_writes(L):
    x = L.zeros(2, 3)
    e = x[0, 1]
    e += 5
    x[1][2].fill_(7)
    for row in x:
        row.add_(1)
    return x.tolist()


def _zero_on_a_node(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.zero_()
    (y + x).sum().backward()
    return y.requires_grad, x.grad.tolist()


def _fill_with_a_tensor(L):
    v = L.tensor(2.0, requires_grad=True)
    x = L.zeros(3)
    x.fill_(v)
    ((x * L.tensor([1.0, 2.0, 3.0])).sum() + v).backward()
    return x.tolist(), v.grad.item()


SAME.update({"zero_ on a node keeps a node": _zero_on_a_node,
             "fill_ with a tensor": _fill_with_a_tensor})
_V = [[1.0, 4.0, 2.5], [0.5, -3.0, 7.0]]
SAME.update({  # torch's overloads and arguments a ported script passes
    "var(dim, unbiased)": lambda L: L.tensor(_V).var(1, False),
    "var(dim, unbiased, keepdim)": lambda L: L.tensor(_V).var(1, True, True),
    "var(unbiased)": lambda L: L.tensor(_V).var(False),
    "std(dim, unbiased)": lambda L: L.tensor(_V).std(0, False),
    "std correction keepdim": lambda L: L.tensor(_V).std(1, correction=0, keepdim=True),
    "div trunc ints": lambda L: L.tensor([5, -7, 6, -6, 0]).div(-2, rounding_mode="trunc"),
    "div trunc floats": lambda L: L.tensor(_V).div(-2.0, rounding_mode="trunc"),
    "div trunc int by tensor": lambda L: L.tensor([7, -7]).div(L.tensor([2, 2]),
                                                               rounding_mode="trunc"),
    "squeeze a tuple": lambda L: L.zeros(1, 2, 1, 3).squeeze((0, 2)),
    "squeeze a tuple keeps non-1": lambda L: L.zeros(1, 2, 1).squeeze((0, 1)),
    "add int alpha": lambda L: L.tensor([5, -7]).add(2, alpha=3),
    "int add float alpha to float": lambda L: L.tensor([5, -7]).add(1.5, alpha=0.5),
    "bool add bool alpha": lambda L: L.tensor([True, False]).add(L.tensor([True, True]),
                                                                 alpha=True),
    "zeros on cpu": lambda L: L.zeros(2, device="cpu"),
    "arange on cpu": lambda L: L.arange(3, device="cpu"),
    "zeros_like dtype": lambda L: L.zeros_like(L.tensor([1, 2]), dtype=L.float64),
    "ones_like requires_grad": lambda L: L.ones_like(L.tensor([1.0]), requires_grad=True),
    "tensor on cpu": lambda L: L.tensor([1.0], device="cpu"),
})


def _clamp_by_tensors(L):
    x = L.tensor([1.0, 2.0, -3.0], requires_grad=True)
    lo = L.tensor([1.5, 0.0, -1.0], requires_grad=True)
    hi = L.tensor(1.8, requires_grad=True)
    y = x.clamp(lo, hi)
    (y * L.tensor([1.0, 2.0, 3.0])).sum().backward()
    by_max = L.clamp(x, max=hi).tolist()
    return y.tolist(), x.grad.tolist(), lo.grad.tolist(), hi.grad.item(), by_max


def _add_param_group_later(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([3.0, -1.0], requires_grad=True)
    opt = L.optim.Adam([a], lr=0.1)
    for i in range(4):
        if i == 2:  # e.g. a layer unfrozen mid-run: its own lr, the rest from the defaults
            opt.add_param_group({"params": b, "lr": 0.05})
        opt.zero_grad()
        ((a * a).sum() + (b * b * b).sum()).backward()
        opt.step()
    return a.tolist(), b.tolist(), [(g["lr"], g["betas"]) for g in opt.param_groups]


def _tensor_of_losses(L):
    loss = L.tensor(2.0, requires_grad=True) * 3
    t = L.tensor([loss, loss * 2])  # values only, as torch (which warns)
    return t.tolist(), t.requires_grad, t.dtype == L.float32


SAME.update({
    "clamp by tensors": _clamp_by_tensors,
    "add_param_group later": _add_param_group_later,
    "tensor of losses": _tensor_of_losses,
    "int64 * numpy float64": lambda L: L.tensor([1, 2]) * np.float64(2.5),
    "numpy float64 * int64": lambda L: np.float64(2.5) * L.tensor([1, 2]),
    "int64 + numpy int64": lambda L: L.tensor([1, 2]) + np.int64(3),
    # NumPy-style keyword aliases torch accepts, and the small queries device-picking code makes
    "sum axis keepdims": lambda L: L.tensor(_V).sum(axis=1, keepdims=True),
    "torch.mean axis": lambda L: L.mean(L.tensor(_V), axis=0),
    "max axis": lambda L: L.tensor(_V).max(axis=1),
    "softmax axis is dim": lambda L: bool((L.tensor(_V).softmax(axis=0)
                                           == L.tensor(_V).softmax(dim=0)).all()),
    "std axis keepdims": lambda L: L.tensor(_V).std(axis=1, keepdims=True),
    "nelement": lambda L: L.ones(2, 3).nelement(),
    "max of two tensors": lambda L: L.tensor(_V).max(L.tensor(_V).flip([1])),
    "min of two tensors": lambda L: L.tensor(_V).min(L.tensor([[0.0], [1.0]])),
    "module double float cpu": lambda L: (L.nn.Linear(2, 2).double().weight.dtype == L.float64,
                                          L.nn.Linear(2, 2).double().float().bias.dtype
                                          == L.float32, isinstance(L.nn.ReLU().cpu(),
                                                                   L.nn.Module)),
    "is_tensor": lambda L: (L.is_tensor(L.ones(1)), L.is_tensor(np.ones(1)), L.is_tensor(1.0)),
    "is_floating_point": lambda L: (L.is_floating_point(L.ones(1)),
                                    L.is_floating_point(L.tensor([1]))),
    "cuda queries": lambda L: (L.cuda.is_available(), L.cuda.device_count(),
                               L.cuda.manual_seed_all(0)),
    "mps query": lambda L: L.backends.mps.is_available(),
    "matmul precision": lambda L: (L.set_float32_matmul_precision("medium"),
                                   L.get_float32_matmul_precision(),
                                   L.set_float32_matmul_precision("highest")),
})
GRADS = {
    "tril": lambda L, x: L.tril(x, -1),
    "triu": lambda L, x: L.triu(x),
    "topk": lambda L, x: L.topk(x, 2),
    "gather": lambda L, x: x.gather(1, L.tensor([[0, 0, 2], [1, 0, 0]])),
}
REFUSED = {
    "to cuda": lambda L: L.ones(2).to("cuda"),
    "to two dtypes": lambda L: L.ones(2).to(L.float, L.double),
    "to a bad dtype": lambda L: L.ones(2).to("float"),
    "topk k too large": lambda L: L.topk(L.ones(3), 4),
    "multinomial too many": lambda L: L.multinomial(L.ones(2), 3),
    "multinomial negative": lambda L: L.multinomial(L.tensor([1.0, -1.0]), 1),
    "tril of a vector": lambda L: L.tril(L.ones(3)),
    "iterate a 0-d tensor": lambda L: list(L.tensor(3.0)),
    "len of a 0-d tensor": lambda L: len(L.tensor(3.0)),
    "gather negative index": lambda L: L.ones(2, 2).gather(1, L.tensor([[0, -1], [1, 0]])),
    "topk bad dim": lambda L: L.topk(L.ones(3), 1, dim=2),
    "module to int64": lambda L: L.nn.Linear(2, 2).to(L.long),
    "format a vector": lambda L: f"{L.ones(2):.2f}",
    "fill_ with a vector": lambda L: L.zeros(2, 3).fill_(L.tensor([1.0, 2.0, 3.0])),
    "var unbiased and correction": lambda L: L.ones(3).var(0, True, correction=0),
    "int add float alpha": lambda L: L.tensor([5, -7]).add(L.tensor([1, 1]), alpha=0.5),
    "float add bool alpha": lambda L: L.tensor([1.0]).add(1, alpha=True),
    "zeros on cuda": lambda L: L.zeros(2, device="cuda"),
    "squeeze a dim out of range": lambda L: L.zeros(1, 2).squeeze(2),
    "squeeze a dim twice": lambda L: L.zeros(1, 3, 1).squeeze((0, 0)),
    "dim and axis both": lambda L: L.ones(2, 3).sum(dim=1, axis=0),
    "a parameter in two groups": lambda L: _two_groups(L),
}


def _two_groups(L):
    a = L.tensor([1.0], requires_grad=True)
    L.optim.SGD([a], lr=0.1).add_param_group({"params": [a]})


@pytest.mark.parametrize("name", list(SAME))
def test_api_as_torch(name):
    assert repr(_result(SAME[name](mt))) == repr(_result(SAME[name](torch)))  # nan == nan


@pytest.mark.parametrize("name", list(GRADS))
def test_api_gradient_as_torch(name):
    data = [[1.0, 7.0, 3.0], [4.0, 0.5, 6.0]]
    assert _grad_of(mt, GRADS[name], data) == _grad_of(torch, GRADS[name], data)


@pytest.mark.parametrize("name", list(REFUSED))
def test_api_refused_as_torch(name):
    with pytest.raises((RuntimeError, TypeError, IndexError, ValueError,
                        AssertionError)):  # AssertionError: CPU torch asked for cuda
        REFUSED[name](torch)
    with pytest.raises((RuntimeError, TypeError, IndexError, ValueError)) as info:
        REFUSED[name](mt)
    assert "\n" not in str(info.value)


def test_random_factories_dtypes_and_ranges():
    """rand, randint and multinomial draw from minitorch's seeded generator (values differ from
    torch's): their dtypes, shapes and ranges are torch's, and a seed repeats them."""
    mt.manual_seed(3)
    r, i = mt.rand(1000), mt.randint(2, 5, (10, 100))
    assert (r.dtype, i.dtype) == (np.float32, np.int64)
    assert 0.0 <= r.numpy().min() and r.numpy().max() < 1.0 and abs(r.numpy().mean() - 0.5) < 0.05
    assert set(np.unique(i.numpy())) == {2, 3, 4}
    draws = mt.multinomial(mt.tensor([1.0, 3.0]), 4000, replacement=True).numpy()
    assert abs(draws.mean() - 0.75) < 0.03  # P(index 1) = 3/4
    mt.manual_seed(3)
    np.testing.assert_array_equal(mt.rand(1000).numpy(), r.numpy())


def test_from_numpy_shares_memory():
    a = np.zeros(3)
    t = mt.from_numpy(a)
    t += 1
    a[0] = 5
    assert t.tolist() == [5.0, 1.0, 1.0] and t.dtype == np.float64


@pytest.mark.parametrize("owner", ["module", "optimizer"])
def test_zero_grad_set_to_none_false_zeroes_in_place(owner):
    """zero_grad() sets .grad to None (torch's default); set_to_none=False keeps each .grad
    and fills it with zeros, so the next backward accumulates from zero."""
    model = mt.nn.Linear(2, 2)
    model.flatten_parameters()
    opt = mt.optim.SGD(model.parameters(), lr=0.1)
    zero = model.zero_grad if owner == "module" else opt.zero_grad
    x = mt.ones(1, 2)
    model(x).sum().backward()
    kept = model.weight.grad
    zero(set_to_none=False)
    assert model.weight.grad is kept and not kept.numpy().any()
    model(x).sum().backward()
    np.testing.assert_array_equal(model.weight.grad.numpy(), np.ones((2, 2)))
    zero()
    assert model.weight.grad is None and model.bias.grad is None
