"""torch's optimizer signatures and flags: positional order and defaults equal to torch 2.13's;
maximize, amsgrad, decoupled_weight_decay, foreach, fused (and fused+capturable) within 1e-10 of
torch.optim at each of 20 float64 steps, per-parameter and flat; what torch refuses on a CPU
(fused with foreach/differentiable, capturable without fused, differentiable on leaves) refused
the same way, in one line; 0-d parameters on the per-parameter path.
"""

from __future__ import annotations

import inspect
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
NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


# ---- signatures ---------------------------------------------------------------------------------

def _signature(cls) -> list[tuple]:
    """(name, kind, default) of every constructor parameter after self and params."""
    params = list(inspect.signature(cls.__init__).parameters.values())[2:]
    return [(p.name, p.kind, p.default) for p in params]


@pytest.mark.parametrize("name", NAMES)
def test_signature_order_kinds_and_defaults_match_torch(name):
    ours, theirs = _signature(getattr(MO, name)), _signature(getattr(TO, name))
    assert [(n, k) for n, k, _ in ours] == [(n, k) for n, k, _ in theirs]
    for (n, _, d_o), (_, _, d_t) in zip(ours, theirs, strict=True):
        assert d_o == d_t and type(d_o) is type(d_t), (n, d_o, d_t)


@pytest.mark.parametrize("name", NAMES)
def test_group_options_are_torchs(name):
    """The same keys and default values in every param group (what state_dict saves)."""
    o = getattr(MO, name)([Parameter(np.zeros(1))]).param_groups[0]
    t = getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))]).param_groups[0]
    assert {k: v for k, v in o.items() if k != "params"} == {
        k: v for k, v in t.items() if k != "params"}


def test_signature_check_catches_a_reordered_signature():
    """Negative control: a subclass with eps and weight_decay swapped fails the comparison."""

    class Swapped(MO.Adam):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), weight_decay=0, eps=1e-8,
                     amsgrad=False, **kw):
            super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kw)

    assert _signature(Swapped)[:4] != _signature(TO.Adam)[:4]


# ---- the parity harness -------------------------------------------------------------------------

def init_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"w": rng.standard_normal((6, 4)), "b": rng.standard_normal(4),
            "v": rng.standard_normal(5), "s": np.array(0.7)}


def batches():
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((8, 6)), rng.standard_normal((8, 4))) for _ in range(STEPS)]


D = np.linspace(0.1, 10.0, 5)


def objective(lib, p, x, y):
    """A loss to minimize (tanh layer, curvatures 0.1..10, a 0-d weight); its negative is
    maximized by the maximize cases."""
    T = mt.Tensor if lib is MO else torch.tensor
    tanh = (lambda a: a.tanh()) if lib is MO else torch.tanh
    r = tanh(T(x) @ p["w"] + p["b"] * p["s"]) - T(y)  # (8, 4)
    return (r * r).mean() + 0.5 * (T(D) * p["v"] * p["v"]).sum() + p["s"] * p["s"]


def run(lib, name, kwargs, flat=False, steps=STEPS, cls=None):
    """Parameters after each step (dict of arrays per step) and the objectives."""
    if lib is MO:
        params = {n: Parameter(a.copy()) for n, a in init_arrays().items()}
        if flat:
            flatten(params.values())
    else:
        params = {n: torch.nn.Parameter(torch.from_numpy(a.copy()))
                  for n, a in init_arrays().items()}
    opt = (cls or getattr(lib, name))(list(params.values()), **kwargs)
    sign = -1.0 if kwargs.get("maximize") else 1.0
    history, values = [], []
    for x, y in batches()[:steps]:
        opt.zero_grad()
        value = sign * objective(lib, params, x, y)
        value.backward()
        opt.step()
        values.append(value.item())
        history.append({n: (p.data if lib is MO else p.detach().numpy()).copy()
                        for n, p in params.items()})
    return history, values, opt


def max_errors(ours, theirs) -> list[float]:
    return [max(float(np.max(np.abs(o[n] - t[n]))) for n in o) for o, t in zip(ours, theirs,
                                                                                strict=True)]


