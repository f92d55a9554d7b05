"""The torch.nn idioms a ported training script uses, each against torch: Sequential,
ModuleDict, children/modules, register_buffer and state_dict, apply, Dropout, nn.init and
nn.utils.clip_grad_norm_. Where both libraries can build the same thing, one builder drives both
(`nn`, `lib` are torch.nn, torch or minitorch.nn, minitorch) and names, orders and numbers are
compared; random draws (different generators) are compared by their statistics."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn as mnn
from minitorch.nn import functional as MF
from minitorch.nn import init as minit

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch
torch.set_num_threads(1)  # small tensors; the 2 cores are shared

LIBS = [pytest.param((torch.nn, torch), id="torch"), pytest.param((mnn, mt), id="minitorch")]


def both(build):
    """build(nn, lib) for torch and for minitorch."""
    return build(torch.nn, torch), build(mnn, mt)


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg and msg, msg
    return msg


def names(pairs) -> list[str]:
    return [n for n, _ in pairs]


# ---- containers: Sequential, ModuleDict, ModuleList, children, modules ----------------------

def _mlp(nn, lib):
    return nn.Sequential(nn.Linear(3, 5), nn.Dropout(0.2), nn.Linear(5, 2))


def _gptish(nn, lib):
    """nanoGPT's layout: a ModuleDict of embeddings, a ModuleList of blocks (each a Sequential)
    and a norm, beside a head."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(7, 4),
                drop=nn.Dropout(0.1),
                h=nn.ModuleList([nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 4))
                                 for _ in range(2)]),
                ln_f=nn.LayerNorm(4),
            ))
            self.lm_head = nn.Linear(4, 7, bias=False)

    return Net()


