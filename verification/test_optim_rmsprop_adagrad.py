"""RMSprop and Adagrad against torch.optim, step by step in float64.

A small model (a tanh layer, a bias and a curvature vector) with the same initial weights in both
libraries; each side computes its own gradients on the same batch and steps its own optimizer.
After every one of 20 steps all parameters agree within 1e-10, for each option combination, with
per-parameter and flat (nn/flat.py) storage, two param groups, and a state_dict round trip half
way; the flat path is bit-identical to the per-parameter one. Also bad hyperparameters and state.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import Parameter
from minitorch.nn.flat import flatten

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch
torch.set_num_threads(1)

STEPS = 20
PARAM_ATOL = 1e-10
MO, TO = mt.optim, torch.optim


def init_arrays(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((6, 4)), "b": rng.standard_normal(4),
            "v": rng.standard_normal(5)}


def data(seed: int = 4):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((8, 6)), rng.standard_normal((8, 4))) for _ in range(STEPS)]


D = np.linspace(0.1, 10.0, 5)


def loss_ours(p: dict, x, y) -> mt.Tensor:
    r = (mt.Tensor(x) @ p["w"] + p["b"]).tanh() - mt.Tensor(y)  # (8, 4)
    return (r * r).mean() + 0.5 * (mt.Tensor(D) * p["v"] * p["v"]).sum()


def loss_theirs(p: dict, x, y) -> torch.Tensor:
    r = torch.tanh(torch.tensor(x) @ p["w"] + p["b"]) - torch.tensor(y)
    return (r * r).mean() + 0.5 * (torch.tensor(D) * p["v"] * p["v"]).sum()


def ours_params(dtype=np.float64, flat: bool = False) -> dict[str, Parameter]:
    params = {n: Parameter(a.astype(dtype)) for n, a in init_arrays().items()}
    if flat:
        flatten(params.values())
    return params


def theirs_params() -> dict[str, torch.nn.Parameter]:
    return {n: torch.nn.Parameter(torch.from_numpy(a)) for n, a in init_arrays().items()}


def groups(params: dict, split: dict | None):
    """All parameters in one group, or {"w"} and {"b", "v"} with split's per-group options."""
    if split is None:
        return list(params.values())
    return [{"params": [params["w"]], **split[0]},
            {"params": [params["b"], params["v"]], **split[1]}]


CASES = {  # name -> (optimizer name, kwargs, per-group options or None)
    "rmsprop": ("RMSprop", {}, None),
    "rmsprop_momentum": ("RMSprop", {"momentum": 0.9}, None),
    "rmsprop_centered": ("RMSprop", {"centered": True}, None),
    "rmsprop_centered_momentum_wd": ("RMSprop", {"centered": True, "momentum": 0.5,
                                                 "weight_decay": 0.1}, None),
    "rmsprop_wd_alpha_eps": ("RMSprop", {"weight_decay": 0.1, "alpha": 0.9, "eps": 1e-3},
                             None),
    "rmsprop_centered_low_alpha": ("RMSprop", {"centered": True, "alpha": 0.3}, None),
    "rmsprop_groups": ("RMSprop", {"lr": 0.02}, ({"momentum": 0.9, "centered": True},
                                                 {"lr": 0.005, "weight_decay": 0.1})),
    "adagrad": ("Adagrad", {"lr": 0.1}, None),
    "adagrad_lr_decay": ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}, None),
    "adagrad_wd": ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}, None),
    "adagrad_init_acc": ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5}, None),
    "adagrad_all": ("Adagrad", {"lr": 0.2, "lr_decay": 0.05, "weight_decay": 0.01,
                                "initial_accumulator_value": 0.1, "eps": 1e-6}, None),
    "adagrad_groups": ("Adagrad", {"lr": 0.1}, ({"lr_decay": 0.2},
                                                {"lr": 0.05, "weight_decay": 0.1})),
}