LR = {"SGD": 0.05, "Adam": 0.02, "AdamW": 0.02, "RMSprop": 0.005, "Adagrad": 0.1}
CASES = {  # id -> (optimizer, kwargs; torch's for both, lr from LR)
    "sgd_maximize": ("SGD", {"maximize": True}),
    "sgd_maximize_momentum_wd": ("SGD", {"maximize": True, "momentum": 0.9,
                                         "weight_decay": 0.1}),
    "sgd_maximize_nesterov": ("SGD", {"maximize": True, "momentum": 0.9, "nesterov": True}),
    "adam_maximize": ("Adam", {"maximize": True}),
    "adam_maximize_l2": ("Adam", {"maximize": True, "weight_decay": 0.1}),
    "adamw_maximize": ("AdamW", {"maximize": True, "weight_decay": 0.1}),
    "rmsprop_maximize_centered_momentum": ("RMSprop", {"maximize": True, "centered": True,
                                                       "momentum": 0.5, "weight_decay": 0.1}),
    "rmsprop_maximize": ("RMSprop", {"maximize": True}),
    "adagrad_maximize_wd": ("Adagrad", {"maximize": True, "weight_decay": 0.1,
                                        "lr_decay": 0.05}),
    "adam_amsgrad": ("Adam", {"amsgrad": True}),
    "adam_amsgrad_l2_maximize": ("Adam", {"amsgrad": True, "weight_decay": 0.1,
                                          "maximize": True}),
    "adamw_amsgrad": ("AdamW", {"amsgrad": True, "weight_decay": 0.1, "betas": (0.8, 0.9)}),
    "adam_decoupled": ("Adam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    "sgd_foreach": ("SGD", {"foreach": True, "momentum": 0.9, "weight_decay": 0.1}),
    "adam_foreach_false": ("Adam", {"foreach": False, "weight_decay": 0.1}),
    "rmsprop_foreach": ("RMSprop", {"foreach": True, "centered": True}),
    "adagrad_foreach": ("Adagrad", {"foreach": True}),
    "sgd_fused": ("SGD", {"fused": True, "momentum": 0.9, "dampening": 0.1}),
    "adam_fused": ("Adam", {"fused": True, "weight_decay": 0.1}),
    "adam_fused_capturable_amsgrad": ("Adam", {"fused": True, "capturable": True,
                                               "amsgrad": True}),
    "adamw_fused_maximize": ("AdamW", {"fused": True, "maximize": True}),
    "adagrad_fused": ("Adagrad", {"fused": True, "weight_decay": 0.1}),
}


@pytest.mark.parametrize("layout", ["per_param", "flat"])
@pytest.mark.parametrize("case", list(CASES))
def test_flag_matches_torch_every_step(case, layout, record):
    name, kwargs = CASES[case]
    kwargs = {"lr": LR[name], **kwargs}
    ours, values, _ = run(MO, name, kwargs, flat=layout == "flat")
    theirs, values_t, _ = run(TO, name, kwargs)
    errs = max_errors(ours, theirs)
    for step, err in enumerate(errs, 1):
        record(f"optim_flag_{layout}", case, step, err, None, PARAM_ATOL, err <= PARAM_ATOL)
    moved = max(float(np.max(np.abs(ours[-1][n] - a))) for n, a in init_arrays().items())
    assert moved > 1e-2, "the parameters hardly moved: the comparison would be vacuous"
    assert max(errs) <= PARAM_ATOL, errs
    if kwargs.get("maximize"):  # the negated loss really went up
        assert values[-1] > values[0] + 0.1 and values_t[-1] > values_t[0] + 0.1


@pytest.mark.parametrize("case", ["adam_amsgrad", "adamw_amsgrad", "sgd_maximize_momentum_wd",
                                  "rmsprop_maximize_centered_momentum", "adagrad_maximize_wd"])
def test_flat_path_bit_identical_and_state_like_torch(case):
    """Flat and per-parameter give the same bits; the state has torch's keys (amsgrad's
    max_exp_avg_sq) and values."""
    name, kwargs = CASES[case]
    kwargs = {"lr": LR[name], **kwargs}
    flat, _, opt_f = run(MO, name, kwargs, flat=True)
    per, _, opt_p = run(MO, name, kwargs)
    _, _, opt_t = run(TO, name, kwargs)
    assert all(np.array_equal(flat[-1][n], per[-1][n]) for n in per[-1])
    sd_f, sd_p = opt_f.state_dict()["state"], opt_p.state_dict()["state"]
    sd_t = opt_t.state_dict()["state"]
    assert sorted(sd_f) == sorted(sd_t)
    for i, st in sd_t.items():
        assert set(sd_f[i]) == set(st), i
        for key, value in st.items():
            assert np.array_equal(sd_f[i][key], sd_p[i][key]), key
            np.testing.assert_allclose(np.asarray(sd_f[i][key], dtype=np.float64),
                                       value.numpy(), rtol=0, atol=PARAM_ATOL, err_msg=key)


def test_amsgrad_state_dict_round_trip_continues_like_torch():
    name, kwargs = CASES["adamw_amsgrad"]
    kwargs = {"lr": LR[name], **kwargs}
    half, _, opt = run(MO, name, kwargs, flat=True, steps=STEPS // 2)
    params = {n: Parameter(a.copy()) for n, a in half[-1].items()}
    resumed = MO.AdamW(list(params.values()), **kwargs)
    resumed.load_state_dict(opt.state_dict())
    for x, y in batches()[STEPS // 2:]:
        resumed.zero_grad()
        objective(MO, params, x, y).backward()
        resumed.step()
    theirs = run(TO, name, kwargs)[0][-1]
    assert max_errors([{n: p.data for n, p in params.items()}], [theirs])[0] <= PARAM_ATOL


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"momentum": 0.9, "weight_decay": 0.1}), ("SGD", {"momentum": 0.9, "nesterov": True,
                                                            "weight_decay": 0.1}),
    ("RMSprop", {"centered": True}), ("RMSprop", {"centered": True, "momentum": 0.5}),
])
def test_zero_dim_parameter_on_the_per_parameter_path_matches_torch(name, kwargs):
    """A 0-d parameter outside a flat buffer (the rule writes into 0-d arrays: an expression
    on them gives NumPy scalars, which once left SGD's momentum buffer stale and made centered
    RMSprop raise)."""
    kwargs = {"lr": LR[name], **kwargs}
    errs = max_errors(run(MO, name, kwargs)[0], run(TO, name, kwargs)[0])
    assert max(errs) <= PARAM_ATOL, errs


