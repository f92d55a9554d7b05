"""Captured-step replay (minitorch.replay): bit-identical to eager, step after step, with the
optimizer updating the parameters in between; a changed signature captures again (or raises,
strict); a fn that reads its batch from somewhere replay cannot see is caught by the eager
check; the torch twin agrees by name in replay mode as in eager mode."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch import replay as R
from minitorch.engine import node
from minitorch.models.gpt import GPT, PRESETS
from minitorch.optim import SGD, Adam, AdamW
from minitorch.parallel import DataParallel
from minitorch.replay import Replay

OPTIMIZERS = {"adam": lambda p: Adam(p, lr=1e-3),
              "adamw": lambda p: AdamW(p, lr=1e-3, weight_decay=0.1),
              "sgd_momentum": lambda p: SGD(p, lr=0.05, momentum=0.9, nesterov=True)}


def _model(preset="seed", dtype=np.float64, block=16):
    return GPT(PRESETS[preset].replace(block_size=block), generator=mt.Generator(0), dtype=dtype)


def _batches(n=5, B=3, T=16, vocab=65, seed=2):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, vocab, (B, T)), rng.integers(0, vocab, (B, T))) for _ in range(n)]


def _train(model, opt, batches, steps, backward):
    losses = []
    for s in range(steps):
        opt.zero_grad()
        losses.append(backward(lambda x, y: model(x, y)[1], *batches[s % len(batches)]))
        opt.step()
    return losses


def _eager(fn, *inputs):
    loss = fn(*inputs)
    loss.backward()
    return loss.item()


def _same_state(a, b) -> list[str]:
    """Names of parameters (and optimizer state entries) that are not bit-identical."""
    (ma, oa), (mb, ob) = a, b
    pb = dict(mb.named_parameters())
    bad = [n for n, p in ma.named_parameters() if not np.array_equal(p.data, pb[n].data)]
    sa, sb = oa.state_dict()["state"], ob.state_dict()["state"]
    for i, st in sa.items():
        for k, v in st.items():
            if not np.array_equal(np.asarray(v), np.asarray(sb[i][k])):
                bad.append(f"state[{i}].{k}")
    return bad


@pytest.mark.parametrize("preset,optimizer,dtype", [
    *[(p, "adam", np.float64) for p in sorted(PRESETS)],
    ("seed", "adamw", np.float64), ("seed", "sgd_momentum", np.float64),
    ("seed", "adam", np.float32), ("llama-mini", "adam", np.float32)])
def test_replay_is_bit_identical_to_eager_over_20_steps(preset, optimizer, dtype):
    batches = _batches()
    runs = {}
    for mode in ("eager", "replay"):
        model = _model(preset, dtype)
        opt = OPTIMIZERS[optimizer](model.parameters())
        rp = Replay()
        backward = _eager if mode == "eager" else rp.backward
        runs[mode] = (_train(model, opt, batches, 20, backward), (model, opt), rp)
    assert runs["replay"][0] == runs["eager"][0]  # every loss, bit for bit
    assert not _same_state(runs["replay"][1], runs["eager"][1])
    assert runs["replay"][2].captures == 1  # one capture, 19 replays
    assert runs["eager"][0][-1] < runs["eager"][0][0]  # it trained: a vacuous run proves nothing


def test_replay_negative_control_a_reordered_backward_is_caught(monkeypatch):
    """Summing the pending gradients in another order (two backward steps swapped) changes the
    bits, and the comparison above sees it."""
    batches = _batches()
    model_e, model_r = _model(), _model()
    _eager(lambda x, y: model_e(x, y)[1], *batches[0])
    tape_init = R._Tape.__init__

    def swapped(self, *args):
        tape_init(self, *args)
        i = next(k for k in range(len(self.order) - 1)
                 if self.entries[self.order[k]].op.name == "add")
        self.order[i], self.order[i + 1] = self.order[i + 1], self.order[i]

    monkeypatch.setattr(R._Tape, "__init__", swapped)
    rp = Replay(verify_every=0)
    rp.backward(lambda x, y: model_r(x, y)[1], *batches[0])  # capture: eager
    model_r.zero_grad()
    rp.backward(lambda x, y: model_r(x, y)[1], *batches[0])  # replay, reordered
    pe = dict(model_e.named_parameters())
    assert any(p.grad is None or not np.array_equal(p.grad.data, pe[n].grad.data)
               for n, p in model_r.named_parameters())


def test_replay_with_data_parallel_is_bit_identical_to_data_parallel():
    batches = _batches(B=7)
    runs = {}
    for replay in (False, True):
        model = _model("gpt2-mini")
        opt = Adam(model.parameters(), lr=1e-3)
        dp = DataParallel(2, replay=replay)
        runs[replay] = (_train(model, opt, batches, 8, dp.backward), (model, opt), dp)
    assert runs[True][0] == runs[False][0]
    assert not _same_state(runs[True][1], runs[False][1])
    assert [r.captures for r in runs[True][2].replays] == [1, 1]


@pytest.mark.parametrize("ids", ["int32", "uint16", "uint8"])
@pytest.mark.parametrize("workers", [1, 2])
def test_replay_takes_token_ids_of_any_integer_dtype(ids, workers):
    """uint16/int32 token ids (a memory-mapped token file's dtype) train bit for bit as eager
    does: the int64 copy a Tensor makes of them used to be made inside fn, outside ops, so the
    tape replayed the captured batch (the eager check then raised at the first replay)."""
    batches = [(x.astype(ids), y.astype(ids)) for x, y in _batches(B=4)]
    runs = {}
    for replay in (False, True):
        model = _model()
        opt = Adam(model.parameters(), lr=1e-3)
        dp = DataParallel(workers, replay=replay)
        runs[replay] = (_train(model, opt, batches, 6, dp.backward), (model, opt))
    assert runs[True][0] == runs[False][0]
    assert not _same_state(runs[True][1], runs[False][1])


def test_replay_captures_again_when_shapes_change():
    model_e, model_r = _model(), _model()
    rp = Replay()
    for B, T in [(3, 16), (2, 8), (3, 16), (2, 8)]:
        x, y = _batches(1, B, T)[0]
        for m in (model_e, model_r):
            m.zero_grad()
        assert rp.backward(lambda a, b: model_r(a, b)[1], x, y) == _eager(
            lambda a, b: model_e(a, b)[1], x, y)
        pe = dict(model_e.named_parameters())
        assert all(np.array_equal(p.grad.data, pe[n].grad.data)
                   for n, p in model_r.named_parameters())
    assert rp.captures == 2 and len(rp.tapes) == 2


def test_replay_strict_refuses_a_changed_step_in_one_line():
    model = _model()
    rp = Replay(strict=True)
    rp.backward(lambda a, b: model(a, b)[1], *_batches(1, 3, 16)[0])
    with pytest.raises(ValueError, match=r"input 0: shape \(3, 16\) dtype <i8 -> shape \(2, 16\)"
                       ) as e:
        rp.backward(lambda a, b: model(a, b)[1], *_batches(1, 2, 16)[0])
    assert "\n" not in str(e.value)


def test_replay_captures_again_when_a_parameter_is_rebound_to_another_shape():
    model = _model()
    rp = Replay()
    fn = lambda a, b: model(a, b)[1]  # noqa: E731
    x, y = _batches(1)[0]
    rp.backward(fn, x, y)
    rp.backward(fn, x, y)
    model.lm_head.bias.data = np.zeros(65)  # same shape: read afresh, no new capture
    rp.backward(fn, x, y)
    assert rp.captures == 1
    model.ln_f.weight.data = np.ones(64, dtype=np.float32)  # another dtype: capture again
    rp.backward(fn, x, y)
    assert rp.captures == 2


def test_replay_check_catches_a_batch_read_from_a_closure():
    """The hazard of every tracer: fn reads its batch from a closure, so the tape keeps the
    first one. The eager check at the first replay raises; without it (negative control) the
    stale loss comes back silently."""
    model = _model()
    batches = iter(_batches(4))
    current = {}

    def fn():
        x, y = current["batch"]
        return model(x, y)[1]

    for verify, expect_error in ((100, True), (0, False)):
        rp = Replay(verify_every=verify)
        current["batch"] = next(batches)
        first = rp.backward(fn)
        current["batch"] = next(batches)
        if expect_error:
            with pytest.raises(RuntimeError, match="replay cannot see"):
                rp.backward(fn)
        else:
            assert rp.backward(fn) == first  # stale: the same loss for another batch


def test_replay_follows_index_attributes_from_inputs_and_ops():
    """Index arrays ride in an op's attributes (getitem's index): taken from fn's input, or
    computed by an earlier op (a row-wise argmax), replay reads them afresh at every call."""
    rng = np.random.default_rng(5)
    w_e, w_r = (mt.tensor(rng.standard_normal((3, 4)), requires_grad=True) for _ in range(2))
    w_r.data[...] = w_e.data

    def fn(w):
        return lambda rows: (w[rows] * w[mt.arange(3), w.argmax(dim=1)].reshape(3, 1)).sum()

    rp = Replay()
    for rows in (np.array([2, 0, 1]), np.array([1, 1, 0]), np.array([0, 2, 2])):
        w_e.grad = w_r.grad = None
        assert rp.backward(fn(w_r), rows) == _eager(fn(w_e), rows)
        assert np.array_equal(w_r.grad.data, w_e.grad.data)
        flipped = w_e.data[:, ::-1].copy()  # moves every row's argmax
        w_e.data[...] = w_r.data[...] = flipped
    assert rp.captures == 1


def test_replay_check_catches_a_value_turned_into_a_python_int():
    """A 0-d integer tensor used as an index becomes a Python int (torch's indexing rule), a
    value fixed at capture; the eager check at the first replay sees the loss differ."""
    w = mt.tensor(np.arange(5.0), requires_grad=True)
    rp = Replay()
    fn = lambda: (w * w[w.argmax(dim=0)]).sum()  # noqa: E731
    rp.backward(fn)
    w.data[...] = w.data[::-1].copy()  # the argmax moves from 4 to 0
    with pytest.raises(RuntimeError, match="replay cannot see"):
        rp.backward(fn)


def test_replay_refuses_an_attribute_copied_from_an_input():
    """Derived by more than a view (a reversed copy would be a constant; a strided view of a
    non-contiguous array at an offset cannot be rebuilt): refused at capture, naming the op."""
    base = np.arange(12).reshape(3, 4) % 5
    w = mt.tensor(np.arange(5.0), requires_grad=True)

    def fn(i):
        return w[i[1:, ::2]].sum()  # a view at an offset into a non-contiguous input

    with pytest.raises(ValueError, match="op 'getitem' reads attribute 'index' derived from"):
        Replay().backward(fn, base[:, ::-1])


def test_replay_follows_numpy_views_of_inputs():
    """GPT reshapes its targets with NumPy (a view of the input): replay rebuilds the view on
    each new input instead of keeping the first batch."""
    model_e, model_r = _model(), _model()
    rp = Replay(verify_every=0)
    for x, y in _batches(3):
        model_e.zero_grad()
        model_r.zero_grad()
        assert rp.backward(lambda a, b: model_r(a, b)[1], x, y) == _eager(
            lambda a, b: model_e(a, b)[1], x, y)


def test_replay_runs_eagerly_under_anomaly_mode_and_takes_no_locks():
    model = _model()
    rp = Replay()
    fn = lambda a, b: model(a, b)[1]  # noqa: E731
    with mt.detect_anomaly():
        rp.backward(fn, *_batches(1)[0])
    assert rp.captures == 0
    rp.backward(fn, *_batches(1)[0])
    seen = []
    lock = node._Locks.__init__
    node._Locks.__init__ = lambda self, arrays: (seen.append(1), lock(self, arrays))[1]
    try:
        rp.backward(fn, *_batches(1)[0])
    finally:
        node._Locks.__init__ = lock
    assert not seen and not node._locks


def test_replay_bad_use_is_one_line():
    with pytest.raises(TypeError, match="one-element loss Tensor, got float") as e:
        Replay().backward(lambda: 1.0)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="verify_every must be an int >= 0"):
        Replay(verify_every=-1)


def test_replay_matches_torch_twin_by_name():
    """Replay mode against the independent torch twin: loss and every parameter gradient, at
    the model-parity test's float64 tolerances, for every preset."""
    torch = pytest.importorskip("torch")
    from verification.test_model_parity import (
        build_pair,
        failures,
        loss_and_grad_pairs,
        make_batch,
        parity_rows,
    )

    for preset in sorted(PRESETS):
        ours, twin = build_pair(preset)
        rp = Replay()
        for seed in (1, 2):  # capture, then a replay on another batch
            idx, targets = make_batch(ours.config.vocab_size, 2, 17, seed)
            ours.zero_grad()
            twin.zero_grad(set_to_none=True)
            loss = rp.backward(lambda a, b, m=ours: m(a, b)[1], idx, targets)
            _, t_loss = twin(torch.from_numpy(idx), torch.from_numpy(targets))
            t_loss.backward()
        assert rp.captures == 1
        pairs = loss_and_grad_pairs(ours, twin, loss, t_loss)
        bad = failures(parity_rows(pairs, np.float64))
        assert not bad, f"{preset}: outside the float64 parity tolerance: {bad}"


def test_replay_parameter_used_directly_and_through_a_view():
    """A transposed parameter (an op output that views the parameter's memory) and the
    parameter itself in one step: replay reads each correctly, bit for bit."""
    rng = np.random.default_rng(4)
    w_e, w_r = (mt.tensor(rng.standard_normal((3, 3)), requires_grad=True) for _ in range(2))
    w_r.data[...] = w_e.data

    def step(w):
        return lambda x: ((mt.tensor(x) @ w.T) * w.sum() + w).sum()

    rp = Replay()
    for x in (rng.standard_normal((3, 3)) for _ in range(3)):
        w_e.grad = w_r.grad = None
        assert rp.backward(step(w_r), x) == _eager(step(w_e), x)
        assert np.array_equal(w_r.grad.data, w_e.grad.data)
    assert rp.captures == 1


def test_replay_gives_an_input_that_requires_grad_its_gradient():
    """fn's input may require grad (a gradient w.r.t. the data): replay must not route it into
    a taped op's pending gradient (the input's index is not a tape index) and must not drop
    it; such a call runs eagerly, so every gradient is eager's, bit for bit."""
    rng = np.random.default_rng(6)
    w_e, w_r, b_e, b_r = (mt.tensor(rng.standard_normal((3, 3)), requires_grad=True)
                          for _ in range(4))
    w_r.data[...], b_r.data[...] = w_e.data, b_e.data

    def step(w, b):
        return lambda a, x: ((a * b) * w * x).sum()  # x, input 1, meets op 2

    rp = Replay()
    for _ in range(3):
        a = mt.tensor(rng.standard_normal((3, 3)))
        x_e = mt.tensor(rng.standard_normal((3, 3)), requires_grad=True)
        x_r = mt.tensor(x_e.data.copy(), requires_grad=True)
        assert rp.backward(step(w_r, b_r), a, x_r) == _eager(step(w_e, b_e), a, x_e)
        assert x_r.grad is not None and np.array_equal(x_r.grad.data, x_e.grad.data)
    assert np.array_equal(w_r.grad.data, w_e.grad.data)
    assert np.array_equal(b_r.grad.data, b_e.grad.data)


def test_replay_refuses_a_new_leaf_that_requires_grad_over_an_op_output():
    """`h.detach().requires_grad_()` is a new leaf sharing an op output's array (or fn's
    input's): eager stops the gradient there; replay reading it as that op's output (or the
    input) would send its gradient into h (same loss, wrong parameter gradients) or into the
    pending gradient of the tape entry with the input's index, so capture refuses it."""
    w = mt.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)

    def fn(x):
        h = x * w
        return (h * h.detach().requires_grad_()).sum()

    def fn_input(x):
        return ((x * w) * mt.tensor(x.data, requires_grad=True)).sum()

    for f in (fn, fn_input):
        with pytest.raises(ValueError, match="op 'mul' reads a tensor that requires grad"):
            Replay().backward(f, mt.tensor(np.ones((3, 3))))