class Run:
    """One side's model, optimizer and step counter."""

    def __init__(self, case: str, lib: str, flat: bool = False, cls=None):
        name, kwargs, split = CASES[case]
        self.lib = lib
        self.params = ours_params(flat=flat) if lib == "ours" else theirs_params()
        cls = cls or getattr(MO if lib == "ours" else TO, name)
        self.opt = cls(groups(self.params, split), **kwargs)
        self.step_no = 0

    def steps(self, batches) -> None:
        for x, y in batches:
            self.opt.zero_grad()
            loss = (loss_ours if self.lib == "ours" else loss_theirs)(self.params, x, y)
            loss.backward()
            self.opt.step()
            self.step_no += 1

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: (p.data if self.lib == "ours" else p.detach().numpy()).copy()
                for n, p in self.params.items()}


def max_error(a: Run, b: Run) -> float:
    arrs = b.arrays()
    return max(float(np.max(np.abs(v - arrs[n]))) for n, v in a.arrays().items())


def lockstep(ours: Run, theirs: Run, batches) -> list[float]:
    """Step both on each batch; the max parameter error after every step."""
    errs = []
    for batch in batches:
        ours.steps([batch])
        theirs.steps([batch])
        errs.append(max_error(ours, theirs))
    return errs


@pytest.mark.parametrize("layout", ["per_param", "flat"])
@pytest.mark.parametrize("case", list(CASES))
def test_optimizer_matches_torch_every_step(case, layout, record):
    ours, theirs = Run(case, "ours", flat=layout == "flat"), Run(case, "theirs")
    start = ours.arrays()
    errs = lockstep(ours, theirs, data())
    for step, err in enumerate(errs, 1):
        record(f"{CASES[case][0].lower()}_step_{layout}", case, step, err, None, PARAM_ATOL,
               err <= PARAM_ATOL)
    moved = max(float(np.max(np.abs(v - start[n]))) for n, v in ours.arrays().items())
    assert moved > 1e-2, "the parameters hardly moved: the comparison would be vacuous"
    assert max(errs) <= PARAM_ATOL, errs


@pytest.mark.parametrize("case", list(CASES))
def test_state_dict_matches_torch_and_round_trip_continues(case):
    """After 10 steps: the same state keys and values as torch's; a fresh optimizer on fresh
    parameters loaded from it (the original keeps stepping) goes on to torch's 20-step result."""
    batches, half = data(), STEPS // 2
    ours, theirs = Run(case, "ours", flat=True), Run(case, "theirs")
    lockstep(ours, theirs, batches[:half])
    sd_o, sd_t = ours.opt.state_dict(), theirs.opt.state_dict()
    assert sorted(sd_o["state"]) == sorted(sd_t["state"])
    for i, st_t in sd_t["state"].items():
        assert set(sd_o["state"][i]) == set(st_t), i
        for key, value in st_t.items():
            np.testing.assert_allclose(np.asarray(sd_o["state"][i][key], dtype=np.float64),
                                       value.numpy(), rtol=0, atol=PARAM_ATOL, err_msg=key)
    for g_o, g_t in zip(sd_o["param_groups"], sd_t["param_groups"]):
        assert g_o["params"] == g_t["params"]
        assert {k: g_o[k] for k in g_o if k != "params"} == {k: g_t[k] for k in g_o
                                                            if k != "params"}
    saved = (sd_o, ours.arrays())
    ours.steps(batches[half:half + 3])  # the saved state must not follow the live one

    resumed = Run(case, "ours")
    for name, p in resumed.params.items():
        p.data = saved[1][name].copy()
    resumed.opt.load_state_dict(saved[0])
    theirs.steps(batches[half:])
    resumed.steps(batches[half:])
    assert max_error(resumed, theirs) <= PARAM_ATOL


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", list(CASES))
def test_flat_path_bit_identical_to_per_parameter(case, dtype):
    name, kwargs, split = CASES[case]
    runs = []
    for flat in (True, False):
        params = ours_params(dtype, flat)
        opt = getattr(MO, name)(groups(params, split), **kwargs)
        calls = [0]
        flat_step = opt._flat_step

        def counting(*args, calls=calls, flat_step=flat_step):
            calls[0] += 1
            return flat_step(*args)

        opt._flat_step = counting
        for x, y in data():
            opt.zero_grad()
            loss_ours(params, x.astype(dtype), y.astype(dtype)).backward()
            opt.step()
        runs.append((params, opt, calls[0]))
    (flat_p, flat_opt, flat_calls), (ref_p, ref_opt, ref_calls) = runs
    assert flat_calls == STEPS * len(flat_opt.param_groups) and ref_calls == 0
    for n in flat_p:
        assert flat_p[n].data.dtype == dtype
        assert np.array_equal(flat_p[n].data, ref_p[n].data), n
    sd_f, sd_r = flat_opt.state_dict()["state"], ref_opt.state_dict()["state"]
    for i in sd_r:
        for key, v in sd_r[i].items():
            assert np.array_equal(sd_f[i][key], v), (i, key)