# ---- negative controls: the harness rejects an optimizer that ignores the flag ----------------

class AdamIgnoringMaximize(MO.Adam):
    def _hyper(self, group, states):
        return {**super()._hyper(group, states), "maximize": False}


class AdamIgnoringAmsgrad(MO.Adam):
    def _keys(self, group):
        return ("exp_avg", "exp_avg_sq")


class SGDIgnoringMaximize(MO.SGD):
    def _hyper(self, group, states):
        return {**super()._hyper(group, states), "maximize": False}


@pytest.mark.parametrize("case, wrong", [("adam_maximize", AdamIgnoringMaximize),
                                         ("adam_amsgrad", AdamIgnoringAmsgrad),
                                         ("sgd_maximize_momentum_wd", SGDIgnoringMaximize)])
def test_flag_parity_catches_an_ignored_flag(case, wrong):
    name, kwargs = CASES[case]
    kwargs = {"lr": LR[name], **kwargs}
    ours = run(MO, name, kwargs, steps=10, cls=wrong)[0]
    theirs = run(TO, name, kwargs, steps=10)[0]
    assert max(max_errors(ours, theirs)) > 1e3 * PARAM_ATOL


# ---- what torch refuses ----------------------------------------------------------------------

def _both(name, **kwargs):
    """(minitorch optimizer, torch optimizer) over one 3-element parameter each, with a grad."""
    p, tp = Parameter(np.ones(3)), torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    ours = getattr(MO, name)([p], **kwargs)
    theirs = getattr(TO, name)([tp], **kwargs)
    (p * p).sum().backward()
    (tp * tp).sum().backward()
    return ours, theirs


CONSTRUCTION_REFUSED = [(n, f) for n in ("SGD", "Adam", "AdamW", "Adagrad") for f in (
    {"fused": True, "foreach": True}, {"fused": True, "differentiable": True})]


@pytest.mark.parametrize("name, flags", CONSTRUCTION_REFUSED,
                         ids=[f"{n}-{'+'.join(f)}" for n, f in CONSTRUCTION_REFUSED])
