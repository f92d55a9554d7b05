"""minitorch.optim.lr_scheduler against torch.optim.lr_scheduler, step by step.

Each case builds the same scheduler from one lambda on a minitorch and a torch optimizer with
three param groups (lrs 0.1, 0.03, 0.5) and steps both 30-100 times: at construction and after
every step, get_last_lr(), every group's lr (and the momentum or beta1 OneCycleLR cycles) agree
within 1e-12 and last_epoch exactly. Also: state_dict keys and values as torch's, a mid-run
state_dict round trip that resumes torch's sequence, the deprecated step(epoch), and bad arguments
refused in one line (wherever torch refuses them, and earlier where torch fails at a step).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import Parameter
from minitorch.optim import lr_scheduler as ML
from minitorch.optim import schedule

torch = pytest.importorskip("torch")
TL = torch.optim.lr_scheduler

pytestmark = pytest.mark.torch
torch.set_num_threads(1)

LR_ATOL = 1e-12
BASES = (0.1, 0.03, 0.5)


def optimizers(name: str = "SGD", bases=BASES, **kwargs):
    """(minitorch optimizer, torch optimizer): one param group per base lr, same options."""
    ours = [{"params": [Parameter(np.zeros(2))], "lr": b} for b in bases]
    theirs = [{"params": [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))], "lr": b}
              for b in bases]
    return getattr(mt.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)


def momenta(opt) -> list[float]:
    """What OneCycleLR cycles: beta1 where the groups have betas, else momentum (or 0)."""
    return [g["betas"][0] if "betas" in g else g.get("momentum", 0.0) for g in opt.param_groups]


def snapshot(sched, opt) -> dict:
    return {"last_lr": list(sched.get_last_lr()), "lr": [g["lr"] for g in opt.param_groups],
            "momentum": momenta(opt), "last_epoch": sched.last_epoch}


def advance(sched, opt, steps: int, metrics=None) -> list[dict]:
    """`steps` optimizer+scheduler steps (no gradients: the optimizer step is a no-op that keeps
    torch's step-order check quiet); the snapshot after each."""
    rows = []
    for i in range(steps):
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[i])
        rows.append(snapshot(sched, opt))
    return rows


def run(make, lib, opt, steps: int) -> tuple[list[dict], object]:
    """Build the scheduler with `lib` (ML or TL) and drive it: rows for construction + steps."""
    sched = make(lib, opt)
    return [snapshot(sched, opt)] + advance(sched, opt, steps), sched


def assert_rows_match(ours: list[dict], theirs: list[dict]) -> float:
    """Every row within LR_ATOL (lrs, momenta) and the same last_epoch; returns the max error."""
    assert len(ours) == len(theirs)
    worst = 0.0
    for step, (o, t) in enumerate(zip(ours, theirs)):
        assert o["last_epoch"] == t["last_epoch"], step
        for key in ("last_lr", "lr", "momentum"):
            np.testing.assert_allclose(o[key], t[key], rtol=0, atol=LR_ATOL,
                                       err_msg=f"{key} at step {step}")
            worst = max(worst, float(np.max(np.abs(np.subtract(o[key], t[key])))))
    return worst


def _lambdas():
    """One factor function per param group."""
    return [lambda e: 1.0 / (e + 1), lambda e: 0.9**e, lambda e: (e % 7) / 7 + 0.1]


