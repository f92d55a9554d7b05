"""Flat parameter storage (nn/flat.py): GPT's parameters are views into one buffer per dtype, in
named_parameters order, and the optimizers' whole-buffer updates give the same bits as the
per-parameter path (the twin model here holds one array per parameter), with torch's zero_grad
semantics, a fallback for a rebound `p.data`, and the in-place version check intact.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

import minitorch as mt
import minitorch.optim as MO
from minitorch.models import GPT, PRESETS
from minitorch.nn.flat import flat_run

from . import torch_reference as ref

CFG = PRESETS["gpt2-mini"].replace(block_size=16)  # every option on: qkv bias, biases, gelu
DTYPES = [np.float64, np.float32]
STEPS = 20
CASES = {  # name -> (optimizer, kwargs)
    "adam": (MO.Adam, dict(lr=1e-2)),
    "adam_l2": (MO.Adam, dict(lr=1e-2, weight_decay=0.1)),
    "adamw": (MO.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    "sgd": (MO.SGD, dict(lr=0.1)),
    "sgd_momentum_dampening_wd": (MO.SGD, dict(lr=0.1, momentum=0.9, dampening=0.2,
                                               weight_decay=0.01)),
    "sgd_nesterov_wd": (MO.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
}


def per_parameter(model: GPT) -> GPT:
    """The same model with one array per parameter (the optimizers' per-parameter path)."""
    for p in model.parameters():
        p.data = p.data.copy()
    return model


def twins(dtype, cfg=CFG):
    return GPT(cfg, mt.Generator(0), dtype=dtype), per_parameter(GPT(cfg, mt.Generator(0), dtype))


def batches(n: int, cfg=CFG, B: int = 2, T: int = 16):
    rng = np.random.default_rng(1)
    return [(rng.integers(0, cfg.vocab_size, (B, T)), rng.integers(0, cfg.vocab_size, (B, T)))
            for _ in range(n)]


def groups(model: GPT, split: int | None, lr: float):
    """All parameters in one group, or two groups (lr and lr/3) split at parameter `split`."""
    params = model.parameters()
    if split is None:
        return params
    return [{"params": params[:split], "lr": lr}, {"params": params[split:], "lr": lr / 3}]


def count_flat_steps(opt) -> list[int]:
    calls = [0]
    flat_step = opt._flat_step

    def counting(*args):
        calls[0] += 1
        return flat_step(*args)

    opt._flat_step = counting
    return calls


def train(model, opt, data, clip: float | None = None) -> None:
    for x, y in data:
        opt.zero_grad()
        model(x, y)[1].backward()
        if clip is not None:
            MO.clip_grad_norm_(model.parameters(), clip)
        opt.step()


def assert_same_bits(a: GPT, b: GPT, opt_a, opt_b) -> None:
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert np.array_equal(pa.data, pb.data), name
        assert pa.data.dtype == pb.data.dtype
    sa, sb = opt_a.state_dict(), opt_b.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys()
    for i in sa["state"]:
        for key, va in sa["state"][i].items():
            vb = sb["state"][i][key]
            assert (np.array_equal(va, vb) and va.dtype == vb.dtype) if isinstance(
                va, np.ndarray) else va == vb, (i, key)


def assert_flat_layout(model: GPT) -> None:
    """Every parameter a view of its dtype's buffer, in named_parameters order, contiguous."""
    params = model.parameters()
    fg = params[0]._flat.group
    assert flat_run(params, grads=False) == (fg, 0, len(params))
    for i, p in enumerate(params):
        assert fg.is_flat(i, p) and np.shares_memory(p.data, fg.data)
        start = fg.data.ctypes.data + fg.offsets[i] * fg.dtype.itemsize
        assert p.data.ctypes.data == start and p.data.flags.c_contiguous
    assert fg.size == sum(p.data.size for p in params) and fg.dtype == params[0].dtype


# ---- layout ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_flat_gpt_parameters_are_views_in_named_order(dtype):
    model = GPT(CFG, mt.Generator(0), dtype=dtype)
    twin = ref.TorchGPT(dataclasses.asdict(CFG))
    names = [n for n, _ in model.named_parameters()]
    assert names == [n for n, _ in twin.named_parameters()]  # names unchanged, torch's order
    assert_flat_layout(model)
    values = model.state_dict()
    assert values == {} or all(v.base is None for v in values.values())  # copies, not views

    model.to(np.float64)
    assert_flat_layout(model)
    assert [n for n, _ in model.named_parameters()] == names
    assert all(np.array_equal(p.data, values[n].astype(np.float64))
               for n, p in model.named_parameters())

    arrays = {n: p.data for n, p in model.named_parameters()}
    new = {n: np.full(v.shape, i, dtype=np.float32) for i, (n, v) in enumerate(values.items())}
    model.load_state_dict(new)
    assert_flat_layout(model)
    for name, p in model.named_parameters():
        assert p.data is arrays[name]  # copied in place, as torch's param.copy_
        assert p.dtype == np.float64 and np.array_equal(p.data, new[name])
    bad = {**values, names[-1]: np.zeros(3)}  # the last shape is wrong: nothing is copied
    with pytest.raises(ValueError, match=names[-1]):
        model.load_state_dict(bad)
    assert all(np.array_equal(p.data, new[n]) for n, p in model.named_parameters())


def test_flat_parameters_stay_writable_after_their_graph_is_released():
    """A graph that saved a parameter locks it only while it lives (the buffer is no ndarray
    base the locks could hold on to), so a user's in-place write works again afterwards."""
    model = GPT(CFG, mt.Generator(0), dtype=np.float64)
    x, y = batches(1)[0]
    loss = model(x, y)[1]
    assert not model.h[0].mlp.c_fc.weight.data.flags.writeable  # saved by the live graph
    loss.backward()
    assert all(p.data.flags.writeable for p in model.parameters())
    model.wte.weight.data[0, 0] = 5.0
    assert model.wte.weight.data[0, 0] == 5.0 and flat_run(model.parameters(), False)


# ---- the optimizers: flat == per-parameter, bit for bit -----------------------------------------

@pytest.mark.parametrize("split", [None, 7], ids=["one_group", "two_groups"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_flat_optimizer_bit_identical_to_per_parameter(case, dtype, split, record):
    cls, kwargs = CASES[case]
    flat_model, ref_model = twins(dtype)
    flat_opt = cls(groups(flat_model, split, kwargs["lr"]), **kwargs)
    ref_opt = cls(groups(ref_model, split, kwargs["lr"]), **kwargs)
    flat_calls, ref_calls = count_flat_steps(flat_opt), count_flat_steps(ref_opt)
    data = batches(STEPS)
    train(flat_model, flat_opt, data)
    train(ref_model, ref_opt, data)
    assert flat_calls[0] == STEPS * len(flat_opt.param_groups) and ref_calls[0] == 0
    diff = max(float(np.max(np.abs(a.data - b.data)))
               for a, b in zip(flat_model.parameters(), ref_model.parameters()))
    record("flat_optimizer_bits", case, f"{np.dtype(dtype).name},{split}", diff, None, 0.0,
           diff == 0.0)
    assert_same_bits(flat_model, ref_model, flat_opt, ref_opt)
    assert_flat_layout(flat_model)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_flat_clip_grad_norm_matches_per_parameter(dtype):
    flat_model, ref_model = twins(dtype)
    flat_opt, ref_opt = MO.AdamW(flat_model.parameters()), MO.AdamW(ref_model.parameters())
    data = batches(3)
    for model, opt in ((flat_model, flat_opt), (ref_model, ref_opt)):
        train(model, opt, data, clip=0.05)
        opt.zero_grad()
        model(*data[0])[1].backward()
    assert flat_run(flat_model.parameters()) is not None  # clipped as one slice
    norms = [MO.clip_grad_norm_(m.parameters(), 0.05) for m in (flat_model, ref_model)]
    assert norms[0] == norms[1] > 0.05
    for a, b in zip(flat_model.parameters(), ref_model.parameters()):
        assert np.array_equal(a.grad.data, b.grad.data)
    assert_same_bits(flat_model, ref_model, flat_opt, ref_opt)


def test_flat_state_dict_round_trip_continues_identically():
    """Optimizer.load_state_dict puts the moments back into the flat buffers' views, so the
    resumed run is flat again and bit-identical to the uninterrupted one."""
    data = batches(8)
    straight, resumed = (GPT(CFG, mt.Generator(0), dtype=np.float64) for _ in range(2))
    opt_a = MO.AdamW(straight.parameters(), lr=1e-2)
    train(straight, opt_a, data)
    opt_b = MO.AdamW(resumed.parameters(), lr=1e-2)
    train(resumed, opt_b, data[:4])
    model_sd, opt_sd = resumed.state_dict(), opt_b.state_dict()
    resumed = GPT(CFG, mt.Generator(5), dtype=np.float64)
    resumed.load_state_dict(model_sd)
    opt_b = MO.AdamW(resumed.parameters(), lr=1e-2)
    opt_b.load_state_dict(opt_sd)
    calls = count_flat_steps(opt_b)
    train(resumed, opt_b, data[4:])
    assert calls[0] == 4
    assert_same_bits(straight, resumed, opt_a, opt_b)


def test_flat_parity_catches_a_wrong_slice_offset():
    """Negative control: a flat update that starts one element late (wte.weight[0, 0] is left
    out; weight decay moves every element) breaks the bit-identity check."""
    flat_model, ref_model = twins(np.float64)
    flat_opt, ref_opt = (MO.AdamW(m.parameters(), weight_decay=0.1)
                         for m in (flat_model, ref_model))
    right = flat_opt._chunks
    flat_opt._chunks = lambda fg, start, stop, *rest: right(fg, start + 1, stop, *rest)
    data = batches(2)
    train(flat_model, flat_opt, data)
    train(ref_model, ref_opt, data)
    with pytest.raises(AssertionError, match="wte.weight"):
        assert_same_bits(flat_model, ref_model, flat_opt, ref_opt)


# ---- gradients: torch's zero_grad semantics ---------------------------------------------------

def test_flat_grad_kept_from_an_earlier_step_is_never_overwritten():
    model = GPT(CFG, mt.Generator(0), dtype=np.float64)
    opt = MO.Adam(model.parameters())
    (x, y), (x2, y2) = batches(2)
    model(x, y)[1].backward()
    kept = {n: p.grad for n, p in model.named_parameters()}
    values = {n: g.data.copy() for n, g in kept.items()}
    opt.step()
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model(x2, y2)[1].backward()
    opt.step()
    for name, p in model.named_parameters():
        assert p.grad is not kept[name] and not np.shares_memory(p.grad.data, kept[name].data)
        assert np.array_equal(kept[name].data, values[name]), name
    # one .grad set to None by hand (no zero_grad): the next gradient gets its own array
    p = model.lm_head.weight
    old, p.grad = p.grad, None
    before = old.data.copy()
    model(x, y)[1].backward()
    assert np.array_equal(old.data, before) and not np.shares_memory(p.grad.data, old.data)
    assert flat_run(model.parameters()) is None  # so the next step is per-parameter


@pytest.mark.parametrize("cls", [MO.Adam, MO.SGD])
def test_flat_params_without_grad_keep_none_and_are_not_updated(cls):
    """torch skips parameters whose .grad is None; so does each path, with the same result."""
    flat_model, ref_model = twins(np.float64)
    opts = []
    for model in (flat_model, ref_model):
        model.wpe.weight.requires_grad_(False)  # in the first group, no gradient
        opts.append(cls(groups(model, 2, 0.1), lr=0.1, momentum=0.0) if cls is MO.SGD
                    else cls(groups(model, 2, 0.1)))
    calls = count_flat_steps(opts[0])
    before = flat_model.wpe.weight.data.copy()
    data = batches(3)
    train(flat_model, opts[0], data)
    train(ref_model, opts[1], data)
    assert flat_model.wpe.weight.grad is None and np.array_equal(flat_model.wpe.weight.data,
                                                                 before)
    assert calls[0] == 3  # the second group's run is flat; the first is per-parameter
    assert_same_bits(flat_model, ref_model, *opts)


# ---- leaving the buffer: a rebound p.data, a deep copy ----------------------------------------

@pytest.mark.parametrize("case", ["adamw", "sgd_nesterov_wd"])
def test_flat_rebound_parameter_falls_back_and_buffer_is_not_written(case):
    cls, kwargs = CASES[case]
    flat_model, ref_model = twins(np.float64)
    opts = [cls(m.parameters(), **kwargs) for m in (flat_model, ref_model)]
    data = batches(6)
    train(flat_model, opts[0], data[:3])
    train(ref_model, opts[1], data[:3])
    p = flat_model.h[0].attn.c_attn.weight
    fg, i = p._flat.group, p._flat.index
    p.data = p.data.copy()  # a user's rebinding: no longer flat
    stale = fg.views[i].copy()
    calls = count_flat_steps(opts[0])
    train(flat_model, opts[0], data[3:])
    train(ref_model, opts[1], data[3:])
    assert calls[0] == 0
    assert np.array_equal(fg.views[i], stale)  # the buffer's old view was never written
    assert not np.array_equal(p.data, stale)  # the parameter itself was
    assert_same_bits(flat_model, ref_model, *opts)


def test_flat_deep_copy_is_not_flat_and_trains_like_the_original():
    model = GPT(CFG, mt.Generator(0), dtype=np.float64)
    clone = copy.deepcopy(model)
    assert flat_run(clone.parameters(), grads=False) is None  # its arrays are its own
    opts = [MO.Adam(m.parameters(), lr=1e-2) for m in (model, clone)]
    data = batches(3)
    train(model, opts[0], data)
    train(clone, opts[1], data)
    assert_same_bits(model, clone, *opts)


# ---- the in-place version check ---------------------------------------------------------------

@pytest.mark.parametrize("cls", [MO.AdamW, MO.SGD])
def test_flat_step_still_fails_a_retained_graph_that_saved_a_parameter(cls):
    model = GPT(CFG, mt.Generator(0), dtype=np.float64)
    opt = cls(model.parameters(), lr=1e-2)
    calls = count_flat_steps(opt)
    loss = model(*batches(1)[0])[1]
    loss.backward(retain_graph=True)
    opt.step()
    assert calls[0] == 1
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_flat_model_parity_with_torch_after_load_and_steps():
    """The flat model against its torch twin by name after AdamW steps (the model-parity suite
    covers more; this checks the flat path is the one that ran)."""
    ours = GPT(CFG, mt.Generator(0), dtype=np.float64)
    twin = ref.TorchGPT(dataclasses.asdict(CFG)).to(torch.float64)
    ref.load_named_arrays(twin, ours.state_dict())
    opt = MO.AdamW(ours.parameters(), lr=1e-3, weight_decay=0.1)
    topt = torch.optim.AdamW(twin.parameters(), lr=1e-3, weight_decay=0.1)
    calls = count_flat_steps(opt)
    for x, y in batches(5):
        opt.zero_grad()
        ours(x, y)[1].backward()
        opt.step()
        topt.zero_grad()
        _, tloss = twin(torch.tensor(x), torch.tensor(y))
        tloss.backward()
        topt.step()
    assert calls[0] == 5
    tparams = dict(twin.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.data, tparams[name].detach().numpy(), atol=1e-9, rtol=0)