def test_replay_lets_an_integer_output_read_such_a_leaf():
    """The refusal above is for outputs that carry a gradient: a cast to integers (`to` is
    differentiable, but an integer output gets no node) or argmax reading
    `h.detach().requires_grad_()` sends nothing anywhere, so replay runs them as eager does."""
    w = mt.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)

    def fn(x):
        h = x * w
        leaf = h.detach().requires_grad_()
        i = leaf.argmax(dim=1) + leaf.to(np.int64)[:, 0] * 0
        return (h * i).sum()

    rp = Replay()
    for _ in range(2):
        w.grad = None
        assert rp.backward(fn, mt.tensor(np.ones((3, 3)))) == 72.0  # 2 * sum(w): argmax 2
        assert np.array_equal(w.grad.data, np.full((3, 3), 2.0))
    assert rp.captures == 1


def test_replay_captures_again_when_a_leaf_starts_requiring_grad():
    """A leaf that needed no gradient at capture (a frozen parameter) and is unfrozen: the
    tape has no gradient path to it, so replay captures again instead of leaving .grad None."""
    w = mt.tensor(np.arange(3.0), requires_grad=True)
    b = mt.tensor(np.ones(3))  # frozen at capture
    fn = lambda x: (x * w + b).sum()  # noqa: E731
    rp = Replay()
    rp.backward(fn, np.ones(3))
    b.requires_grad_(True)
    rp.backward(fn, np.ones(3))
    assert b.grad is not None and np.array_equal(b.grad.data, np.ones(3))
    assert rp.captures == 2


