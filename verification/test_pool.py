"""Replay's memory plan (minitorch/engine/pool.py): after the first replay, a step's large arrays
come from one planned mapping, results stay bit-identical to eager, memory anything still holds
is never handed out again (negative control: the same run without the reference-count checks
overwrites it), lending between runs never overlaps, the in-place gradient rule still works
on planned arrays, and a block nested in a run or in another thread leaves the run alone."""

from __future__ import annotations

import os
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import graph, pool, registry, runtime
from minitorch.models.gpt import GPT, PRESETS
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


# ---- the plan's rules, one small run at a time (requests of uint8 bytes; a name freed before the
# next request died before it) -------------------------------------------------------------------
def _run(p: pool.Pool, script: list, plan: bool = True) -> None:
    """One run of p: ("new", name, nbytes) requests an array, ("del", name) frees it."""
    held = {}
    with p.active(plan=plan):
        for op, name, *size in script:
            if op == "new":
                held[name] = pool.empty((size[0],), np.uint8)
            else:
                del held[name]


def _peak(script: list) -> int:
    """The most bytes alive at once (each rounded up to its slot's alignment)."""
    alive, peak = {}, 0
    for op, name, *size in script:
        if op == "new":
            alive[name] = -(-size[0] // pool.ALIGN) * pool.ALIGN
            peak = max(peak, sum(alive.values()))
        else:
            del alive[name]
    return peak


_CHAIN = [("new", "a", 1024), ("del", "a"), ("new", "b", 1024), ("del", "b")]
_LAYOUTS = {
    # freed before the next request: the two share their bytes
    "chain": _CHAIN,
    # a dead small array under a younger, larger, longer-lived one placed before it
    "under_younger": [("new", "a", 16384), ("del", "a"), ("new", "b", 65536), ("new", "x", 1024),
                      ("del", "x"), ("del", "b")],
    # r fits exactly into the gap p left below q
    "exact_gap": [("new", "p", 16384), ("new", "q", 16384), ("del", "p"), ("new", "r", 16384),
                  ("del", "q"), ("del", "r")],
    # only the largest-times-longest order of the three reaches the peak (the others: 17408)
    "size_times_life": [("new", "a", 2048), ("new", "b", 1024), ("new", "c", 8192),
                        ("new", "d", 2048), ("del", "c"), ("new", "e", 4096), ("del", "a"),
                        ("del", "b"), ("new", "f", 8192), ("del", "d"), ("del", "e"),
                        ("del", "f")],
}


@pytest.mark.parametrize("name", sorted(_LAYOUTS))
def test_plan_arena_is_the_peak_of_live_bytes(name):
    """Arrays whose lifetimes do not overlap share bytes, a gap that fits exactly is used, and
    the smallest of the three layouts is kept: the arena is exactly the most bytes ever alive
    at once (a lifetime counted one request too long, a gap skipped, an order lost costs more:
    17408 instead of 14336 for size_times_life)."""
    p = pool.Pool()
    _run(p, _LAYOUTS[name])
    assert p.nbytes == _peak(_LAYOUTS[name]), (p.nbytes, _peak(_LAYOUTS[name]))


def test_plan_arena_is_the_bytes_its_slots_span():
    """No plan, no bytes; a plan maps the bytes its slots span, not rounded up (one request of
    SMALL + 1 bytes: that many), and a plan with no slot (its one request kept past the run)
    the one byte mmap needs at least."""
    p = pool.Pool()
    assert p.nbytes == 0
    _run(p, [("new", "a", pool.SMALL + 1), ("del", "a")])
    assert p.nbytes == pool.SMALL + 1
    q = pool.Pool()
    with q.active():
        kept = pool.empty((pool.SMALL,), np.uint8)
    assert q.slots == [None] and q.nbytes == 1 and kept.shape == (pool.SMALL,)


def test_empty_takes_an_integer_shape():
    """pool.empty takes an int (or NumPy integer) shape as np.empty does, in the recording run
    and from the plan."""
    p = pool.Pool()
    for _ in range(2):
        with p.active():
            a = pool.empty(2048, np.uint8)
            b = pool.empty(np.int64(256), np.float64)
            assert a.shape == (2048,) and b.shape == (256,) and b.dtype == np.float64
            del a, b
    arena = np.frombuffer(p.arena, np.uint8)
    with p.active():
        a = pool.empty(2048, np.uint8)
    assert p.sizes == [2048, 2048] and p.misses == 0 and np.shares_memory(a, arena)


def test_small_requests_are_not_planned():
    """A request below SMALL bytes is an ordinary array in every mode and takes no request
    number, so the plan's numbering does not depend on them."""
    p = pool.Pool()
    for _ in range(2):
        with p.active():
            tiny = pool.empty((pool.SMALL // 8 - 1,), np.float64)
            big = pool.empty((pool.SMALL,), np.uint8)
            assert tiny.flags.owndata and tiny.base is None
            del big
    assert p.sizes == [pool.SMALL] and p.misses == 0
    with p.lending():
        tiny = pool.empty((3,), np.float64)
    assert tiny.flags.owndata


def test_plan_arena_near_the_peak_on_the_gpt_step():
    """On a GPT step the layout comes within 1 % of the most bytes alive at once (0.07 % for
    seed at B=4, T=64; any of the layout rules broken costs at least 2 %)."""
    model, opt, batches = _setup()
    replay = Replay()
    _replay_steps(model, opt, replay, batches, 3)
    p = _pool(replay)
    sizes, deaths = p.sizes, p.deaths
    peak = max(sum(-(-sizes[k] // pool.ALIGN) * pool.ALIGN for k in range(t + 1)
                   if sizes[k] and t < deaths[k]) for t in range(len(sizes)))
    assert peak <= p.nbytes <= 1.01 * peak, (p.nbytes, peak)


def test_plan_false_drops_the_record():
    """A run with plan=False (replay's eager capture) plans nothing and leaves no record: the
    next run records afresh and its own requests make the plan."""
    p = pool.Pool()
    _run(p, [("new", "big", 1 << 16), ("del", "big")], plan=False)
    assert p.nbytes == 0 and p.sizes == []
    _run(p, _CHAIN)
    assert p.sizes == [1024, 1024] and p.nbytes == 1024


def test_plan_is_made_once():
    """Later runs use the first plan: the same mapping and slots, no new ids counted as the
    pool's own (a plan made anew each run would map new memory and leak the old slots' ids)."""
    p = pool.Pool()
    _run(p, _CHAIN)
    arena, slots, kept = p.arena, p.slots, set(pool._kept)  # (no copy: it would hold the slots)
    for _ in range(2):
        _run(p, _CHAIN)
    assert p.arena is arena and p.slots is slots
    assert pool._kept == kept and p.misses == 0


def test_plan_survives_a_failed_run():
    """A run that raises once the plan exists keeps it (only a partial record is dropped): the
    next run is served from the same plan, without misses."""
    p = pool.Pool()
    _run(p, _CHAIN)
    arena = p.arena
    with pytest.raises(ValueError), p.active():
        pool.empty((1024,), np.uint8)
        raise ValueError("boom")
    assert p.sizes == [1024, 1024] and p.arena is arena
    _run(p, _CHAIN)
    assert p.misses == 0


def test_plan_serves_unplanned_requests_outside_it():
    """An array still held after the recording run and an empty one get no slot, and a request
    beyond the recorded ones none either: later runs serve them as ordinary arrays (no miss),
    the planned request still from the arena."""
    p = pool.Pool()
    with p.active():
        out = pool.empty((256,), np.float64)  # kept by the caller past the run
        z = pool.empty((0,), np.float64)
        x = pool.empty((256,), np.float64)
        assert z.shape == (0,) and z.dtype == np.float64
        del x, z
    assert out.shape == (256,)
    arena = np.frombuffer(p.arena, np.uint8)
    with p.active():
        out2 = pool.empty((256,), np.float64)
        z2 = pool.empty((0,), np.float64)
        x2 = pool.empty((256,), np.float64)
        extra = pool.empty((256,), np.float64)
    assert [a.shape for a in (out2, z2, x2, extra)] == [(256,), (0,), (256,), (256,)]
    assert np.shares_memory(x2, arena)
    assert not np.shares_memory(out2, arena) and not np.shares_memory(extra, arena)
    assert p.misses == 0


def test_plan_never_hands_out_memory_held_since_earlier_in_the_run():
    """An array kept past its recorded death within a run (a was dead before b in the recording
    run, so their slots share bytes): b is served outside the plan, not over a."""
    p = pool.Pool()
    _run(p, _CHAIN)
    arena = np.frombuffer(p.arena, np.uint8)
    with p.active():
        a = pool.empty((1024,), np.uint8)
        a[...] = 1
        b = pool.empty((1024,), np.uint8)
        b[...] = 2
    assert np.shares_memory(a, arena) and not np.shares_memory(a, b)
    assert (a == 1).all() and p.misses == 1


_PAIR = [("new", "a", 2048), ("new", "b", 2048), ("del", "a"), ("del", "b")]  # two slots apart


# (before the nested test: with a blocking lock that one hangs, this one fails within 5 s)
def test_other_thread_allocates_as_usual_while_the_pool_serves():
    """While this thread's run holds the pool, a block on it in another thread does not wait
    for the run's end: it gets ordinary arrays at once and leaves the run's request numbers and
    slots alone."""
    p = pool.Pool()
    _run(p, _PAIR)
    arena = np.frombuffer(p.arena, np.uint8)
    got: list = []

    def other():
        with p.active():
            got.append(pool.empty((2048,), np.uint8))
        with p.lending():
            got.append(pool.empty((2048,), np.uint8))

    with p.active():
        a = pool.empty((2048,), np.uint8)
        t = threading.Thread(target=other, daemon=True)
        t.start()
        t.join(5)
        done = not t.is_alive()
        b = pool.empty((2048,), np.uint8)
    t.join()
    assert done and len(got) == 2
    assert not any(np.shares_memory(g, arena) for g in got)
    assert np.shares_memory(a, arena) and np.shares_memory(b, arena) and p.misses == 0


def test_nested_block_is_part_of_the_enclosing_run():
    """A block on a pool this thread already serves (active or lending inside a run) is served
    by the enclosing run: it neither restarts the request numbers nor lends, and exits
    cleanly; the run's requests keep their slots."""
    p = pool.Pool()
    _run(p, _PAIR)
    arena = np.frombuffer(p.arena, np.uint8)
    with p.active():
        a = pool.empty((2048,), np.uint8)
        with p.active():
            b = pool.empty((2048,), np.uint8)  # the run's request 1, not a new run's request 0
        with p.lending():
            c = pool.empty((2048,), np.uint8)  # request 2: none planned, an ordinary array
        assert p.count == 3
    assert np.shares_memory(a, arena) and np.shares_memory(b, arena)
    assert not np.shares_memory(a, b) and not np.shares_memory(c, arena) and p.misses == 0


def test_plan_counts_each_miss():
    """Two planned arrays kept past their run: the next run serves both requests outside the
    plan (two misses, ordinary arrays); once they are freed, the plan serves them again. A
    request of the recorded size in another dtype is a miss too."""
    p = pool.Pool()
    script = [("new", "a", 2048), ("new", "b", 2048), ("del", "a"), ("del", "b")]
    _run(p, script)
    arena = np.frombuffer(p.arena, np.uint8)
    with p.active():
        a = pool.empty((2048,), np.uint8)
        b = pool.empty((2048,), np.uint8)
    assert np.shares_memory(a, arena) and np.shares_memory(b, arena) and p.misses == 0
    with p.active():
        a2 = pool.empty((2048,), np.uint8)
        b2 = pool.empty((2048,), np.uint8)
    assert p.misses == 2
    assert a2.shape == b2.shape == (2048,) and a2.dtype == b2.dtype == np.uint8
    assert not np.shares_memory(a2, arena) and not np.shares_memory(b2, arena)
    del a, b
    _run(p, script)
    assert p.misses == 2
    with p.active():
        c = pool.empty((256,), np.float64)
    assert p.misses == 3 and not np.shares_memory(c, arena)


def test_plan_lets_go_of_arrays_kept_past_the_run():
    """A recorded array the caller still holds when the plan is made is the caller's alone:
    the pool no longer counts it as its own nor keeps it alive, and graph.exclusive sees it as
    any array (a small one is NumPy's: writable in place; a large one lies on a mapping)."""
    p = pool.Pool()
    with p.active():
        out = pool.empty((256,), np.float64)
        big = pool.empty((pool.OWN_PAGES,), np.uint8)
    owner = out.base
    assert pool.kept(owner) == 0 and pool.kept(big.base) == 0
    del owner
    assert graph.exclusive(out) and not graph.exclusive(big)
    alive = weakref.ref(out.base)
    del out
    assert alive() is None


def test_lending_takes_the_smallest_free_slot():
    """A lent array comes from the smallest free slot that holds it, keeping the larger ones for
    larger requests (here both fit in the plan only that way); an empty one takes no slot, so
    it blocks no request of the next run."""
    p = pool.Pool()
    script = [("new", "big", 65536), ("new", "small", 16384), ("del", "big"), ("del", "small")]
    _run(p, script)
    arena = np.frombuffer(p.arena, np.uint8)
    with p.lending():
        a = pool.empty((1024,), np.float64)  # 8 KiB: the 16 KiB slot
        b = pool.empty((8192,), np.float64)  # 64 KiB: the 64 KiB slot
    assert np.shares_memory(a, arena) and np.shares_memory(b, arena)
    assert not np.shares_memory(a, b)
    del a, b
    with p.lending():
        e = pool.empty((0,), np.float64)
    _run(p, script)
    assert e.shape == (0,) and p.misses == 0


def test_exclusive_counts_the_pools_reference_once():
    """A lent array over a slot is exclusive when it alone reaches the slot; a second view of
    the same slot makes it not (the pool's own reference is one, not more). A view of an array
    over a foreign buffer (not NumPy's memory, not a slot) is never exclusive."""
    p = pool.Pool()
    _run(p, [("new", "a", 2048), ("del", "a")])
    with p.lending():
        g = pool.empty((256,), np.float64)
    view = g[:128]
    assert not graph.exclusive(g)
    del view
    assert graph.exclusive(g)
    foreign = np.frombuffer(bytearray(64)).reshape(8, 1)  # its base's base is a bytearray
    assert not graph.exclusive(foreign)


def test_pool_never_planned_is_deleted_cleanly(monkeypatch):
    """A pool deleted before any plan (or after one) raises nothing in its finalizer and leaves
    no id counted as a pool's own."""
    raised: list = []
    monkeypatch.setattr(sys, "unraisablehook", raised.append)
    kept = set(pool._kept)
    p = pool.Pool()
    del p
    p = pool.Pool()
    _run(p, _CHAIN)
    assert pool._kept > kept
    del p
    assert raised == [] and pool._kept == kept


def test_replay_follows_numpy_views_of_planned_outputs():
    """fn feeding a NumPy view of an op's (planned) output into a later op, and a slice of an
    integer op's output as an index: replay follows both (a planned slot is flat in the
    request's dtype, as the capture's array was), bit-identical to eager, with a plan in use."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64))
    i, j = rng.integers(0, 32, 256), rng.integers(0, 32, 256)

    def fn(w, x, i, j):
        h = mt.Tensor(x) + w  # planned (32 KiB)
        view = mt.Tensor(h.data[:, :48].T)  # a NumPy view of it, no gradient
        rows = (mt.Tensor(i) + mt.Tensor(j)).data[8:]  # int64 add (2 KiB), sliced
        return (w[:48, :] * view).sum() + w[rows].sum()

    def run(replay):
        w = mt.Tensor(np.linspace(-1, 1, 64 * 64).reshape(64, 64), requires_grad=True)
        out = []
        for s in range(3):
            w.grad = None
            if replay is None:
                loss = fn(w, x + s, i, j)
                loss.backward()
                out.append((loss.item(), w.grad.data.copy()))
            else:
                value = replay.backward(lambda *a: fn(w, *a), x + s, i, j)
                out.append((value, w.grad.data.copy()))
        return out

    replay = Replay(verify_every=1)
    for (le, ge), (lr, gr) in zip(run(None), run(replay)):
        assert le == lr and np.array_equal(ge, gr)
    assert _pool(replay).nbytes > 0 and _pool(replay).misses == 0


def test_one_replay_shared_by_two_threads(monkeypatch):
    """Two threads replaying through one Replay: one pool serves one thread at a time (the other
    allocates as usual), so every loss and gradient is eager's; and a thread whose run fails
    while the other records leaves that record intact."""
    model, _, batches = _setup()
    x, y = batches[0]
    loss = model(x, y)[1]
    loss.backward()
    want = (loss.item(), {n: p.grad.data.copy() for n, p in model.named_parameters()})

    class Sink:
        def __init__(self):
            self.grads = {}

        def accumulate(self, leaf, grad):
            self.grads[id(leaf)] = self.grads.get(id(leaf), 0) + grad

    replay, bad, errors = Replay(verify_every=0), [], []
    names = {id(p): n for n, p in model.named_parameters()}

    def work(steps):
        for _ in range(steps):
            sink = Sink()
            with runtime.grads_into(sink):
                value = replay.backward(lambda a, b: model(a, b)[1], x, y)
            if value != want[0] or any(not np.array_equal(g, want[1][names[k]])
                                       for k, g in sink.grads.items()):
                bad.append(value)

    threads = [threading.Thread(target=work, args=(20,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad

    # a run failing in thread A (relu raises) while thread B records on the same pool
    relu = registry.REGISTRY["relu"]
    forward, started, failed = relu.forward, threading.Event(), threading.Event()

    def gated(ctx, a):
        name = threading.current_thread().name
        if name == "A":
            started.wait(10)
            raise RuntimeError("A fails mid-run")
        if name == "B" and not started.is_set():
            started.set()
            failed.wait(10)  # B goes on recording only once A's run has failed
        return forward(ctx, a)

    monkeypatch.setattr(relu, "forward", staticmethod(gated))
    replay = Replay(verify_every=0)
    replay.backward(lambda a, b: model(a, b)[1], x, y)  # capture, in this thread

    def run():
        try:
            with runtime.grads_into(Sink()):
                replay.backward(lambda a, b: model(a, b)[1], x, y)
        except Exception as e:  # noqa: BLE001  (every failure is the test's finding)
            errors.append(f"{type(e).__name__}: {e}")
            failed.set()

    ta, tb = threading.Thread(target=run, name="A"), threading.Thread(target=run, name="B")
    tb.start()
    ta.start()
    ta.join()
    tb.join()
    assert errors == ["RuntimeError: A fails mid-run"]
