"""Data parallelism over threads (minitorch.parallel) and the engine state it relies on: the
gradients of W shards summed equal one whole-batch backward (and the torch twin's), `.grad` is
only touched once every shard has finished, grad mode is per thread as in torch, and graphs in
several threads that save the same parameters leave every array writable once freed."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import minitorch as mt
from minitorch import blas, parallel
from minitorch.engine import node, runtime
from minitorch.models.gpt import GPT, PRESETS
from minitorch.parallel import DataParallel


def _model(preset="seed", dtype=np.float64, seed=0):
    return GPT(PRESETS[preset].replace(block_size=16), generator=mt.Generator(seed), dtype=dtype)


def _batch(B, T=16, vocab=65, seed=1):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, (B, T)), rng.integers(0, vocab, (B, T))


def _loss_fn(model):
    return lambda x, y: model(x, y)[1]


def _grads(model):
    return {n: p.grad.data.copy() for n, p in model.named_parameters()}


def _whole_batch(model, x, y):
    model.zero_grad()
    loss = _loss_fn(model)(x, y)
    loss.backward()
    return loss.item(), _grads(model)


def _max_scaled_error(a: dict, b: dict) -> float:
    """max over parameters of max|a - b| / max|b|."""
    return max(float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-300)) for k in b)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("workers,B", [(2, 4), (2, 5), (3, 7), (4, 2)])
def test_parallel_gradients_equal_whole_batch_float64(preset, workers, B):
    model = _model(preset)
    x, y = _batch(B)
    loss, expected = _whole_batch(model, x, y)
    model.zero_grad()
    with DataParallel(workers) as dp:
        got_loss = dp.backward(_loss_fn(model), x, y)
    assert got_loss == pytest.approx(loss, rel=1e-13)
    assert _max_scaled_error(_grads(model), expected) < 1e-12


def test_parallel_one_worker_is_eager_bit_for_bit():
    model = _model()
    x, y = _batch(4)
    loss, expected = _whole_batch(model, x, y)
    model.zero_grad()
    assert DataParallel(1).backward(_loss_fn(model), x, y) == loss
    got = _grads(model)
    assert all(np.array_equal(got[k], expected[k]) for k in expected)


def test_parallel_float32_within_rounding():
    model = _model(dtype=np.float32)
    x, y = _batch(6)
    _, expected = _whole_batch(model, x, y)
    model.zero_grad()
    DataParallel(2).backward(_loss_fn(model), x, y)
    assert _max_scaled_error(_grads(model), expected) < 1e-5


def test_parallel_matches_torch_twin_by_name():
    """The summed shard gradients against the independent torch twin, at the model-parity
    test's float64 tolerances."""
    pytest.importorskip("torch")
    import torch

    from verification.test_model_parity import (
        build_pair,
        failures,
        loss_and_grad_pairs,
        parity_rows,
    )

    for preset in sorted(PRESETS):
        ours, twin = build_pair(preset)
        x, y = _batch(5, T=17)
        ours.zero_grad()
        loss = DataParallel(2).backward(_loss_fn(ours), x, y)
        _, t_loss = twin(torch.from_numpy(x), torch.from_numpy(y))
        t_loss.backward()
        pairs = loss_and_grad_pairs(ours, twin, loss, t_loss)
        bad = failures(parity_rows(pairs, np.float64))
        assert not bad, f"{preset}: outside the float64 parity tolerance: {bad}"


def test_parallel_adds_to_existing_grad_like_backward():
    model = _model()
    x, y = _batch(4)
    _, once = _whole_batch(model, x, y)
    DataParallel(2).backward(_loss_fn(model), x, y)  # no zero_grad: accumulates
    assert _max_scaled_error(_grads(model), {k: 2 * v for k, v in once.items()}) < 1e-12


def test_parallel_catches_a_dropped_shard(monkeypatch):
    """Negative control: a reduction that forgets the last shard's gradients fails the check
    the tests above make."""
    model = _model()
    x, y = _batch(4)
    _, expected = _whole_batch(model, x, y)
    reduce = parallel._reduce
    monkeypatch.setattr(parallel, "_reduce", lambda sinks: reduce(sinks[:-1]))
    model.zero_grad()
    DataParallel(2).backward(_loss_fn(model), x, y)
    assert _max_scaled_error(_grads(model), expected) > 1e-3


def test_parallel_error_in_a_shard_leaves_grad_untouched():
    model = _model()
    x, y = _batch(4)
    _, before = _whole_batch(model, x, y)
    calls = []

    def fn(xs, ys):
        calls.append(len(xs))
        loss = model(xs, ys)[1]
        if len(calls) == 2:
            raise ValueError("shard failed")
        return loss

    with pytest.raises(ValueError, match="shard failed"):
        DataParallel(2).backward(fn, x, y)
    got = _grads(model)
    assert all(np.array_equal(got[k], before[k]) for k in before)
    assert not node._locks  # every graph of the failed step was freed and unlocked