def test_fused_conflicts_refused_at_construction_like_torch(name, flags):
    with pytest.raises(RuntimeError) as theirs:
        getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))], **flags)
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))) as ours:
        getattr(MO, name)([Parameter(np.zeros(1))], **flags)
    assert str(ours.value).startswith(f"{name}: ") and "\n" not in str(ours.value)


STEP_REFUSED = [("Adam", {"capturable": True}, AssertionError),
                ("AdamW", {"capturable": True}, AssertionError),
                ("RMSprop", {"capturable": True}, AssertionError),
                ("RMSprop", {"capturable": True, "foreach": True}, AssertionError)] + [
    (n, {"differentiable": True}, RuntimeError) for n in NAMES]


@pytest.mark.parametrize("name, flags, error", STEP_REFUSED,
                         ids=[f"{n}-{'+'.join(f)}" for n, f, _ in STEP_REFUSED])
def test_cpu_refusals_at_step_like_torch(name, flags, error):
    """torch takes these at construction and refuses them at the first step on a CPU; so does
    minitorch, before changing any parameter."""
    ours, theirs = _both(name, lr=0.1, **flags)
    with pytest.raises(error):
        theirs.step()
    before = ours.param_groups[0]["params"][0].data.copy()
    with pytest.raises(error, match=re.escape(next(iter(flags)))) as e:
        ours.step()
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{name}: ")
    assert np.array_equal(ours.param_groups[0]["params"][0].data, before)


def test_differentiable_without_requires_grad_steps_like_torch():
    """differentiable=True refuses only a parameter that requires grad (torch's in-place rule)."""
    p = Parameter(np.ones(3))
    p.requires_grad = False
    p.grad = mt.Tensor(np.full(3, 0.5))
    tp = torch.ones(3, dtype=torch.float64)
    tp.grad = torch.full((3,), 0.5, dtype=torch.float64)
    MO.SGD([p], lr=0.1, differentiable=True).step()
    TO.SGD([tp], lr=0.1, differentiable=True).step()
    np.testing.assert_allclose(p.data, tp.numpy(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("name, kwargs", [("RMSprop", {"fused": True}),
                                          ("SGD", {"capturable": True}),
                                          ("Adagrad", {"amsgrad": True}),
                                          ("AdamW", {"decoupled_weight_decay": False})])
def test_flag_torch_lacks_is_a_type_error_like_torch(name, kwargs):
    with pytest.raises(TypeError):
        getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    with pytest.raises(TypeError, match=next(iter(kwargs))):
        getattr(MO, name)([Parameter(np.zeros(1))], **kwargs)


@pytest.mark.parametrize("name, kwargs, key", [
    ("Adam", {"maximize": "yes"}, "maximize"), ("SGD", {"foreach": 1}, "foreach"),
    ("Adagrad", {"fused": "no"}, "fused"), ("RMSprop", {"capturable": None}, "capturable"),
    ("AdamW", {"amsgrad": 1}, "amsgrad"), ("Adam", {"differentiable": 0}, "differentiable"),
])
def test_non_bool_flag_refused_naming_it(name, kwargs, key):
    """torch stores any value and branches on its truth; a typo'd flag here fails at once."""
    for group_level in (False, True):
        with pytest.raises(ValueError, match=rf"{name}: invalid {key}="):
            if group_level:
                getattr(MO, name)([{"params": [Parameter(np.zeros(1))], **kwargs}])
            else:
                getattr(MO, name)([Parameter(np.zeros(1))], **kwargs)


def test_positional_arguments_bind_as_torchs():
    """Adam(params, lr, betas, eps, weight_decay, amsgrad) and RMSprop's long positional list."""
    cases = [("Adam", (0.01, (0.8, 0.9), 1e-6, 0.1, True)),
             ("RMSprop", (0.01, 0.9, 1e-6, 0.1, 0.5, True, False, None, True)),
             ("Adagrad", (0.05, 0.1, 0.01, 0.2, 1e-8, False)),
             ("SGD", (0.1, 0.9, 0.0, 0.01, True))]
    for name, args in cases:
        o = getattr(MO, name)([Parameter(np.zeros(1))], *args).param_groups[0]
        t = getattr(TO, name)([torch.nn.Parameter(torch.zeros(1))], *args).param_groups[0]
        assert {k: v for k, v in o.items() if k != "params"} == {
            k: v for k, v in t.items() if k != "params"}, name