def test_replay_refuses_a_backward_inside_fn():
    """fn calling backward itself (an auxiliary loss, micro-batches summed inside fn): the tape
    replays only the returned loss's backward, so the other one's gradients would silently go
    missing (with verify_every=0; the eager check failed with an unrelated message). Capture
    refuses it in one line."""
    w = mt.tensor(np.arange(3.0), requires_grad=True)

    def fn(x):
        (x * w * w).sum().backward()
        return (x * w).sum()

    with pytest.raises(RuntimeError, match="backward\\(\\) inside a step being captured") as e:
        Replay(verify_every=0).backward(fn, np.ones(3))
    assert "\n" not in str(e.value)
    w.grad = None
    assert _eager(fn, np.ones(3)) == 3.0 and np.array_equal(w.grad.data, [1.0, 3.0, 5.0])


def test_replay_reads_a_detached_parameter_after_the_parameter_is_rebound():
    """`w.detach()` shares w's array: a constant that would keep the captured array when
    `w.data` is rebound between calls (eager reads the new one): replay reads it through w."""
    rng = np.random.default_rng(7)
    w_e, w_r = (mt.tensor(rng.standard_normal(3), requires_grad=True) for _ in range(2))
    w_r.data[...] = w_e.data

    def step(w):
        return lambda x: (mt.tensor(x) * w * w.detach()).sum()

    rp = Replay(verify_every=0)
    for k in range(3):
        x = rng.standard_normal(3)
        w_e.grad = w_r.grad = None
        assert rp.backward(step(w_r), x) == _eager(step(w_e), x)
        assert np.array_equal(w_r.grad.data, w_e.grad.data)
        w_e.data = w_r.data = w_e.data * (k + 2.0)  # rebound, same shape and dtype
    assert rp.captures == 1


