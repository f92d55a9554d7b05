"""torch.amp / torch.cuda.amp as a CPU-only torch has them: GradScaler('cpu') scales, unscales,
skips a step on inf and backs off or grows its scale exactly as torch's; the CUDA spellings
disable themselves with torch's warnings and pass through; autocast is accepted and computes in
the tensors' own dtype (a deliberate difference: torch's CPU autocast uses bfloat16)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import minitorch as mt

W = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
X = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)


def _train(L, steps, scaler_kwargs, poison=(2,)):
    """A linear model stepped by SGD through GradScaler('cpu'); at the steps in `poison` the
    loss is multiplied by inf (the scaler must skip them). Returns weights, scales, states."""
    w = L.tensor(W.copy(), requires_grad=True)
    opt = L.optim.SGD([w], lr=0.1)
    scaler = L.amp.GradScaler("cpu", **scaler_kwargs)
    weights, scales = [], []
    for step in range(steps):
        loss = (L.tensor(X) @ w.T).square().mean()
        if step in poison:
            loss = loss * float("inf")
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        weights.append(w.detach().numpy().copy())
        scales.append(scaler.get_scale())
    return weights, scales, scaler.state_dict()


@pytest.mark.parametrize("kwargs", [{}, {"growth_interval": 2}, {"init_scale": 8.0,
                                     "growth_factor": 4.0, "backoff_factor": 0.25,
                                     "growth_interval": 1}])
def test_cpu_grad_scaler_steps_as_torch(kwargs):
    ours = _train(mt, 7, kwargs)
    theirs = _train(torch, 7, kwargs)
    for step, (a, b) in enumerate(zip(ours[0], theirs[0])):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=f"step {step}")
    assert ours[1] == theirs[1]  # the scale after every update
    assert ours[2] == {k: v for k, v in theirs[2].items()}


def test_skipped_step_leaves_the_weights():
    weights, scales, _ = _train(mt, 4, {"growth_interval": 100}, poison=(1,))
    np.testing.assert_array_equal(weights[0], weights[1])
    assert scales == [65536.0, 32768.0, 32768.0, 32768.0]


def test_unscale_then_clip_then_step_as_torch():
    """The documented clipping recipe: unscale_, clip_grad_norm_, step, update."""
    results = []
    for L in (mt, torch):
        w = L.tensor(W.copy(), requires_grad=True)
        opt, scaler = L.optim.SGD([w], lr=0.1), L.amp.GradScaler("cpu")
        for _ in range(3):
            opt.zero_grad()
            scaler.scale((L.tensor(X) @ w.T).square().mean()).backward()
            scaler.unscale_(opt)
            L.nn.utils.clip_grad_norm_([w], 0.5)
            scaler.step(opt)
            scaler.update()
        results.append(w.detach().numpy())
    np.testing.assert_allclose(*results, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("misuse", ["unscale twice", "unscale after step", "step twice"])
def test_misuse_is_refused_as_torch(misuse):
    messages = []
    for L in (mt, torch):
        w = L.tensor(W.copy(), requires_grad=True)
        opt, scaler = L.optim.SGD([w], lr=0.1), L.amp.GradScaler("cpu")
        scaler.scale((L.tensor(X) @ w.T).sum()).backward()
        first, second = {"unscale twice": ("unscale_", "unscale_"),
                         "unscale after step": ("step", "unscale_"),
                         "step twice": ("step", "step")}[misuse]
        getattr(scaler, first)(opt)
        with pytest.raises(RuntimeError) as e:
            getattr(scaler, second)(opt)
        messages.append(str(e.value))
    assert messages[0] == messages[1]


def _warnings(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category, str(w.message)) for w in seen]


@pytest.mark.parametrize("make", [
    lambda L: L.cuda.amp.GradScaler(enabled=True), lambda L: L.cuda.amp.GradScaler(enabled=False),
    lambda L: L.amp.GradScaler(), lambda L: L.amp.GradScaler("cuda", enabled=False),
])
def test_cuda_scalers_disable_themselves_with_torchs_warnings(make):
    ours, our_warnings = _warnings(lambda: make(mt))
    theirs, their_warnings = _warnings(lambda: make(torch))
    assert our_warnings == their_warnings
    assert ours.is_enabled() is theirs.is_enabled() is False
    assert ours.state_dict() == theirs.state_dict() == {} and ours.get_scale() == 1.0


def test_a_disabled_scaler_passes_everything_through():
    w = mt.tensor(W.copy(), requires_grad=True)
    opt = mt.optim.SGD([w], lr=0.1)
    scaler = mt.amp.GradScaler(enabled=False)
    loss = (mt.tensor(X) @ w.T).square().mean()
    assert scaler.scale(loss) is loss
    loss.backward()
    grad = w.grad.numpy().copy()
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), grad)  # not divided by anything
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), W - 0.1 * grad, rtol=1e-6)


def test_cpu_autocast_computes_in_the_tensors_dtype():
    """Deliberate difference: torch's CPU autocast runs this matmul in bfloat16; minitorch has
    no bfloat16 and computes in float32, the value it would give without autocast."""
    a = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    with mt.autocast(device_type="cpu", dtype=mt.bfloat16):
        inside = mt.tensor(a) @ mt.tensor(a)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        theirs = torch.tensor(a) @ torch.tensor(a)
    assert inside.dtype == np.float32 and theirs.dtype == torch.bfloat16
    np.testing.assert_array_equal(inside.numpy(), (mt.tensor(a) @ mt.tensor(a)).numpy())


@pytest.mark.parametrize("make", [lambda L: L.autocast(device_type="cuda"),
                                  lambda L: L.amp.autocast("cuda", dtype=L.float16),
                                  lambda L: L.cuda.amp.autocast()])
def test_cuda_autocast_disables_itself_with_torchs_warning(make):
    _, ours = _warnings(lambda: make(mt))
    _, theirs = _warnings(lambda: make(torch))
    assert ours == theirs


def test_autocast_as_a_decorator():
    @mt.autocast("cpu")
    def f(x):
        return x * 2

    assert f(mt.ones(2)).tolist() == [2.0, 2.0]


def test_an_unknown_device_is_one_line():
    with pytest.raises(RuntimeError, match="unknown device_type 'tpu'"):
        mt.amp.GradScaler("tpu")