@pytest.mark.parametrize("fn,inputs,message", [
    (lambda x: mt.tensor(np.ones(3), requires_grad=True) * 2.0, (np.ones((4, 3)),),
     "one-element loss Tensor, got shape \\(3,\\)"),
    (lambda x: 1.0, (np.ones((4, 3)),), "one-element loss Tensor, got float"),
    (lambda x, y: None, (np.ones((4, 3)), np.ones((3, 3))), "input 1 has 3 rows, input 0 has 4"),
    (lambda: None, (), "no inputs"),
])
def test_parallel_bad_use_is_one_line(fn, inputs, message):
    with pytest.raises((TypeError, ValueError), match=message) as e:
        DataParallel(2).backward(fn, *inputs)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_parallel_rejects_bad_worker_count(workers):
    with pytest.raises(ValueError, match="workers must be an int >= 1"):
        DataParallel(workers)


def test_parallel_pins_blas_to_one_thread_and_restores_it():
    if blas.threads() is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS here: there is no thread count to pin")
    model, seen = _model(), []
    before = blas.threads()
    blas.set_threads(2)
    try:
        def fn(x, y):
            seen.append(blas.threads())
            return model(x, y)[1]

        DataParallel(2).backward(fn, *_batch(4))
        assert seen == [1, 1] and blas.threads() == 2
    finally:
        blas.set_threads(before)


def test_grad_mode_is_per_thread_like_torch():
    """no_grad in one thread does not switch off graph building in another; a new thread starts
    with grad mode on."""
    entered, done, seen = threading.Event(), threading.Event(), {}

    def other():
        entered.wait()
        seen["other"] = (mt.is_grad_enabled(),
                         (mt.tensor([1.0], requires_grad=True) * 2.0).requires_grad)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with mt.no_grad():
        entered.set()
        done.wait()
        seen["main"] = mt.is_grad_enabled()
    t.join()
    assert seen == {"other": (True, True), "main": False}


def test_parallel_keeps_caller_grad_mode_in_workers():
    model, x, y = _model(), *_batch(4)
    with mt.no_grad(), pytest.raises(RuntimeError, match="does not require grad"):
        DataParallel(2).backward(_loss_fn(model), x, y)


def test_saved_array_locks_survive_many_threads():
    """Graphs in 8 threads save the same parameters at once, 20 times each: afterwards no array
    is left locked or read-only, and a write during a live graph still raises."""
    model = _model()
    x, y = _batch(2)
    errors = []

    def work():
        try:
            for _ in range(20):
                with runtime.grads_into(_Discard()):
                    model(x, y)[1].backward()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not node._locks
    assert all(p.data.flags.writeable for p in model.parameters())
    _, loss = model(x, y)
    with pytest.raises(ValueError, match="read-only"):
        dict(model.named_parameters())["h.0.attn.c_attn.weight"].data[...] = 0.0
    loss.backward()


class _Discard:
    def accumulate(self, leaf, grad):
        pass


def test_trainer_with_workers_follows_one_worker(tmp_path):
    """Two workers train the same run as one, to float64 rounding."""
    from minitorch.train import TrainConfig, Trainer

    runs = {}
    for w in (1, 2):
        cfg = TrainConfig(iters=4, eval_interval=100, eval_iters=1, sample_tokens=0, plot=False,
                          dtype="float64", batch_size=6, workers=w, lr=1e-2,
                          out_dir=str(tmp_path / f"w{w}"), model={"block_size": 16})
        trainer = Trainer(cfg)
        runs[w] = [trainer.train_step()["loss"] for _ in range(4)]
        runs[w, "params"] = {n: p.data.copy() for n, p in trainer.model.named_parameters()}
    assert runs[2] == pytest.approx(runs[1], rel=1e-12)
    assert _max_scaled_error(runs[2, "params"], runs[1, "params"]) < 1e-10


def test_parallel_inside_a_worker_hands_gradients_to_that_workers_sink():
    """DataParallel run where backward's gradients go to a sink (inside another DataParallel's
    worker): the summed shards go to that sink too, not straight into .grad from a worker
    thread (a race with the other workers, and a failed outer step would have changed .grad)."""
    w = mt.tensor(np.ones(3), requires_grad=True)
    x = np.arange(12.0).reshape(4, 3)
    fn = lambda a: (mt.tensor(a) * w).sum()  # noqa: E731
    with DataParallel(2) as dp:
        dp.backward(fn, x)
        expected, w.grad = w.grad.data.copy(), None
        sink = parallel._Sink()
        with runtime.grads_into(sink):
            dp.backward(fn, x)
    assert w.grad is None
    assert np.array_equal(sink.grads[id(w)], expected)