def test_replay_failed_check_applies_no_gradient():
    """When the eager check finds a replayed loss that differs, the step's gradients are not
    added to .grad (the error says so)."""
    w = mt.tensor(np.arange(5.0), requires_grad=True)
    rp = Replay()
    fn = lambda: (w * w[w.argmax(dim=0)]).sum()  # noqa: E731
    rp.backward(fn)
    w.grad = None
    w.data[...] = w.data[::-1].copy()
    with pytest.raises(RuntimeError, match="no gradient was applied"):
        rp.backward(fn)
    assert w.grad is None


def test_replay_refuses_a_graph_built_before_fn_in_one_line():
    w = mt.tensor(np.arange(3.0), requires_grad=True)
    outside = (w * 2.0).exp()  # part of the loss's graph, built before fn runs
    with pytest.raises(ValueError, match="graph built before fn ran \\(op '(mul|exp)'\\)") as e:
        Replay().backward(lambda x: (outside * mt.Tensor(x)).sum(), np.ones(3))
    assert "\n" not in str(e.value)


def test_replay_failed_check_drops_the_capture():
    """A capture whose eager check failed is never replayed again: the steps after the error
    return eager's loss and gradients (issue 34: the stale tape's loss and gradients came back
    for the next verify_every - 1 steps)."""
    w_r = mt.tensor(np.linspace(0.5, 2.0, 4), requires_grad=True)
    w_e = mt.tensor(w_r.data.copy(), requires_grad=True)
    factor = {"k": 2.0}  # a Python number fn reads: fixed at capture

    def step(w):
        return lambda x: (mt.Tensor(x) * w * factor["k"]).sum()

    rp = Replay()
    xs = [np.full(4, float(i + 1)) for i in range(8)]
    rp.backward(step(w_r), xs[0])
    factor["k"] = 3.0  # changed after capture: the first replay's check sees it
    with pytest.raises(RuntimeError, match="replay cannot see"):
        rp.backward(step(w_r), xs[1])
    for x in xs[2:]:
        w_r.grad = w_e.grad = None
        got = rp.backward(step(w_r), x)
        assert got == _eager(step(w_e), x)
        assert np.array_equal(w_r.grad.data, w_e.grad.data)
    assert rp.captures == 2
