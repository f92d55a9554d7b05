"""The hand-written NumPy benchmark peer (benchmarks/numpy_peer.py) computes the same step as
PyTorch autograd: every parameter gradient within 1e-8 in float64, Adam updates within 1e-12,
and the same loss as minitorch. A peer with a wrong gradient would make the benchmark ratios
compare different work; the negative controls show these checks see a broken backward rule.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import minitorch as mt
from benchmarks import numpy_peer
from minitorch.models.gpt import GPT, PRESETS

torch = pytest.importorskip("torch")

from benchmarks.peers import torch_reference  # noqa: E402  (loads the twin by path)

TorchGPT, load_named_arrays = torch_reference().TorchGPT, torch_reference().load_named_arrays

pytestmark = pytest.mark.torch
torch.set_num_threads(1)  # tiny tensors: more threads only contend for the shared cores

GRAD_ATOL = 1e-8  # float64, every parameter gradient
ADAM_ATOL = 1e-12
PEER_PRESETS = [p for p, c in sorted(PRESETS.items()) if c.norm == "layernorm"
                and c.pos == "learned"]
B, T = 4, 64  # full block: every wpe row gets a gradient


def weights(preset: str, seed: int = 0) -> dict[str, np.ndarray]:
    """float64 weights by name with non-trivial gains and biases, so a dropped factor shows."""
    model = GPT(PRESETS[preset], generator=mt.Generator(seed), dtype=np.float64)
    rng = np.random.default_rng(seed + 1)
    out = {}
    for name, p in model.named_parameters():
        if p.ndim == 2:
            out[name] = rng.standard_normal(p.shape) / np.sqrt(p.shape[1])
        elif name.endswith(".weight"):
            out[name] = 1.0 + 0.3 * rng.standard_normal(p.shape)
        else:
            out[name] = 0.1 * rng.standard_normal(p.shape)
    return out


def data(vocab: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, (B, T)), rng.integers(0, vocab, (B, T))


def torch_twin(preset: str, arrays):
    model = TorchGPT(dataclasses.asdict(PRESETS[preset])).double()
    load_named_arrays(model, arrays)
    return model


def torch_grads(preset: str, arrays, idx, targets):
    model = torch_twin(preset, arrays)
    _, loss = model(torch.from_numpy(idx), torch.from_numpy(targets))
    loss.backward()
    return loss.item(), {n: p.grad.numpy() for n, p in model.named_parameters()}


def grad_errors(preset: str) -> dict[str, float]:
    """max |peer grad - torch grad| for every parameter, float64."""
    arrays = weights(preset)
    idx, targets = data(PRESETS[preset].vocab_size)
    peer = numpy_peer.NumpyGPT(PRESETS[preset], arrays, np.float64)
    peer.loss_and_grads(idx, targets)
    _, expected = torch_grads(preset, arrays, idx, targets)
    assert set(expected) == set(peer.grads), "parameter names differ between peer and torch"
    return {n: float(np.max(np.abs(peer.grads[n] - g))) for n, g in expected.items()}


@pytest.mark.parametrize("preset", PEER_PRESETS)
def test_numpy_peer_grads_match_torch(preset, record):
    errors = grad_errors(preset)
    for name, err in errors.items():
        record("numpy_peer_grad_f64", name, preset, err, tol=GRAD_ATOL, passed=err <= GRAD_ATOL)
    bad = {n: e for n, e in errors.items() if e > GRAD_ATOL}
    assert not bad, f"{preset}: gradients off by more than {GRAD_ATOL}: {bad}"


def _ln_backward_without_projection(dy, cache, w, gw, gb):
    """A plausible bug: layer-norm backward that forgets the xhat*mean(dxhat*xhat) term."""
    xhat, rstd = cache
    np.einsum("nc,nc->c", dy, xhat, out=gw)
    if gb is not None:
        np.sum(dy, axis=0, out=gb)
    dxhat = dy * w
    return (dxhat - dxhat.mean(axis=-1, keepdims=True)) * rstd


def _attention_backward_unscaled(dy, cache, B, T, nh):
    """A plausible bug: attention backward that drops the 1/sqrt(hs) factor on q and k."""
    q = cache[0]
    dqkv = ORIGINAL_ATTENTION_BACKWARD(dy, cache, B, T, nh).reshape(B, T, 3, -1)
    dqkv[:, :, :2] *= np.sqrt(q.shape[-1])
    return dqkv.reshape(B * T, -1)


ORIGINAL_ATTENTION_BACKWARD = numpy_peer.attention_backward


@pytest.mark.parametrize("helper, broken, hit", [
    ("layer_norm_backward", _ln_backward_without_projection, "ln_1.weight"),
    ("attention_backward", _attention_backward_unscaled, "attn.c_attn.weight"),
])
def test_numpy_peer_gradcheck_catches_broken_rule(monkeypatch, helper, broken, hit):
    monkeypatch.setattr(numpy_peer, helper, broken)
    errors = grad_errors("seed")
    caught = {n: e for n, e in errors.items() if e > GRAD_ATOL}
    assert any(hit in n for n in caught), f"broken {helper} went unnoticed: {errors}"


def adam_error(preset: str) -> tuple[float, str]:
    """(max |peer param - torch param|, its name) after 3 Adam steps fed the same gradients.

    Fed their own gradients they differ by ~1e-11 on the attention key bias, whose true gradient
    is 0: Adam turns ~1e-17 round-off into lr*g/eps ~ 1e-11, so the gradients are shared here.
    """
    arrays = weights(preset)
    idx, targets = data(PRESETS[preset].vocab_size)
    peer = numpy_peer.NumpyGPT(PRESETS[preset], arrays, np.float64, lr=1e-2)
    model = torch_twin(preset, arrays)
    params = dict(model.named_parameters())
    opt = torch.optim.Adam(params.values(), lr=1e-2)
    for _ in range(3):
        peer.loss_and_grads(idx, targets)
        for name, p in params.items():
            p.grad = torch.from_numpy(peer.grads[name].copy())
        peer.adam_step()
        opt.step()
    moved = max(float(np.max(np.abs(peer.params[n] - arrays[n]))) for n in arrays)
    assert moved > 1e-3, "Adam did not move the parameters: the comparison would be empty"
    return max((float(np.max(np.abs(peer.params[n] - p.detach().numpy()))), n)
               for n, p in params.items())


@pytest.mark.slow
@pytest.mark.parametrize("preset", PEER_PRESETS)
def test_numpy_peer_adam_matches_torch(preset, record):
    err, name = adam_error(preset)
    record("numpy_peer_adam_f64", name, preset, err, tol=ADAM_ATOL, passed=err <= ADAM_ATOL)
    assert err <= ADAM_ATOL, f"{preset}: after 3 Adam steps '{name}' is off by {err}"


def test_numpy_peer_adam_check_catches_stale_bias_correction(monkeypatch):
    """Negative control: an Adam whose bias corrections are stuck at those of step 1."""
    original = numpy_peer.NumpyGPT.adam_step

    def broken(self):
        t, self.t = self.t, 0  # the update then always uses the corrections of step 1
        original(self)
        self.t = t + 1

    monkeypatch.setattr(numpy_peer.NumpyGPT, "adam_step", broken)
    err, _ = adam_error("seed")
    assert err > ADAM_ATOL


@pytest.mark.parametrize("preset", PEER_PRESETS)
def test_numpy_peer_loss_matches_minitorch(preset, record):
    """The peer times the same model as minitorch: same loss from the same weights and batch."""
    arrays = weights(preset)
    idx, targets = data(PRESETS[preset].vocab_size)
    ours = GPT(PRESETS[preset], dtype=np.float64)
    ours.load_state_dict(arrays)
    _, loss = ours(idx, targets)
    peer_loss = numpy_peer.NumpyGPT(PRESETS[preset], arrays, np.float64).loss_and_grads(
        idx, targets)
    err = abs(peer_loss - loss.item())
    record("numpy_peer_loss_f64", "loss", preset, err, tol=1e-10, passed=err <= 1e-10)
    assert err <= 1e-10, f"{preset}: peer loss {peer_loss} vs minitorch {loss.item()}"


def test_numpy_peer_rejects_unsupported_config():
    cfg = PRESETS["llama-mini"]
    with pytest.raises(ValueError, match="norm.*rmsnorm|pos.*rope"):
        numpy_peer.NumpyGPT(cfg, weights("llama-mini"), np.float64)


@pytest.mark.parametrize("preset", PEER_PRESETS)
def test_numpy_peer_parallel_grads_match_one_thread(preset):
    """The peer's row split over 2 threads (as minitorch's DataParallel) gives the one-thread
    loss and gradients to float64 rounding; dropping the second shard's gradients (negative
    control) is seen by the same check."""
    arrays = weights(preset)
    idx, targets = data(PRESETS[preset].vocab_size)
    one = numpy_peer.NumpyGPT(PRESETS[preset], arrays, np.float64)
    loss = one.loss_and_grads(idx, targets)

    def error(peer) -> float:
        return float(np.max(np.abs(peer.grad - one.grad)) / np.max(np.abs(one.grad)))

    two = numpy_peer.NumpyGPT(PRESETS[preset], arrays, np.float64)
    two.parallel(2)
    assert two.parallel_loss_and_grads(idx, targets) == pytest.approx(loss, rel=1e-13)
    assert error(two) < 1e-12
    broken = numpy_peer.NumpyGPT(PRESETS[preset], arrays, np.float64)
    broken.parallel(2)
    broken.shards = []  # the second shard's gradients are computed but never added
    broken.parallel_loss_and_grads(idx, targets)
    assert error(broken) > 1e-3
