"""Replay's memory plan (minitorch/engine/pool.py): after the first replay, a step's large arrays
come from one planned mapping, results stay bit-identical to eager, memory anything still holds
is never handed out again (negative control: the same run without the reference-count checks
overwrites it), lending between runs never overlaps, and the in-place gradient rule still works
on planned arrays."""

from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import graph, pool, registry
from minitorch.nn.gpt import GPT, PRESETS
from minitorch.optim import Adam
from minitorch.replay import Replay

B, T = 4, 64  # large enough that every kernel of the step takes its arrays from the plan


def _setup(dtype=np.float64, preset="seed"):
    model = GPT(PRESETS[preset], generator=mt.Generator(0), dtype=dtype)
    rng = np.random.default_rng(3)
    batches = [(rng.integers(0, 65, (B, T)), rng.integers(0, 65, (B, T))) for _ in range(3)]
    return model, Adam(model.parameters(), lr=1e-3), batches


def _replay_steps(model, opt, replay, batches, steps):
    losses = []
    for s in range(steps):
        opt.zero_grad()
        losses.append(replay.backward(lambda x, y: model(x, y)[1], *batches[s % len(batches)],
                                      step=opt.step))
    return losses


def _eager_steps(model, opt, batches, steps):
    losses = []
    for s in range(steps):
        opt.zero_grad()
        loss = model(*batches[s % len(batches)])[1]
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _pool(replay: Replay) -> pool.Pool:
    (tape,) = replay.tapes.values()
    return tape.pool


def _same(model_a, model_b) -> bool:
    pb = dict(model_b.named_parameters())
    return all(np.array_equal(p.data, pb[n].data) and np.array_equal(p.grad.data, pb[n].grad.data)
               for n, p in model_a.named_parameters())


@pytest.mark.parametrize("preset", ["seed", "llama-mini"])
def test_planned_replay_is_bit_identical_to_eager(preset):
    """20 steps with the optimizer inside replay's step: every loss, weight and gradient the same
    bits as eager, and every request served from the plan (no misses)."""
    (me, oe, batches), (mr, orr, _) = _setup(preset=preset), _setup(preset=preset)
    replay = Replay()
    assert _eager_steps(me, oe, batches, 20) == _replay_steps(mr, orr, replay, batches, 20)
    assert _same(me, mr)
    p = _pool(replay)
    assert p.nbytes > 0 and p.misses == 0


def test_planned_step_allocates_nothing_large():
    """Once planned, a replayed step (optimizer included) allocates its gradient buffer (made
    anew after zero_grad, as torch's set_to_none) and a few small arrays only; the control,
    the same step with the plan never made, allocates its activations afresh."""
    def traced_rise(make_plan: bool) -> tuple[int, int]:
        model, opt, batches = _setup()
        replay = Replay()
        if not make_plan:
            replay_plan = pool.Pool._plan
            pool.Pool._plan = lambda self: None  # records, never plans: every run records
        try:
            _replay_steps(model, opt, replay, batches, 3)
            tracemalloc.start()
            try:
                start = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                _replay_steps(model, opt, replay, batches, 1)
                rise = tracemalloc.get_traced_memory()[1] - start
            finally:
                tracemalloc.stop()
        finally:
            if not make_plan:
                pool.Pool._plan = replay_plan
        return rise, _pool(replay).nbytes

    rise, arena = traced_rise(True)
    control, _ = traced_rise(False)
    grads = sum(p.data.nbytes for p in _setup()[0].parameters())
    assert arena > 0 and rise < grads + 0.05 * arena, (rise, grads, arena)
    assert control > 0.5 * arena, (control, arena)  # recorded arrays are traced too


def _stash_relu(monkeypatch) -> list:
    """Make relu's forward keep a reference to each output it makes (as a caller could)."""
    stash: list = []
    relu = registry.REGISTRY["relu"]
    forward = relu.forward

    def keeping(ctx, x):
        y = forward(ctx, x)
        stash.append((y, y.copy()))
        return y

    monkeypatch.setattr(relu, "forward", staticmethod(keeping))
    return stash


def test_plan_never_hands_out_memory_still_held(monkeypatch):
    """An op output kept past its step (here by a wrapped relu) keeps its slot: later replays
    serve that request (and any sharing its bytes) outside the plan, the kept values never
    change, and the results stay bit-identical to eager."""
    (me, oe, batches), (mr, orr, _) = _setup(), _setup()
    stash = _stash_relu(monkeypatch)
    replay = Replay()
    assert _eager_steps(me, oe, batches, 6) == _replay_steps(mr, orr, replay, batches, 6)
    assert _same(me, mr)
    assert _pool(replay).misses > 0
    assert all(np.array_equal(y, copy) for y, copy in stash)