def test_momentum_switched_on_mid_run_starts_a_zero_buffer():
    """torch raises KeyError when a group's momentum goes from 0 to > 0 after the first step
    (no buffer); minitorch starts a zero buffer, which is what the first momentum step means."""
    ours, theirs = Run("rmsprop", "ours", flat=True), Run("rmsprop", "theirs")
    lockstep(ours, theirs, data()[:3])
    for opt in (ours.opt, theirs.opt):
        opt.param_groups[0]["momentum"] = 0.9
    with pytest.raises(KeyError):
        theirs.steps(data()[3:4])
    ours.steps(data()[3:5])
    assert all(st["momentum_buffer"].any() for st in ours.opt.state.values())


def test_adagrad_state_exists_from_construction_like_torch():
    ours, theirs = Run("adagrad_init_acc", "ours"), Run("adagrad_init_acc", "theirs")
    sd_o, sd_t = ours.opt.state_dict()["state"], theirs.opt.state_dict()["state"]
    assert sorted(sd_o) == sorted(sd_t) == [0, 1, 2]
    for i in sd_t:
        assert sd_o[i]["step"] == sd_t[i]["step"].item() == 0
        assert np.array_equal(sd_o[i]["sum"], sd_t[i]["sum"].numpy())


def test_parameter_without_grad_is_skipped_like_torch():
    batches = data()[:5]
    for case in ("rmsprop_centered_momentum_wd", "adagrad_all"):
        ours, theirs = Run(case, "ours", flat=True), Run(case, "theirs")
        for _ in batches:  # "v" gets no gradient: drop it after backward
            for run in (ours, theirs):
                run.opt.zero_grad()
                loss = (loss_ours if run.lib == "ours" else loss_theirs)(run.params, *_)
                loss.backward()
                run.params["v"].grad = None
                run.opt.step()
        assert max_error(ours, theirs) <= PARAM_ATOL
        assert np.array_equal(ours.params["v"].data, init_arrays()["v"])


# ---- schedulers driving the new optimizers -----------------------------------------------------

@pytest.mark.parametrize("case, make", [
    ("rmsprop_momentum", lambda L, o: L.OneCycleLR(o, 0.05, total_steps=STEPS)),
    ("adagrad_lr_decay", lambda L, o: L.StepLR(o, 4, gamma=0.5)),
])
def test_optimizer_with_scheduler_matches_torch(case, make):
    ours, theirs = Run(case, "ours", flat=True), Run(case, "theirs")
    s_o, s_t = make(MO.lr_scheduler, ours.opt), make(TO.lr_scheduler, theirs.opt)
    for batch in data():
        ours.steps([batch])
        theirs.steps([batch])
        s_o.step()
        s_t.step()
        assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr(), abs=1e-12)
        assert max_error(ours, theirs) <= PARAM_ATOL


# ---- validation --------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
BAD_HYPER = [  # (optimizer, kwargs, the name our error gives, does torch refuse it too?)
    ("RMSprop", {"lr": -0.1}, "lr", True), ("RMSprop", {"lr": NAN}, "lr", True),
    ("RMSprop", {"lr": INF}, "lr", False), ("RMSprop", {"eps": -1e-8}, "eps", True),
    ("RMSprop", {"momentum": -0.9}, "momentum", True),
    ("RMSprop", {"weight_decay": -1.0}, "weight_decay", True),
    ("RMSprop", {"alpha": -0.1}, "alpha", True), ("RMSprop", {"alpha": 1.5}, "alpha", False),
    ("RMSprop", {"centered": "yes"}, "centered", False),
    ("Adagrad", {"lr": -0.1}, "lr", True), ("Adagrad", {"lr": INF}, "lr", False),
    ("Adagrad", {"lr_decay": -0.1}, "lr_decay", True),
    ("Adagrad", {"weight_decay": -0.1}, "weight_decay", True),
    ("Adagrad", {"initial_accumulator_value": -1.0}, "initial_accumulator_value", True),
    ("Adagrad", {"eps": -1e-10}, "eps", True), ("Adagrad", {"eps": NAN}, "eps", True),
]


