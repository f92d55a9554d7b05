"""torch's defaults for the nn modules: constructor signatures (positional order, defaults),
initializations (the moments and bounds of a large layer against theory, checked on torch's own
draws too), parameter layouts, factory kwargs, Embedding's padding_idx, skip_init."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch

import minitorch as mt
from minitorch import nn as mnn

MODULES = ["Linear", "Embedding", "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "Dropout"]
N = 512  # the large layer: 512 x 512 = 262,144 draws, so 5 standard errors are < 1.5 %


@pytest.mark.parametrize("name", MODULES)
def test_module_signature_is_torchs(name):
    """torch's parameters, in its order, with its kinds and defaults; an extra of minitorch's
    (Dropout's generator) only after them and with a default."""
    ours = list(inspect.signature(getattr(mnn, name)).parameters.values())
    theirs = list(inspect.signature(getattr(torch.nn, name)).parameters.values())
    assert [(p.name, p.kind, p.default) for p in ours[:len(theirs)]] == [
        (p.name, p.kind, p.default) for p in theirs]
    assert all(p.default is not inspect.Parameter.empty for p in ours[len(theirs):])


def _np(x) -> np.ndarray:
    """x's values: a state_dict entry (an array) or a tensor of either library."""
    return x if isinstance(x, np.ndarray) else np.asarray(x.detach().numpy())


def _moments_ok(w: np.ndarray, mean: float, std: float) -> bool:
    """w's mean and variance within 5 standard errors of the distribution's (kurtosis-aware:
    the variance's standard error is std^2 sqrt((kurtosis - 1) / n), kurtosis from w)."""
    w = w.astype(np.float64).ravel()
    n = w.size
    kurt = float(np.mean((w - mean) ** 4)) / std ** 4
    mean_ok = abs(w.mean() - mean) <= 5 * std / math.sqrt(n)
    var_ok = abs(w.var() - std ** 2) <= 5 * std ** 2 * math.sqrt((kurt - 1) / n)
    return bool(mean_ok and var_ok)


def _uniform_ok(w: np.ndarray, bound: float) -> bool:
    """w is U(-bound, bound): inside the bounds, reaching within 1 % of both, its moments."""
    w = w.astype(np.float64)
    inside = np.abs(w).max() <= bound * (1 + 1e-6)
    reaches = w.max() > 0.99 * bound and w.min() < -0.99 * bound
    return bool(inside and reaches and _moments_ok(w, 0.0, bound / math.sqrt(3)))


@pytest.mark.parametrize("lib", ["minitorch", "torch"])
def test_linear_init_is_kaiming_uniform(lib):
    """weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform_(a=sqrt(5))); the
    same check passes on torch's own layer."""
    L = mt if lib == "minitorch" else torch
    lin = L.nn.Linear(N, N)
    bound = 1 / math.sqrt(N)
    assert _uniform_ok(np.asarray(lin.weight.detach().numpy()), bound)
    b = np.asarray(lin.bias.detach().numpy())
    assert np.abs(b).max() <= bound and b.max() > 0.9 * bound and b.min() < -0.9 * bound
    wide = L.nn.Linear(8, N * N // 8)  # the bias's own law over many draws: fan_in 8
    assert _uniform_ok(np.asarray(wide.bias.detach().numpy()), 1 / math.sqrt(8))


@pytest.mark.parametrize("lib", ["minitorch", "torch"])
def test_embedding_init_is_standard_normal(lib):
    L = mt if lib == "minitorch" else torch
    w = np.asarray(L.nn.Embedding(N, N).weight.detach().numpy())
    assert _moments_ok(w, 0.0, 1.0)
    assert 4.0 < np.abs(w).max() < 6.5  # a normal's extremes over 262,144 draws, not clipped


@pytest.mark.parametrize("lib", ["minitorch", "torch"])
def test_kaiming_uniform_gain(lib):
    """kaiming_uniform_ with its defaults (leaky_relu, a=0: gain sqrt(2)): U(+-sqrt(6/fan_in));
    mode='fan_out' uses the first dim."""
    L = mt if lib == "minitorch" else torch
    w = L.zeros(N, 2 * N)
    L.nn.init.kaiming_uniform_(w)
    assert _uniform_ok(np.asarray(w.numpy()), math.sqrt(6 / (2 * N)))
    L.nn.init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    assert _uniform_ok(np.asarray(w.numpy()), math.sqrt(6 / N))


@pytest.mark.parametrize("nonlinearity,param", [("linear", None), ("sigmoid", None),
                                                ("tanh", None), ("relu", None), ("selu", None),
                                                ("leaky_relu", None), ("leaky_relu", 0.2),
                                                ("leaky_relu", math.sqrt(5))])
def test_calculate_gain_is_torchs(nonlinearity, param):
    assert mnn.init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15)


CASES = {  # constructor arguments, given alike to both libraries
    "Linear(3, 4)": ("Linear", (3, 4), {}),
    "Linear(3, 4, bias=False)": ("Linear", (3, 4), {"bias": False}),
    "Embedding(5, 3)": ("Embedding", (5, 3), {}),
    "LayerNorm(4)": ("LayerNorm", (4,), {}),
    "LayerNorm((2, 3))": ("LayerNorm", ((2, 3),), {}),
    "LayerNorm(4, bias=False)": ("LayerNorm", (4,), {"bias": False}),
    "LayerNorm(4, elementwise_affine=False)": ("LayerNorm", (4,), {"elementwise_affine": False}),
    "RMSNorm(4)": ("RMSNorm", (4,), {}),
    "RMSNorm([2, 3], 1e-6, False)": ("RMSNorm", ([2, 3], 1e-6, False), {}),
    "BatchNorm1d(3)": ("BatchNorm1d", (3,), {}),
    "BatchNorm2d(3, affine=False)": ("BatchNorm2d", (3,), {"affine": False}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_module_layout_and_deterministic_init_as_torch(case):
    """The same state_dict names, shapes and dtypes (float32 by default) as torch's; the
    deterministic parts (norms' ones and zeros, buffers) equal to torch's."""
    name, args, kwargs = CASES[case]
    ours = getattr(mnn, name)(*args, **kwargs).state_dict()
    theirs = getattr(torch.nn, name)(*args, **kwargs).state_dict()
    assert list(ours) == list(theirs)
    for key, t in theirs.items():
        o = _np(ours[key])
        assert o.shape == tuple(t.shape) and str(o.dtype) == str(t.dtype).removeprefix("torch.")
        if name not in ("Linear", "Embedding"):
            np.testing.assert_array_equal(o, t.numpy())


@pytest.mark.parametrize("name", ["Linear", "Embedding", "LayerNorm", "RMSNorm", "BatchNorm1d"])
def test_factory_kwargs(name):
    """dtype= picks the parameters' dtype, device='cpu' is accepted; another device, or an
    integer dtype, is refused in one line."""
    make = getattr(mnn, name)
    args = (3, 4) if name in ("Linear", "Embedding") else (3,)
    m = make(*args, device="cpu", dtype=mt.float64)
    assert {p.dtype for p in m.parameters()} == {np.dtype(np.float64)}
    with pytest.raises(RuntimeError, match=f"^{name}: minitorch runs on the CPU only, got "
                                           "device 'cuda'$"):
        make(*args, device="cuda")
    with pytest.raises(TypeError, match=f"^{name}: dtype must be a floating dtype"):
        make(*args, dtype=mt.int64)


def test_init_draws_from_the_default_generator():
    """manual_seed makes a module's init reproducible, as torch.manual_seed does."""
    mt.manual_seed(5)
    a = mnn.Linear(4, 3).state_dict(), mnn.Embedding(6, 2).state_dict()
    mt.manual_seed(5)
    b = mnn.Linear(4, 3).state_dict(), mnn.Embedding(6, 2).state_dict()
    for x, y in zip(a, b, strict=True):
        assert all(np.array_equal(_np(x[k]), _np(y[k])) for k in x)


@pytest.mark.parametrize("padding_idx", [2, -1, 0])
def test_embedding_padding_idx_as_torch(padding_idx):
    """The padding row starts at zero; the forward returns the row as it is (here made
    nonzero), and its gradient is zero while the other rows' are torch's."""
    V, C = 6, 3
    ours, theirs = mnn.Embedding(V, C, padding_idx), torch.nn.Embedding(V, C, padding_idx)
    assert ours.padding_idx == theirs.padding_idx
    row = padding_idx % V
    assert not _np(ours.weight)[row].any() and not theirs.weight.detach()[row].any()
    w = np.random.default_rng(0).standard_normal((V, C)).astype(np.float32)
    ours.weight.data[...] = w
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(w))
    ids = np.array([[row, 1, row], [5, row, 0]])
    cot = np.random.default_rng(1).standard_normal((2, 3, C)).astype(np.float32)
    y_o, y_t = ours(ids), theirs(torch.from_numpy(ids))
    np.testing.assert_array_equal(_np(y_o), _np(y_t))
    (y_o * mt.tensor(cot)).sum().backward()
    (y_t * torch.from_numpy(cot)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), atol=1e-6)
    assert not ours.weight.grad.numpy()[row].any()


def test_embedding_refusals():
    with pytest.raises(ValueError, match="^Embedding: padding_idx must be within num_embeddings"):
        mnn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(AssertionError):
        torch.nn.Embedding(4, 2, padding_idx=4)  # torch refuses it too
    for kwargs in [{"max_norm": 1.0}, {"scale_grad_by_freq": True}, {"sparse": True}]:
        with pytest.raises(NotImplementedError, match=f"^Embedding: {next(iter(kwargs))} not "
                                                      "supported"):
            mnn.Embedding(4, 2, **kwargs)


def test_skip_init_leaves_the_generator_alone():
    """nn.utils.skip_init builds the module without drawing: the default generator's stream is
    where it was, and the shapes are the constructor's."""
    mt.manual_seed(3)
    before = mt.randn(4).numpy()
    mt.manual_seed(3)
    lin = mnn.utils.skip_init(mnn.Linear, 5, 7, dtype=mt.float64)
    assert lin.weight.shape == (7, 5) and lin.weight.dtype == np.float64
    np.testing.assert_array_equal(mt.randn(4).numpy(), before)
    with pytest.raises(TypeError, match="^skip_init: expected a Module class"):
        mnn.utils.skip_init(lambda: None)