def test_plan_negative_control_without_the_reference_counts(monkeypatch):
    """The same run with the check that a slot is unused switched off: the kept outputs are
    overwritten and the weights differ from eager's, which the test above would see (as does
    replay's own eager check, off here)."""
    (me, oe, batches), (mr, orr, _) = _setup(), _setup()
    stash = _stash_relu(monkeypatch)
    monkeypatch.setattr(pool, "_unused", lambda arrays, i: True)
    _eager_steps(me, oe, batches, 6)
    _replay_steps(mr, orr, Replay(verify_every=0), batches, 6)
    assert not all(np.array_equal(y, copy) for y, copy in stash)
    assert not _same(me, mr)


def test_plan_keeps_gradients_in_place_on_planned_arrays(monkeypatch):
    """graph.exclusive counts a slot's pool reference as no user: a planned step makes fewer
    requests than the same step where planned arrays are never written in place."""
    def requests() -> int:
        model, opt, batches = _setup()
        replay = Replay()
        _replay_steps(model, opt, replay, batches, 3)
        return len(_pool(replay).sizes)

    in_place = requests()
    monkeypatch.setattr(pool, "kept", lambda a: 0)
    assert in_place < requests()


def test_lending_never_overlaps_and_blocks_the_plan():
    """Between runs, lent arrays come from free slots, two held ones never share bytes, and a
    replay while one is held serves that memory's requests elsewhere, leaving it intact."""
    model, opt, batches = _setup()
    replay = Replay()
    _replay_steps(model, opt, replay, batches, 3)
    p = _pool(replay)
    arena = np.frombuffer(p.arena, np.uint8)
    with p.lending():
        a = pool.empty((B, T, 64), np.float64)  # an activation
        b = pool.empty((B, T, 256), np.float64)  # the MLP's
        c = pool.empty((2 * p.nbytes,), np.uint8)  # no slot holds it: a new array
    assert np.shares_memory(a, arena) and np.shares_memory(b, arena)
    assert not np.shares_memory(a, b) and not np.shares_memory(c, arena)
    a[...], b[...] = 1.0, 2.0
    before = p.misses
    _replay_steps(model, opt, replay, batches, 2)
    assert p.misses > before
    assert (a == 1.0).all() and (b == 2.0).all()


def test_failed_run_records_again():
    """A run that raises before the plan exists plans nothing; the next one records and plans."""
    p = pool.Pool()
    with pytest.raises(ValueError), p.active():
        pool.empty((1000,), np.float64)
        raise ValueError("boom")
    assert p.sizes == [] and p.arena is None
    with p.active():
        x = pool.empty((1000,), np.float64)
        del x
    assert p.sizes == [8000] and p.nbytes >= 8000


def test_plan_is_off_where_reference_counts_are_unverified(monkeypatch):
    """Where graph.exclusive is off (_TRUSTED), replay makes no plan (its safety rests on the
    same counts) and stays bit-identical."""
    monkeypatch.setattr(graph, "_TRUSTED", False)
    (me, oe, batches), (mr, orr, _) = _setup(), _setup()
    replay = Replay()
    assert _eager_steps(me, oe, batches, 4) == _replay_steps(mr, orr, replay, batches, 4)
    assert _same(me, mr) and _pool(replay) is None


def test_arena_is_visible_to_tracemalloc():
    """The plan's mapping is reported to tracemalloc as NumPy reports array memory."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        p = pool.Pool()
        with p.active():
            x = pool.empty((1 << 18,), np.float64)
            del x
        assert tracemalloc.get_traced_memory()[0] - before >= p.nbytes >= 1 << 21
        del p
        assert tracemalloc.get_traced_memory()[0] - before < 1 << 20
    finally:
        tracemalloc.stop()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_arena_is_private_to_a_forked_process():
    """A forked child writing into planned memory leaves the parent's arrays as they were."""
    p = pool.Pool()
    with p.active():
        x = pool.empty((4096,), np.float64)
        del x
    with p.lending():
        a = pool.empty((4096,), np.float64)
    a[...] = 1.0
    pid = os.fork()
    if pid == 0:  # the child: write, and leave without running the parent's cleanup
        a[...] = 2.0
        os._exit(0)
    os.waitpid(pid, 0)
    assert (a == 1.0).all()