# name -> (make(lib, optimizer) -> scheduler, steps, optimizer name, optimizer kwargs)
CASES = {
    "lambda": (lambda L, o: L.LambdaLR(o, lambda e: 0.95**e), 40, "SGD", {}),
    "lambda_per_group": (lambda L, o: L.LambdaLR(o, _lambdas()), 40, "SGD", {}),
    "multiplicative": (lambda L, o: L.MultiplicativeLR(o, lambda e: 0.97), 50, "SGD", {}),
    "multiplicative_per_epoch": (lambda L, o: L.MultiplicativeLR(o, lambda e: 1 - e / 200), 50,
                                 "Adam", {}),
    "step": (lambda L, o: L.StepLR(o, step_size=10), 45, "SGD", {}),
    "step_3_half": (lambda L, o: L.StepLR(o, 3, gamma=0.5), 40, "Adam", {}),
    "multistep": (lambda L, o: L.MultiStepLR(o, [30, 5, 12, 12], gamma=0.3), 40, "SGD", {}),
    "exponential": (lambda L, o: L.ExponentialLR(o, 0.93), 60, "SGD", {}),
    "exponential_up": (lambda L, o: L.ExponentialLR(o, gamma=1.05), 30, "SGD", {}),
    "cosine": (lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=1e-3), 65, "SGD", {}),
    "cosine_t7": (lambda L, o: L.CosineAnnealingLR(o, 7), 100, "Adam", {}),
    "cosine_t1": (lambda L, o: L.CosineAnnealingLR(o, T_max=1, eta_min=0.01), 30, "SGD", {}),
    "linear": (lambda L, o: L.LinearLR(o), 30, "SGD", {}),
    "linear_down": (lambda L, o: L.LinearLR(o, 1.0, 0.05, total_iters=20), 40, "SGD", {}),
    "linear_to_zero": (lambda L, o: L.LinearLR(o, 0.5, 0.0, total_iters=8), 30, "SGD", {}),
    "constant": (lambda L, o: L.ConstantLR(o), 30, "SGD", {}),
    "constant_half_10": (lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=10), 30, "SGD",
                         {}),
    "constant_0_iters": (lambda L, o: L.ConstantLR(o, 0.25, total_iters=0), 30, "SGD", {}),
    "sequential_warmup_cosine": (lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, 0.1, total_iters=5), L.CosineAnnealingLR(o, 20, eta_min=1e-3)], [5]),
        60, "Adam", {}),
    "sequential_three": (lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, 0.1, 4), L.ExponentialLR(o, 0.9), L.StepLR(o, 5, 0.5)], [4, 12]),
        50, "SGD", {}),
    "sequential_no_closed_form": (lambda L, o: L.SequentialLR(
        o, [L.MultiplicativeLR(o, lambda e: 0.9), L.LambdaLR(o, lambda e: 1 / (e + 1))], [6]),
        30, "SGD", {}),
    "onecycle_cos_sgd": (lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=60), 60, "SGD",
                         {"momentum": 0.9}),
    "onecycle_linear_adam": (lambda L, o: L.OneCycleLR(
        o, max_lr=[0.3, 0.01, 2.0], epochs=5, steps_per_epoch=8, anneal_strategy="linear",
        pct_start=0.25), 40, "Adam", {}),
    "onecycle_three_phase": (lambda L, o: L.OneCycleLR(
        o, 0.8, total_steps=50, three_phase=True, base_momentum=[0.8, 0.7, 0.6],
        max_momentum=0.99, div_factor=10.0, final_div_factor=100.0), 50, "SGD",
        {"momentum": 0.5}),
    "onecycle_linear_three_phase_adam": (lambda L, o: L.OneCycleLR(
        o, 0.5, total_steps=41, three_phase=True, anneal_strategy="linear", pct_start=0.4),
        41, "Adam", {}),
    "onecycle_no_momentum_cycle": (lambda L, o: L.OneCycleLR(
        o, 0.2, total_steps=30, cycle_momentum=False), 30, "SGD", {"momentum": 0.9}),
    "onecycle_rmsprop": (lambda L, o: L.OneCycleLR(o, 0.05, total_steps=30), 30, "RMSprop", {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_scheduler_matches_torch_every_step(name, record):
    make, steps, opt_name, kwargs = CASES[name]
    opt_o, opt_t = optimizers(opt_name, **kwargs)
    ours, sched_o = run(make, ML, opt_o, steps)
    theirs, sched_t = run(make, TL, opt_t, steps)
    err = assert_rows_match(ours, theirs)
    record("lr_scheduler_step", name, f"n{steps}", err, None, LR_ATOL, err <= LR_ATOL)
    assert any(row["lr"] != list(BASES) for row in ours)  # the schedule did something
    if hasattr(sched_t, "base_lrs"):
        assert sched_o.base_lrs == sched_t.base_lrs
    else:  # torch's SequentialLR has none
        assert not hasattr(sched_o, "base_lrs")


def _torch_keys_only(sd):
    """A torch scheduler state_dict without its warning bookkeeping (recursively)."""
    out = {k: v for k, v in sd.items() if k != "_get_lr_called_within_step"}
    if "_schedulers" in out:
        out["_schedulers"] = [_torch_keys_only(s) for s in out["_schedulers"]]
    return out


GROUP_KEYS = ("lr", "initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum",
              "momentum", "betas")


@pytest.mark.parametrize("name", list(CASES))
def test_scheduler_state_dict_is_torchs_and_round_trip_resumes(name):
    """After half the steps: the state_dict has torch's keys and values, and so do the groups'
    scheduler keys; a fresh optimizer + scheduler loaded from it (the original keeps stepping,
    so aliased state would show) continues with torch's uninterrupted sequence."""
    make, steps, opt_name, kwargs = CASES[name]
    half = steps // 2
    theirs, _ = run(make, TL, optimizers(opt_name, **kwargs)[1], steps)
    opt_o, opt_t = optimizers(opt_name, **kwargs)
    sched_o, sched_t = make(ML, opt_o), make(TL, opt_t)
    advance(sched_o, opt_o, half)
    advance(sched_t, opt_t, half)
    sd_o, sd_t = sched_o.state_dict(), _torch_keys_only(sched_t.state_dict())
    assert sd_o == sd_t
    for g_o, g_t in zip(opt_o.param_groups, opt_t.param_groups):
        assert {k: g_o[k] for k in GROUP_KEYS if k in g_t} == {
            k: g_t[k] for k in GROUP_KEYS if k in g_t}
    saved = (opt_o.state_dict(), sd_o)
    advance(sched_o, opt_o, 3)  # the original goes on: the saved dicts must not follow

    fresh_o = optimizers(opt_name, **kwargs)[0]
    fresh = make(ML, fresh_o)
    fresh_o.load_state_dict(saved[0])
    fresh.load_state_dict(saved[1])
    resumed = [snapshot(fresh, fresh_o)] + advance(fresh, fresh_o, steps - half)
    assert_rows_match(resumed, theirs[half:])


def test_reduce_lr_on_plateau_cases_match_torch(record):
    rng = np.random.default_rng(5)
    curve = np.concatenate([np.linspace(1.0, 0.5, 15), np.full(20, 0.5), np.linspace(0.5, 0.4, 10),
                            0.4 + 0.01 * rng.standard_normal(35)])  # falls, plateaus, noise
    cases = [dict(), dict(patience=2), dict(patience=3, cooldown=4, factor=0.5),
             dict(mode="max", patience=1), dict(threshold=0.05, threshold_mode="abs", patience=2),
             dict(mode="max", threshold_mode="abs", threshold=0.0, patience=0),
             dict(patience=1, min_lr=[0.05, 0.0, 0.3]), dict(patience=0, min_lr=0.02),
             dict(patience=1, factor=0.995, eps=1e-3)]  # eps: only group 2's cut is big enough
    for kwargs in cases:
        metrics = -curve if kwargs.get("mode") == "max" else curve
        opt_o, opt_t = optimizers("Adam")
        s_o, s_t = ML.ReduceLROnPlateau(opt_o, **kwargs), TL.ReduceLROnPlateau(opt_t, **kwargs)
        ours = [snapshot(s_o, opt_o)] + advance(s_o, opt_o, len(curve), list(metrics))
        theirs = [snapshot(s_t, opt_t)] + advance(s_t, opt_t, len(curve), list(metrics))
        err = assert_rows_match(ours, theirs)
        record("lr_scheduler_step", "ReduceLROnPlateau", str(kwargs), err, None, LR_ATOL, True)
        assert len({tuple(row["lr"]) for row in ours}) > 1, kwargs  # it did reduce
        assert s_o.state_dict() == s_t.state_dict()


def test_reduce_lr_on_plateau_round_trip_and_tensor_metric():
    curve = [1.0, 0.9, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]
    opt_t = optimizers()[1]
    s_t = TL.ReduceLROnPlateau(opt_t, patience=1, cooldown=1)
    theirs = advance(s_t, opt_t, len(curve), curve)
    opt_o = optimizers()[0]
    s_o = ML.ReduceLROnPlateau(opt_o, patience=1, cooldown=1)
    advance(s_o, opt_o, 5, [mt.Tensor(np.array(c)) for c in curve])  # float(tensor) as torch
    saved = (opt_o.state_dict(), s_o.state_dict())
    opt_2 = optimizers()[0]
    s_2 = ML.ReduceLROnPlateau(opt_2, patience=1, cooldown=1)
    opt_2.load_state_dict(saved[0])
    s_2.load_state_dict(saved[1])
    assert_rows_match(advance(s_2, opt_2, len(curve) - 5, curve[5:]), theirs[5:])


@pytest.mark.parametrize("name", ["step", "multistep", "exponential", "cosine", "linear",
                                  "constant", "lambda"])
def test_deprecated_step_epoch_matches_torch(name):
    """step(epoch) jumps with the closed form where torch has one (get_lr otherwise), warning."""
    make, _, opt_name, kwargs = CASES[name]
    opt_o, opt_t = optimizers(opt_name, **kwargs)
    s_o, s_t = make(ML, opt_o), make(TL, opt_t)
    opt_o.step()
    opt_t.step()  # torch warns about the step order otherwise
    for epoch in (3, 17, 8, 25):
        with pytest.warns(UserWarning, match="epoch parameter"):
            s_o.step(epoch)
        with pytest.warns(UserWarning, match="epoch parameter"):
            s_t.step(epoch)
        assert_rows_match([snapshot(s_o, opt_o)], [snapshot(s_t, opt_t)])


def test_onecycle_refuses_stepping_past_total_steps_like_torch():
    opt_o, opt_t = optimizers()
    s_o = ML.OneCycleLR(opt_o, 0.1, total_steps=5, cycle_momentum=False)
    s_t = TL.OneCycleLR(opt_t, 0.1, total_steps=5, cycle_momentum=False)
    advance(s_o, opt_o, 5)
    advance(s_t, opt_t, 5)
    with pytest.raises(ValueError, match="Tried to step 6 times"):
        s_t.step()
    with pytest.raises(ValueError, match="tried to step 6 times; .* total steps is 5"):
        s_o.step()


def test_resume_with_last_epoch_matches_torch():
    """last_epoch=k on groups holding initial_lr (a resumed run) continues as torch's."""
    opt_o, opt_t = optimizers()
    for opt in (opt_o, opt_t):
        for g in opt.param_groups:
            g["initial_lr"] = 2 * g["lr"]
    rows = [run(lambda L, o: L.CosineAnnealingLR(o, 10, last_epoch=4), lib, opt, 30)[0]
            for lib, opt in ((ML, opt_o), (TL, opt_t))]
    assert_rows_match(*rows)


def test_lrscheduler_is_torchs_base_class_only():
    """One name per concept: every LRScheduler minitorch.optim exposes is torch's base class
    (lr_scheduler.LRScheduler, where torch has it; torch.optim has no top-level one, ours is an
    alias of the same class), and the Trainer's schedule is one of its subclasses."""
    import importlib
    import pkgutil

    assert TL.LRScheduler and not hasattr(torch.optim, "LRScheduler")
    assert mt.optim.LRScheduler is ML.LRScheduler and mt.optim.lr_scheduler is ML
    for info in pkgutil.iter_modules(mt.optim.__path__):
        module = importlib.import_module(f"minitorch.optim.{info.name}")
        assert getattr(module, "LRScheduler", ML.LRScheduler) is ML.LRScheduler, info.name
    opt = optimizers()[0]
    for sched in (ML.StepLR(opt, 3), ML.ReduceLROnPlateau(opt),
                  schedule.ScheduleLR(opt, "cosine", warmup=2, total=10)):
        assert isinstance(sched, ML.LRScheduler)
    assert set(ML.__all__) <= set(TL.__all__)


def _trainer_schedule(L, o, warmup=3, total=20):
    """The Trainer's warmup+cosine: ScheduleLR here, torch's LambdaLR of the same function."""
    if L is ML:
        return schedule.ScheduleLR(o, "cosine", warmup=warmup, total=total, min_ratio=0.1)
    return L.LambdaLR(o, lambda e: schedule.warmup_cosine(e, 1.0, warmup, total, 0.1))


def test_schedule_lr_steps_as_torch_scheduler():
    """ScheduleLR behaves as a torch scheduler: construction's step, last_epoch, every group's
    lr from its own base, get_last_lr; its lrs are exactly lr_at, the Trainer's logged value."""
    opt_o, opt_t = optimizers()
    rows_o, sched = run(_trainer_schedule, ML, opt_o, 30)
    rows_t, _ = run(_trainer_schedule, TL, opt_t, 30)
    assert_rows_match(rows_o, rows_t)
    for epoch, row in enumerate(rows_o):
        assert row["lr"] == [sched.lr_at(epoch, i) for i in range(len(BASES))]
        assert row["lr"] == [schedule.warmup_cosine(epoch, b, 3, 20, 0.1) for b in BASES]


@pytest.mark.parametrize("how", ["last_epoch", "state_dict"])
def test_schedule_lr_resumes_bit_identically(how):
    """After 7 steps, a new ScheduleLR (last_epoch=6, as the Trainer's resume builds it) or one
    loaded from the state_dict continues with the uninterrupted run's exact lrs; a scheduler
    restarted at last_epoch=-1 (the negative control) does not."""
    straight = optimizers()[0]
    rows = run(_trainer_schedule, ML, straight, 20)[0]
    opt = optimizers()[0]
    first = _trainer_schedule(ML, opt)
    advance(first, opt, 7)
    if how == "last_epoch":
        resumed = schedule.ScheduleLR(opt, "cosine", 6, warmup=3, total=20, min_ratio=0.1)
    else:
        resumed = _trainer_schedule(ML, optimizers()[0])
        resumed.optimizer = opt
        resumed.load_state_dict(first.state_dict())
    assert resumed.last_epoch == 7 and [g["lr"] for g in opt.param_groups] == rows[7]["lr"]
    assert advance(resumed, opt, 13) == rows[8:]
    restarted = schedule.ScheduleLR(opt, "cosine", warmup=3, total=20, min_ratio=0.1)
    assert restarted.get_last_lr() != rows[7]["lr"]


def test_schedule_lr_resume_needs_initial_lr_like_torch():
    opt_o, opt_t = optimizers()
    with pytest.raises(KeyError):
        TL.LambdaLR(opt_t, lambda e: 1.0, last_epoch=3)
    with pytest.raises(KeyError, match="initial_lr"):
        schedule.ScheduleLR(opt_o, "constant", 3)


# ---- bad arguments ------------------------------------------------------------------------------

NAN = float("nan")
# (make(lib, opt), exception, our message pattern, torch: "init" refuses at construction, "step"
# fails at the first step, None accepts)
BAD = {
    "step_size_0": (lambda L, o: L.StepLR(o, 0), ValueError, "step_size=0", "step"),
    "step_size_neg": (lambda L, o: L.StepLR(o, -2), ValueError, "step_size=-2", None),
    "step_size_float": (lambda L, o: L.StepLR(o, 2.5), ValueError, "step_size=2.5", None),
    "step_gamma_neg": (lambda L, o: L.StepLR(o, 2, gamma=-0.5), ValueError, "gamma=-0.5", None),
    "step_gamma_nan": (lambda L, o: L.StepLR(o, 2, gamma=NAN), ValueError, "gamma=nan", None),
    "exp_gamma_neg": (lambda L, o: L.ExponentialLR(o, -0.9), ValueError, "gamma=-0.9", None),
    "multistep_float": (lambda L, o: L.MultiStepLR(o, [2, 4.5]), ValueError, "milestone=4.5",
                        None),
    "cosine_T_max_0": (lambda L, o: L.CosineAnnealingLR(o, 0), ValueError, "T_max=0", "step"),
    "cosine_T_max_neg": (lambda L, o: L.CosineAnnealingLR(o, -5), ValueError, "T_max=-5", None),
    "cosine_eta_min_nan": (lambda L, o: L.CosineAnnealingLR(o, 5, eta_min=NAN), ValueError,
                           "eta_min=nan", None),
    "linear_start_0": (lambda L, o: L.LinearLR(o, start_factor=0.0), ValueError,
                       "start_factor=0", "init"),
    "linear_start_big": (lambda L, o: L.LinearLR(o, start_factor=1.5), ValueError,
                         "start_factor=1.5", "init"),
    "linear_end_big": (lambda L, o: L.LinearLR(o, end_factor=2.0), ValueError, "end_factor=2",
                       "init"),
    "constant_factor_big": (lambda L, o: L.ConstantLR(o, factor=1.5), ValueError, "factor=1.5",
                            "init"),
    "constant_factor_neg": (lambda L, o: L.ConstantLR(o, factor=-0.1), ValueError,
                            "factor=-0.1", "init"),
    "lambda_count": (lambda L, o: L.LambdaLR(o, [lambda e: 1.0] * 2), ValueError,
                     "expected 3 lr_lambdas, but got 2", "init"),
    "multiplicative_not_callable": (lambda L, o: L.MultiplicativeLR(o, 0.9), TypeError,
                                    "lr_lambda should be a function", "init"),
    "sequential_milestones": (lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)],
                                                          [2, 4]), ValueError,
                              "one milestone fewer", "init"),
    "sequential_empty": (lambda L, o: L.SequentialLR(o, [], []), ValueError,
                         "at least one scheduler", "init"),
    "sequential_plateau": (lambda L, o: L.SequentialLR(o, [L.ReduceLROnPlateau(o)], []),
                           ValueError, "ReduceLROnPlateau", "init"),
    "plateau_factor_1": (lambda L, o: L.ReduceLROnPlateau(o, factor=1.0), ValueError,
                         "factor=1", "init"),
    "plateau_mode": (lambda L, o: L.ReduceLROnPlateau(o, mode="avg"), ValueError,
                     "mode 'avg' is unknown", "init"),
    "plateau_threshold_mode": (lambda L, o: L.ReduceLROnPlateau(o, threshold_mode="x"),
                               ValueError, "threshold mode 'x' is unknown", "init"),
    "plateau_min_lr_count": (lambda L, o: L.ReduceLROnPlateau(o, min_lr=[0.0]), ValueError,
                             "min_lr has 1 values", "init"),
    "plateau_patience_neg": (lambda L, o: L.ReduceLROnPlateau(o, patience=-1), ValueError,
                             "patience=-1", None),
    "onecycle_no_length": (lambda L, o: L.OneCycleLR(o, 0.1), ValueError,
                           "either total_steps OR", "init"),
    "onecycle_total_0": (lambda L, o: L.OneCycleLR(o, 0.1, total_steps=0), ValueError,
                         "total_steps=0", "init"),
    "onecycle_pct_int": (lambda L, o: L.OneCycleLR(o, 0.1, 10, pct_start=1), ValueError,
                         "pct_start=1", "init"),
    "onecycle_pct_big": (lambda L, o: L.OneCycleLR(o, 0.1, 10, pct_start=1.5), ValueError,
                         "pct_start=1.5", "init"),
    "onecycle_anneal": (lambda L, o: L.OneCycleLR(o, 0.1, 10, anneal_strategy="exp"),
                        ValueError, "anneal_strategy", "init"),
    "onecycle_max_lr_count": (lambda L, o: L.OneCycleLR(o, [0.1, 0.2], 10), ValueError,
                              "max_lr has 2 values", "init"),
    "onecycle_empty_phase": (lambda L, o: L.OneCycleLR(o, 0.1, total_steps=10, pct_start=0.1),
                             ValueError, "phase 0 of the cycle has zero length", "init"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_scheduler_argument_is_refused_in_one_line(name):
    make, exc, pattern, torch_refuses = BAD[name]
    opt_o, opt_t = optimizers()
    with pytest.raises(exc, match=pattern) as info:
        make(ML, opt_o)
    assert "\n" not in str(info.value)
    if torch_refuses == "init":
        with pytest.raises((exc, ZeroDivisionError)):
            make(TL, opt_t)
    elif torch_refuses == "step":
        sched = make(TL, opt_t)
        opt_t.step()
        with pytest.raises(ZeroDivisionError):
            sched.step()
    else:
        make(TL, opt_t)  # torch takes it (a deliberate difference)


def test_bad_optimizer_and_resume_refused_like_torch():
    opt_o, opt_t = optimizers()
    for lib, opt in ((ML, opt_o), (TL, opt_t)):
        with pytest.raises(TypeError, match="is not an Optimizer"):
            lib.StepLR(object(), 3)
        with pytest.raises(KeyError, match="initial_lr"):
            lib.StepLR(opt, 3, last_epoch=4)
    with pytest.raises(ValueError, match="same optimizer"):
        ML.SequentialLR(opt_o, [ML.StepLR(optimizers()[0], 2)], [])
    with pytest.raises(ValueError, match="no momentum or betas"):
        ML.OneCycleLR(optimizers("Adagrad")[0], 0.1, total_steps=10)
    with pytest.raises(ValueError, match="momentum"):
        TL.OneCycleLR(optimizers("Adagrad")[1], 0.1, total_steps=10)


def test_non_finite_lr_is_refused_where_torch_writes_it():
    """A deliberate difference: torch writes inf into the optimizer; we refuse in one line."""
    opt_o, opt_t = optimizers()
    s_o, s_t = ML.LambdaLR(opt_o, lambda e: 1.0 / (3 - e)), TL.LambdaLR(opt_t, lambda e: 1.0)
    advance(s_o, opt_o, 2)
    with pytest.raises((ValueError, ZeroDivisionError)):
        s_o.step()
    s_o, s_t = ML.ExponentialLR(opt_o, 1e100), TL.ExponentialLR(opt_t, 1e100)
    advance(s_t, opt_t, 5)
    assert math.isinf(opt_t.param_groups[0]["lr"])
    with pytest.raises(ValueError, match="the schedule gave lr=inf for param group 0 at epoch"):
        advance(s_o, opt_o, 5)


def test_load_state_dict_refuses_another_schedulers_state():
    opt = optimizers()[0]
    sd = ML.StepLR(opt, 3).state_dict()
    with pytest.raises(ValueError, match=r"missing keys \['T_max', 'eta_min'\], unknown keys "
                                         r"\['gamma', 'step_size'\]"):
        ML.CosineAnnealingLR(opt, 5).load_state_dict(sd)


# ---- negative controls: the harness must reject a wrong scheduler --------------------------

class CosineHeldAtFloor(ML.CosineAnnealingLR):
    """Deliberately wrong past T_max: holds eta_min (schedule.py's choice) where torch rises."""

    def get_lr(self):
        if self.last_epoch >= self.T_max:
            return [self.eta_min] * len(self.base_lrs)
        return super().get_lr()


class LinearLateByOne(ML.LinearLR):
    """Deliberately wrong: the ramp starts one epoch late."""

    def get_lr(self):
        if self.last_epoch == 1:
            return [g["lr"] for g in self.optimizer.param_groups]
        return super().get_lr()


@pytest.mark.parametrize("wrong, name", [(CosineHeldAtFloor, "cosine"),
                                         (LinearLateByOne, "linear")])
def test_harness_catches_a_wrong_scheduler(wrong, name, monkeypatch):
    make, steps, opt_name, kwargs = CASES[name]
    opt_o, opt_t = optimizers(opt_name, **kwargs)
    theirs, _ = run(make, TL, opt_t, steps)
    monkeypatch.setattr(ML, wrong.__mro__[1].__name__, wrong)
    ours, _ = run(make, ML, opt_o, steps)
    with pytest.raises(AssertionError):
        assert_rows_match(ours, theirs)
