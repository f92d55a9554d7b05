"""Random programs under replay: each is a loss function of two inputs and three parameters,
built from a random sequence of ops (fan-out, broadcasting, views of ops and of the inputs,
integer ops feeding an index, matmuls, norms, softmax, in-graph reshapes and concatenation).
Replay must give the eager loss and every parameter gradient bit for bit, on the capture call
and on two more calls with new input values (the tape reads the new inputs, never the first).
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import functional as F
from minitorch.replay import Replay

N_PROGRAMS = 300
STEPS = 8


def _unary(rng):
    name = rng.choice(["tanh", "relu", "sigmoid", "square", "exp_tanh", "neg", "gelu"])
    return name, {
        "tanh": lambda a: a.tanh(), "relu": lambda a: a.relu(), "sigmoid": lambda a: a.sigmoid(),
        "square": lambda a: a.square(), "exp_tanh": lambda a: a.tanh().exp(),
        "neg": lambda a: -a, "gelu": lambda a: a.gelu(approximate="tanh")}[name]


def _step(rng):
    """One random op: (name, fn(pool, params, inputs) -> new (3, 4) tensor)."""
    kind = rng.choice(["unary", "binary", "bcast", "matmul", "view", "input_view", "norm",
                       "softmax", "index", "join", "reduce_back"])
    i, j = rng.integers(0, 1 << 16, size=2)

    def pick(pool, k):
        return pool[k % len(pool)]

    if kind == "unary":
        name, f = _unary(rng)
        return f"unary:{name}", lambda pool, p, x: f(pick(pool, i))
    if kind == "binary":
        op = rng.choice(["+", "*", "-"])
        f = {"+": lambda a, b: a + b, "*": lambda a, b: a * b, "-": lambda a, b: a - b}[op]
        return f"binary:{op}", lambda pool, p, x: f(pick(pool, i), pick(pool, j))  # fan-out too
    if kind == "bcast":
        return "bcast", lambda pool, p, x: pick(pool, i) * p["g"] + p["g"].sum()  # (4,) and ()
    if kind == "matmul":
        return "matmul", lambda pool, p, x: pick(pool, i) @ p["w"]
    if kind == "view":
        return "view", lambda pool, p, x: pick(pool, i).T.reshape(12).reshape(4, 3).T
    if kind == "input_view":  # a NumPy view of an input, taken inside fn
        return "input_view", lambda pool, p, x: pick(pool, i) * mt.Tensor(x[1][:, ::-1])
    if kind == "norm":
        return "norm", lambda pool, p, x: F.layer_norm(pick(pool, i), (4,), p["g"], None)
    if kind == "softmax":
        return "softmax", lambda pool, p, x: pick(pool, i).softmax(-1)
    if kind == "index":  # an integer op's output used as an index (argmax per row)
        def index(pool, p, x):
            a = pick(pool, i)
            top = a.argmax(dim=1)
            return a * 0.5 + a[mt.arange(3), top].reshape(3, 1)
        return "index", index
    if kind == "join":
        return "join", lambda pool, p, x: mt.cat([pick(pool, i)[:, :2], pick(pool, j)[:, 2:]],
                                                 dim=1)
    return "reduce_back", lambda pool, p, x: pick(pool, i) - pick(pool, i).mean(dim=1,
                                                                               keepdim=True)


def _program(seed: int):
    rng = np.random.default_rng(seed)
    steps = [_step(rng) for _ in range(STEPS)]
    finals = rng.integers(1, 4)

    def fn(params, x0, x1):
        pool = [mt.Tensor(x0) @ params["w"], mt.Tensor(x1) + params["b"]]
        for _, f in steps:
            pool.append(f(pool, params, (x0, x1)))
        loss = pool[-1].sum()
        for t in pool[-finals - 1:-1]:
            loss = loss + (t * t).mean()
        return loss

    return [name for name, _ in steps], fn


def _params(seed: int):
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((4, 4)) * 0.5, "b": rng.standard_normal(4),
            "g": 1.0 + 0.1 * rng.standard_normal(4)}


def _leaves(arrays):
    return {k: mt.tensor(v.copy(), requires_grad=True) for k, v in arrays.items()}


@pytest.mark.parametrize("chunk", range(6))
def test_replay_fuzz_bit_identical_to_eager(chunk):
    seen, failures = set(), []
    for seed in range(chunk * N_PROGRAMS // 6, (chunk + 1) * N_PROGRAMS // 6):
        names, fn = _program(seed)
        seen.update(names)
        arrays = _params(seed + 10_000)
        eager, replayed = _leaves(arrays), _leaves(arrays)
        rp = Replay(verify_every=0)  # the comparison below is the check
        rng = np.random.default_rng(seed + 20_000)
        for call in range(3):
            x0, x1 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
            for p in (*eager.values(), *replayed.values()):
                p.grad = None
            loss_e = fn(eager, x0, x1)
            loss_e.backward()
            loss_r = rp.backward(lambda a, b, f=fn, p=replayed: f(p, a, b), x0, x1)
            same = loss_r == loss_e.item() and all(
                np.array_equal(replayed[k].grad.data, eager[k].grad.data)
                for k in eager if eager[k].grad is not None)
            if not same:
                failures.append(f"seed {seed} call {call}: {names}")
                break
        assert rp.captures == 1, f"seed {seed}: {rp.captures} captures for one signature"
    assert not failures, f"{len(failures)} programs differ under replay: {failures[:5]}"
    if chunk == 0:
        assert len(seen) >= 8, f"the generator emitted only {sorted(seen)}"


def test_replay_fuzz_catches_a_stale_input(monkeypatch):
    """Negative control: a replay that reads the capture call's inputs instead of the new ones
    (views rebuilt on the old array) is caught by this fuzzer's comparison."""
    from minitorch import replay as R

    real_run = R._Tape.run
    first: dict = {}

    def stale(self, inputs, seed):
        first.setdefault(id(self), inputs)
        return real_run(self, first[id(self)], seed)

    monkeypatch.setattr(R._Tape, "run", stale)
    with pytest.raises(AssertionError, match="programs differ under replay"):
        test_replay_fuzz_bit_identical_to_eager(0)