def _shared(nn, lib):
    """One Linear reachable under two names, inside and outside a container."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
            self.again = self.body[1]
            self.head = nn.Linear(2, 1)

    return Net()


@pytest.mark.parametrize("build", [_mlp, _gptish, _shared])
def test_containers_names_match_torch(build):
    theirs, ours = both(build)
    assert names(ours.named_parameters()) == names(theirs.named_parameters())
    assert names(ours.named_modules()) == names(theirs.named_modules())
    assert names(ours.named_children()) == names(theirs.named_children())
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert [type(m).__name__ for m in ours.children()] == [
        type(m).__name__ for m in theirs.children()]
    shapes = [tuple(p.shape) for p in ours.parameters()]
    assert shapes == [tuple(p.shape) for p in theirs.parameters()]


def test_sequential_indexing_len_iteration_match_torch():
    theirs, ours = both(_mlp)
    assert len(ours) == len(theirs) == 3
    assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]
    assert ours[-1] is list(ours)[2] and ours[0] is list(ours)[0]
    for sl in (slice(1, None), slice(None, None, 2), slice(-2, None)):
        assert names(ours[sl].named_parameters()) == names(theirs[sl].named_parameters())
    assert names(ours.append(mnn.Linear(2, 2)).named_parameters()) == names(
        theirs.append(torch.nn.Linear(2, 2)).named_parameters())
    with pytest.raises(IndexError) as e:
        ours[4]
    assert "index 4 is out of range" in one_line(e)
    with pytest.raises(TypeError) as e:
        ours["0"]
    assert "indices must be integers or slices" in one_line(e)


def test_sequential_ordered_dict_names_and_forward_match_torch():
    def build(nn, lib):
        return nn.Sequential(OrderedDict(fc1=nn.Linear(3, 4), drop=nn.Dropout(0.5),
                                         fc2=nn.Linear(4, 2)))

    theirs, ours = both(build)
    assert names(ours.named_parameters()) == names(theirs.named_parameters())
    assert ours.fc1 is ours[0]
    ours.eval(), theirs.eval()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(mt.tensor(x)).detach().numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def test_moduledict_is_a_mapping_with_attribute_access_like_torch():
    theirs, ours = both(_gptish)
    t, o = theirs.transformer, ours.transformer
    assert list(o) == list(t) == list(o.keys()) == ["wte", "drop", "h", "ln_f"]
    assert len(o) == len(t) and ("h" in o) == ("h" in t) and ("x" in o) == ("x" in t)
    assert o.wte is o["wte"] and o.h[1] is list(o["h"])[1]
    assert [k for k, _ in o.items()] == [k for k, _ in t.items()]
    o["extra"], t["extra"] = mnn.Linear(4, 1), torch.nn.Linear(4, 1)
    del o["drop"], t["drop"]
    assert names(ours.named_parameters()) == names(theirs.named_parameters())
    pairs = mnn.ModuleDict([("a", mnn.Linear(1, 1)), ("b", mnn.Linear(1, 1))])
    assert names(pairs.named_parameters()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


@pytest.mark.parametrize("bad, error, fragment", [
    ({1: "linear"}, TypeError, "module name should be a string"),
    ({"a.b": "linear"}, KeyError, "contain no '.'"),
    ({"keys": "linear"}, KeyError, "attribute 'keys' already exists"),
    ({"a": 3}, TypeError, "'a' is a int, not a Module"),
    ([3], TypeError, "element 0 should be a (key, module) pair"),
])
def test_moduledict_refuses_bad_entries_in_one_line(bad, error, fragment):
    if isinstance(bad, dict):
        bad = {k: mnn.Linear(1, 1) if v == "linear" else v for k, v in bad.items()}
    with pytest.raises(error) as e:
        mnn.ModuleDict(bad)
    assert fragment in one_line(e)


def test_sequential_refuses_a_non_module_in_one_line():
    with pytest.raises(TypeError) as e:
        mnn.Sequential(mnn.Linear(1, 1), {"a": mnn.Linear(1, 1)})
    assert "'1' is a dict, not a Module" in one_line(e)


def test_module_list_appends_and_slices_like_torch():
    def build(nn, lib):
        layers = nn.ModuleList()
        for _ in range(3):
            layers.append(nn.Linear(2, 2))
        return layers

    theirs, ours = both(build)
    assert names(ours.named_parameters()) == names(theirs.named_parameters())
    assert names(ours[1:].named_parameters()) == names(theirs[1:].named_parameters())
    assert ours[-1] is list(ours)[-1] and len(ours) == 3


# ---- apply ---------------------------------------------------------------------------------

@pytest.mark.parametrize("build", [_gptish, _shared])
def test_apply_visits_in_torch_order_and_returns_self(build):
    def order(model):
        first = {}
        for name, m in model.named_modules():
            first.setdefault(id(m), name or "<root>")
        seen = []
        assert model.apply(lambda m: seen.append(first[id(m)])) is model
        return seen

    theirs, ours = both(build)
    assert order(ours) == order(theirs)
    assert order(ours)[-1] == "<root>"


def test_apply_init_weights_idiom_reaches_every_linear():
    """nanoGPT's `self.apply(self._init_weights)` with nn.init: every Linear and Embedding of
    the ModuleDict, ModuleList and Sequential is reached, the LayerNorms are left alone."""
    model = _gptish(mnn, mt)

    def init_weights(m):
        if isinstance(m, mnn.Linear):
            minit.normal_(m.weight, mean=0.0, std=0.5)
            if m.bias is not None:
                minit.zeros_(m.bias)
        elif isinstance(m, mnn.Embedding):
            minit.constant_(m.weight, 0.25)

    model.apply(init_weights)
    kinds = {mnn.Linear: 0, mnn.Embedding: 0, mnn.LayerNorm: 0}
    for m in model.modules():
        if type(m) in kinds:
            kinds[type(m)] += 1
        w = getattr(m, "weight", None)
        if isinstance(m, mnn.Linear):
            assert 0.3 < w.detach().numpy().std() < 0.7  # the default init is N(0, 0.02)
            assert m.bias is None or not m.bias.detach().numpy().any()
        elif isinstance(m, mnn.Embedding):
            assert (w.detach().numpy() == 0.25).all()
        elif isinstance(m, mnn.LayerNorm):
            assert (w.detach().numpy() == 1).all()
    assert kinds == {mnn.Linear: 3, mnn.Embedding: 1, mnn.LayerNorm: 3}


# ---- buffers, state_dict -------------------------------------------------------------------

def _buffered(nn, lib):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", lib.ones(3, 3))
            self.fc = nn.Linear(3, 3)
            self.register_buffer("cache", lib.zeros(3), persistent=False)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(5, 3)
            self.register_buffer("count", lib.zeros(1, dtype=lib.int64))
            self.register_buffer("later", None)
            self.blocks = nn.Sequential(Block(), Block())

    return Net()


def test_buffers_and_state_dict_keys_match_torch():
    theirs, ours = both(_buffered)
    assert names(ours.named_buffers()) == names(theirs.named_buffers())
    assert list(ours.state_dict()) == list(theirs.state_dict())  # keys and their order
    assert names(ours.named_parameters()) == names(theirs.named_parameters())
    assert not {id(b) for b in ours.buffers()} & {id(p) for p in ours.parameters()}
    assert names(ours.named_buffers(recurse=False)) == names(theirs.named_buffers(recurse=False))
    assert names(ours.named_buffers(prefix="m")) == names(theirs.named_buffers(prefix="m"))
    ours.later = mt.ones(2)  # assigning to a registered name fills the buffer, as torch
    theirs.later = torch.ones(2)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_load_state_dict_restores_persistent_buffers_in_place():
    ours, other = _buffered(mnn, mt), _buffered(mnn, mt)
    mask = ours.blocks[0].mask
    state = other.state_dict()
    state["blocks.0.mask"] = np.full((3, 3), 7.0, np.float32)
    state["count"] = np.array([3])
    ours.load_state_dict(state)
    assert ours.blocks[0].mask is mask and (mask.detach().numpy() == 7.0).all()
    assert ours.count.detach().numpy().tolist() == [3] and ours.count.dtype == np.int64
    with pytest.raises(KeyError) as e:
        ours.load_state_dict({k: v for k, v in state.items() if k != "count"})
    assert "missing keys ['count']" in one_line(e)
    with pytest.raises(KeyError) as e:
        ours.load_state_dict({**state, "blocks.0.cache": np.zeros(3, np.float32)})
    assert "unexpected keys ['blocks.0.cache']" in one_line(e)  # non-persistent: not saved


def test_module_to_casts_floating_buffers_only_like_torch():
    theirs, ours = both(_buffered)
    theirs.to(torch.float64), ours.to(mt.float64)
    dtypes_t = {n: str(b.dtype).removeprefix("torch.") for n, b in theirs.named_buffers()}
    assert {n: str(b.dtype) for n, b in ours.named_buffers()} == dtypes_t


@pytest.mark.parametrize("name, tensor, error, fragment", [
    ("a.b", "t", KeyError, "contain no '.'"),
    ("", "t", KeyError, "non-empty"),
    ("fc", "t", KeyError, "attribute 'fc' already exists"),
    ("training", "t", KeyError, "attribute 'training' already exists"),
    ("z", 3, TypeError, "cannot assign a int to buffer 'z'"),
    ("z", np.zeros(2), TypeError, "cannot assign a ndarray to buffer 'z'"),
    (3, "t", TypeError, "buffer name should be a string"),
])
def test_register_buffer_refuses_what_torch_refuses_in_one_line(name, tensor, error, fragment):
    def attempt(nn, lib):
        m = nn.Module()
        m.fc = nn.Linear(1, 1)
        m.register_buffer(name, lib.zeros(1) if isinstance(tensor, str) else tensor)

    with pytest.raises(error):
        attempt(torch.nn, torch)
    with pytest.raises(error) as e:
        attempt(mnn, mt)
    assert fragment in one_line(e)


# ---- Dropout ------------------------------------------------------------------------------

@pytest.mark.parametrize("nn, lib", [p.values[0] for p in LIBS], ids=["torch", "minitorch"])
def test_dropout_is_identity_in_eval_mode_and_at_p0(nn, lib):
    x = lib.ones(4, 5, requires_grad=True) * 2.0
    assert nn.Dropout(0.5).eval()(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert nn.functional.dropout(x, 0.9, training=False) is x
    assert nn.functional.dropout(x, 0.0) is x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_zeroes_a_fraction_p_and_scales_survivors_like_torch(p, dtype, record):
    n = 200_000
    x = np.random.default_rng(1).uniform(1.0, 2.0, n).astype(dtype)  # never 0 itself
    y = mnn.Dropout(p)(mt.tensor(x)).detach().numpy()
    assert y.dtype == x.dtype
    dropped = y == 0
    sigma = math.sqrt(p * (1 - p) / n)
    record("nn_dropout_fraction", "dropout", f"p={p},{dtype}", abs(dropped.mean() - p),
           tol=5 * sigma, passed=abs(dropped.mean() - p) < 5 * sigma)
    assert abs(dropped.mean() - p) < 5 * sigma
    ty = torch.nn.functional.dropout(torch.ones(1000, dtype=getattr(torch, dtype)), p)
    scale = ty[ty != 0].unique().item()  # torch's survivor scale, 1/(1-p) in the dtype
    assert scale == np.array(1 / (1 - p), dtype)
    np.testing.assert_array_equal(y[~dropped], x[~dropped] * np.array(scale, dtype))


def test_dropout_gradient_is_the_mask_times_the_scale():
    p = 0.3
    x = mt.tensor(np.random.default_rng(2).uniform(1, 2, (50, 40)), requires_grad=True)
    g = np.random.default_rng(3).standard_normal((50, 40))
    y = MF.dropout(x, p)
    y.backward(mt.tensor(g))
    kept = y.detach().numpy() != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_array_equal(x.grad.numpy(), np.where(kept, g * (1 / (1 - p)), 0.0))


def test_dropout_p1_gives_zeros_and_zero_gradient_like_torch():
    x = mt.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    y = mnn.Dropout(1.0)(x)
    y.sum().backward()
    tx = torch.arange(1.0, 7.0).reshape(2, 3).requires_grad_()
    ty = torch.nn.Dropout(1.0)(tx)
    ty.sum().backward()
    assert y.detach().numpy().tolist() == ty.tolist() == [[0.0] * 3] * 2
    assert x.grad.numpy().tolist() == tx.grad.tolist()


@pytest.mark.parametrize("p", [-0.1, 1.5, math.nan, "0.5", None])
def test_dropout_refuses_p_outside_unit_interval_in_one_line(p):
    for make in (lambda: mnn.Dropout(p), lambda: MF.dropout(mt.ones(2), p)):
        with pytest.raises(ValueError) as e:
            make()
        assert one_line(e) == f"dropout probability has to be between 0 and 1, but got {p!r}"
    if isinstance(p, float) and not math.isnan(p):  # torch's own message, for numbers
        with pytest.raises(ValueError, match="has to be between 0 and 1, but got"):
            torch.nn.Dropout(p)


def test_dropout_masks_come_from_minitorchs_generator():
    x = mt.ones(1000)
    mt.manual_seed(5)
    a = mnn.Dropout(0.5)(x).detach().numpy()
    mt.manual_seed(5)
    b = MF.dropout(x, 0.5).detach().numpy()
    c = MF.dropout(x, 0.5).detach().numpy()
    assert (a == b).all() and not (a == c).all()
    state = mt.default_generator.get_state()
    d = MF.dropout(x, 0.5, generator=mt.Generator(5)).detach().numpy()
    assert (d == a).all() and mt.default_generator.get_state() == state


def test_dropout_inplace_writes_into_its_input_like_torch():
    def run(nn, lib):
        x = lib.ones(2, 3, requires_grad=True)
        h = x * 1.0
        y = nn.Dropout(1.0, inplace=True)(h)
        y.sum().backward()
        return y is h, h.tolist(), x.grad.tolist()

    assert run(mnn, mt) == run(torch.nn, torch)


def test_dropout_follows_train_and_eval_inside_a_model():
    model = _mlp(mnn, mt)
    x = mt.ones(64, 3)
    model.eval()
    assert (model(x).detach().numpy() == model(x).detach().numpy()).all()
    model.train()
    assert not (model(x).detach().numpy() == model(x).detach().numpy()).all()


# ---- nn.init -------------------------------------------------------------------------------

def test_init_functions_give_the_requested_statistics(record):
    n = 400 * 1000
    w = mnn.Parameter(np.zeros((400, 1000), np.float32))
    assert minit.normal_(w, mean=1.5, std=0.02) is w
    v = w.detach().numpy().astype(np.float64)
    record("nn_init_mean", "normal_", "(400,1000)", abs(v.mean() - 1.5), tol=5 * 0.02 / n ** .5,
           passed=abs(v.mean() - 1.5) < 5 * 0.02 / n ** .5)
    assert abs(v.mean() - 1.5) < 5 * 0.02 / math.sqrt(n)
    assert abs(v.std() / 0.02 - 1) < 0.01 and w.dtype == np.float32
    assert minit.uniform_(w, -3.0, 5.0) is w
    v = w.detach().numpy().astype(np.float64)
    assert v.min() >= -3.0 and v.max() <= 5.0
    assert abs(v.mean() - 1.0) < 5 * 8 / math.sqrt(12 * n)
    assert abs(v.var() / (64 / 12) - 1) < 0.01
    assert minit.constant_(w, 0.25) is w and (w.detach().numpy() == 0.25).all()
    assert minit.zeros_(w) is w and not w.detach().numpy().any()
    assert minit.ones_(w) is w and (w.detach().numpy() == 1).all()
    assert w.requires_grad and w.grad is None and w.is_leaf


def test_init_writes_in_place_and_keeps_flat_parameter_views():
    model = _gptish(mnn, mt)
    model.flatten_parameters()
    params = model.parameters()
    views = [p.data for p in params]
    group = params[0]._flat.group
    for p in params:
        minit.normal_(p, std=0.5)
    minit.zeros_(model.lm_head.weight)
    minit.uniform_(model.transformer.wte.weight, 1.0, 2.0)
    assert all(p.data is v for p, v in zip(params, views))
    assert mnn.flat.flat_run(params, grads=False) is not None
    total = sum(p.numel() for p in params)
    np.testing.assert_array_equal(group.data[:total],
                                  np.concatenate([p.detach().numpy().ravel() for p in params]))
    assert group.data.std() > 0.1  # the buffer holds the draws, not the old 0.02-scale init


def test_init_draws_from_minitorchs_generator():
    w = mnn.Parameter(np.zeros(100))
    mt.manual_seed(7)
    a = minit.normal_(w).detach().numpy().copy()
    mt.manual_seed(7)
    assert (minit.normal_(w).detach().numpy() == a).all()
    state = mt.default_generator.get_state()
    b = minit.uniform_(w, generator=mt.Generator(7)).detach().numpy()
    assert mt.default_generator.get_state() == state and (b >= 0).all() and (b < 1).all()


def test_init_refuses_bad_arguments_in_one_line():
    w = mt.zeros(3)
    with pytest.raises(RuntimeError):
        torch.nn.init.normal_(torch.zeros(3), 0.0, -1.0)
    with pytest.raises(RuntimeError) as e:
        minit.normal_(w, 0.0, -1.0)
    assert "std must be >= 0, got -1.0" in one_line(e)
    with pytest.raises(RuntimeError):
        torch.nn.init.uniform_(torch.zeros(3), 1.0, 0.0)
    with pytest.raises(RuntimeError) as e:
        minit.uniform_(w, 1.0, 0.0)
    assert "expected a <= b, got a=1.0 > b=0.0" in one_line(e)
    with pytest.raises(TypeError) as e:
        minit.normal_(mt.zeros(3, dtype=mt.int64))
    assert "expected a floating tensor, got dtype int64" in one_line(e)
    with pytest.raises(TypeError) as e:
        minit.zeros_(np.zeros(3))
    assert one_line(e) == "zeros_: expected a Tensor, got ndarray"
    with pytest.raises(ValueError) as e:
        minit.normal_(w, std=math.inf)
    assert "std must be a finite number, got inf" in one_line(e)


# ---- nn.utils.clip_grad_norm_ ----------------------------------------------------------------

def _grads_pair(scale: float, flat: bool):
    """Two parameters with gradients in both libraries (float64), the minitorch ones flat or
    not."""
    rng = np.random.default_rng(4)
    shapes = [(3, 4), (5,)]
    grads = [rng.standard_normal(s) * scale for s in shapes]
    model = mnn.Module()
    model.a, model.b = (mnn.Parameter(np.zeros(s)) for s in shapes)
    if flat:
        model.flatten_parameters()
    (model.a * mt.tensor(grads[0])).sum().add((model.b * mt.tensor(grads[1])).sum()).backward()
    theirs = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in shapes]
    for t, g in zip(theirs, grads):
        t.grad = torch.from_numpy(g.copy())
    return model.parameters(), theirs


@pytest.mark.parametrize("flat", [False, True], ids=["per_param", "flat"])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("scale", [0.01, 10.0], ids=["below", "above"])
def test_clip_grad_norm_matches_torch(scale, norm_type, flat, record):
    ours, theirs = _grads_pair(scale, flat)
    norm_o = mnn.utils.clip_grad_norm_(ours, 1.0, norm_type)
    norm_t = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type).item()
    rel = abs(norm_o - norm_t) / norm_t
    record("nn_clip_norm", "clip_grad_norm_", f"p={norm_type},{scale}", abs(norm_o - norm_t),
           rel, tol=1e-12, passed=rel < 1e-12)
    assert rel < 1e-12
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=0)
    clipped = (scale == 10.0)
    assert clipped == (norm_t > 1.0)


def test_clip_grad_norm_is_one_function_for_nn_and_optim():
    assert mt.optim.clip_grad_norm_ is mnn.utils.clip_grad_norm_


def test_clip_grad_norm_error_if_nonfinite_and_bad_arguments_in_one_line():
    p = mnn.Parameter(np.zeros(2))
    p.grad = mt.tensor([math.inf, 1.0])
    tp = torch.zeros(2, requires_grad=True)
    tp.grad = torch.tensor([math.inf, 1.0])
    with pytest.raises(RuntimeError):
        torch.nn.utils.clip_grad_norm_([tp], 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as e:
        mnn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert "total norm of order 2.0 of the gradients is inf" in one_line(e)
    for kwargs, fragment in [({"max_norm": -1.0}, "invalid max_norm=-1.0"),
                             ({"max_norm": 1.0, "norm_type": 0}, "invalid norm_type=0"),
                             ({"max_norm": 1.0, "norm_type": math.nan}, "invalid norm_type=nan")]:
        with pytest.raises(ValueError) as e:
            mnn.utils.clip_grad_norm_([p], **kwargs)
        assert fragment in one_line(e)


def test_difference_parameters_and_buffers_are_lists():
    """README, "Where minitorch differs": parameters() and buffers() return lists (torch returns
    generators); iterating them gives what torch's give."""
    model = mt.nn.Sequential(mt.nn.Linear(2, 3), mt.nn.Linear(3, 1))
    model.register_buffer("mask", mt.ones(2))
    assert isinstance(model.parameters(), list) and isinstance(model.buffers(), list)
    assert [p.shape for p in model.parameters()] == [(3, 2), (3,), (1, 3), (1,)]