@pytest.mark.parametrize("name, kwargs, key, torch_refuses", BAD_HYPER,
                         ids=[f"{n}-{k}" for n, k, _, _ in BAD_HYPER])
def test_invalid_hyperparameter_is_refused_naming_it(name, kwargs, key, torch_refuses):
    if torch_refuses:
        with pytest.raises(ValueError):
            getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    else:
        getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    pattern = rf"{name}: invalid {re.escape(key)}="
    with pytest.raises(ValueError, match=pattern):
        getattr(MO, name)([Parameter(np.zeros(1))], **kwargs)
    with pytest.raises(ValueError, match=pattern):  # per group too
        getattr(MO, name)([{"params": [Parameter(np.zeros(1))], **kwargs}])


@pytest.mark.parametrize("name, kwargs", [
    ("RMSprop", {"lr": 0.0, "alpha": 0.0, "eps": 0.0, "momentum": 0.0, "weight_decay": 0.0}),
    ("RMSprop", {"alpha": 1.0}),
    ("Adagrad", {"lr": 0.0, "lr_decay": 0.0, "eps": 0.0, "initial_accumulator_value": 0.0}),
])
def test_boundary_hyperparameters_are_accepted_like_torch(name, kwargs):
    getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    getattr(MO, name)([Parameter(np.zeros(1))], **kwargs)


@pytest.mark.parametrize("name, state, pattern", [
    ("RMSprop", {"step": 1}, "'square_avg' must be an array of shape"),
    ("RMSprop", {"step": -1, "square_avg": np.zeros(2)}, "'step' must be an int"),
    ("RMSprop", {"step": 1, "square_avg": np.zeros(2), "grad_avg": np.zeros(3)},
     r"'grad_avg' must be an array of shape \(2,\), got \(3,\)"),
    ("Adagrad", {"step": 1, "sum": np.zeros(3)}, r"'sum' must be an array of shape \(2,\)"),
    ("Adagrad", {"step": "1", "sum": np.zeros(2)}, "'step' must be an int"),
])
def test_bad_optimizer_state_is_refused_and_changes_nothing(name, state, pattern):
    opt = getattr(MO, name)([Parameter(np.zeros(2))], lr=0.1)
    before = opt.state_dict()
    sd = opt.state_dict()
    sd["state"] = {0: state}
    sd["param_groups"][0]["lr"] = 0.5
    with pytest.raises(ValueError, match=pattern):
        opt.load_state_dict(sd)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    assert after["state"].keys() == before["state"].keys()


# ---- negative controls: the harness must reject a wrong optimizer ------------------------------

class RMSpropEpsInsideSqrt(MO.RMSprop):
    """Deliberately wrong: sqrt(v + eps) (TensorFlow's order) instead of sqrt(v) + eps."""

    def _flat_ready(self, *args):
        return False

    def _param_step(self, group, p, g):
        st = self.state.setdefault(id(p), {"step": 0, "square_avg": np.zeros_like(p.data)})
        st["step"] += 1
        v = st["square_avg"]
        v *= group["alpha"]
        v += (1 - group["alpha"]) * g * g
        p.data -= group["lr"] * g / np.sqrt(v + group["eps"])


class AdagradWithoutLrDecay(MO.Adagrad):
    """Deliberately wrong: lr_decay ignored."""

    def _param_step(self, group, p, g):
        super()._param_step({**group, "lr_decay": 0.0}, p, g)

    def _flat_ready(self, *args):
        return False


@pytest.mark.parametrize("case, wrong", [("rmsprop_wd_alpha_eps", RMSpropEpsInsideSqrt),
                                         ("adagrad_lr_decay", AdagradWithoutLrDecay)])
def test_parity_harness_catches_a_wrong_optimizer(case, wrong):
    errs = lockstep(Run(case, "ours", cls=wrong), Run(case, "theirs"), data()[:5])
    assert max(errs) > 1e3 * PARAM_ATOL
