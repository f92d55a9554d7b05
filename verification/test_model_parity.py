"""Full-architecture parity: every GPT preset against the independent torch twin, by name.

Weights are randomised (gains, biases and all) so that every parameter shapes the output, then
copied into the twin by parameter name. Float64: logits, loss and every gradient within 1e-9
absolute (the required bound is 1e-6) and within 1e-9 of the tensor's scale (max|e|), so tensors
with small gradients are held as tightly as large ones; round-off is ~1e-15.
Float32: elementwise |a - e| <= 1e-4 + 1e-3*|e|.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import minitorch as mt
from artifacts import write_json
from minitorch.models.gpt import GPT, PRESETS

torch = pytest.importorskip("torch")

from verification import torch_reference as ref  # noqa: E402

pytestmark = pytest.mark.torch
# These tensors are tiny: extra intra-op threads only contend for the 2 shared cores (a 20-step
# run took 20 s instead of 1 s on a loaded machine). OPENBLAS_NUM_THREADS=1 matters for numpy.
torch.set_num_threads(1)

F64_ATOL = 1e-9
F64_SCALE_RTOL = 1e-9  # max|a - e| / max|e|
F32_ATOL, F32_RTOL = 1e-4, 1e-3
SEED_PARAMS = 161_985  # the seed preset at its 65-token vocabulary
SHAPES = [(2, 64), (3, 17)]  # full block (every wpe row used) and a short, odd T
TORCH_DTYPE = {np.float64: torch.float64, np.float32: torch.float32}
_RESULTS: dict[str, dict] = {}  # one entry per (preset, dtype, shape), written to the artifact


def randomize(model, seed: int) -> None:
    """Non-trivial values for every parameter, so a dropped bias, gain or mask changes outputs."""
    rng = np.random.default_rng(seed)
    for name, p in model.named_parameters():
        if name in ("wte.weight", "wpe.weight"):
            values = rng.standard_normal(p.shape)
        elif p.ndim == 2:  # Linear (out, in): unit-scale outputs, so attention is far from uniform
            values = rng.standard_normal(p.shape) / np.sqrt(p.shape[1])
        elif name.endswith(".weight"):  # norm gains
            values = 1.0 + 0.2 * rng.standard_normal(p.shape)
        else:  # biases
            values = 0.1 * rng.standard_normal(p.shape)
        p.data = values.astype(p.dtype)


def build_pair(preset: str, dtype=np.float64, seed: int = 0):
    """(minitorch GPT, torch twin) holding the same randomised weights, both in `dtype`."""
    cfg = PRESETS[preset]
    ours = GPT(cfg, generator=mt.Generator(seed), dtype=np.float64)
    randomize(ours, seed)
    ours.to(dtype)
    twin = ref.TorchGPT(dataclasses.asdict(cfg)).to(TORCH_DTYPE[dtype])
    ref.load_named_arrays(twin, ours.state_dict())
    return ours, twin


def make_batch(vocab: int, B: int, T: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, (B, T)), rng.integers(0, vocab, (B, T))


def run_both(ours, twin, idx, targets) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Forward + backward in both: subject -> (minitorch array, torch array) for the logits, the
    loss and the gradient of every parameter (keyed by parameter name)."""
    ours.zero_grad()
    logits, loss = ours(idx, targets)
    loss.backward()
    twin.zero_grad(set_to_none=True)
    t_logits, t_loss = twin(torch.from_numpy(idx), torch.from_numpy(targets))
    t_loss.backward()
    return {"logits": (logits.data, t_logits.detach().numpy()),
            **loss_and_grad_pairs(ours, twin, loss.data, t_loss)}


def loss_and_grad_pairs(ours, twin, loss, t_loss) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """After a backward in both: "loss" and every parameter's gradient, keyed by parameter
    name -> (minitorch array, torch array). `loss` is minitorch's (array or float)."""
    ours_params, twin_params = dict(ours.named_parameters()), dict(twin.named_parameters())
    assert set(ours_params) == set(twin_params)
    out = {"loss": (np.asarray(loss), t_loss.detach().numpy())}
    for name, p in ours_params.items():
        tp = twin_params[name]
        assert p.grad is not None and tp.grad is not None, f"no gradient for {name}"
        out[name] = (p.grad.data, tp.grad.numpy())
    return out


def parity_rows(pairs, dtype) -> list[dict]:
    """One row per subject: max abs/rel error and whether it is within the dtype's tolerance."""
    rows = []
    for subject, (a, e) in pairs.items():
        max_abs, max_rel = ref.max_errors(a, e)
        ok = (ref.within(a, e, F64_ATOL, 0.0) and max_rel <= F64_SCALE_RTOL
              if dtype == np.float64 else ref.within(a, e, F32_ATOL, F32_RTOL))
        rows.append({"tensor": subject, "shape": list(np.shape(a)), "max_abs": max_abs,
                     "max_rel": max_rel, "pass": ok})
    return rows


def failures(rows) -> list[str]:
    return [r["tensor"] for r in rows if not r["pass"]]


def _publish(key: str, entry: dict) -> None:
    _RESULTS[key] = entry
    write_json("model_parity.json", {
        "tolerances": {"float64": {"atol": F64_ATOL, "scale_rtol": F64_SCALE_RTOL},
                       "float32": {"atol": F32_ATOL, "rtol": F32_RTOL}},
        "max_rel_definition": "max|a-e| / max|e| over the tensor",
        "torch": torch.__version__, "numpy": np.__version__, "results": _RESULTS,
    })


def _check_and_record(record, preset, dtype, B, T, rows) -> None:
    name = "f64" if dtype == np.float64 else "f32"
    tol = (f"atol={F64_ATOL},scale_rtol={F64_SCALE_RTOL}" if dtype == np.float64
           else f"atol={F32_ATOL},rtol={F32_RTOL}")
    for r in rows:
        kind = r["tensor"] if r["tensor"] in ("logits", "loss") else "grad"
        record(f"model_{kind}_{name}", r["tensor"], f"B{B}xT{T}", r["max_abs"], r["max_rel"],
               tol, r["pass"], preset=preset)
    _publish(f"{preset}/{name}/B{B}xT{T}", {"preset": preset, "dtype": name, "B": B, "T": T,
                                            "rows": rows})
    worst = max(rows, key=lambda r: r["max_abs"])
    assert not failures(rows), (f"{preset} {name}: outside tolerance: {failures(rows)}; "
                                f"worst {worst['tensor']} max_abs={worst['max_abs']:.3e}")


def test_model_seed_preset_has_161985_parameters():
    ours, twin = build_pair("seed")
    assert ours.num_parameters() == SEED_PARAMS
    assert ref.count_parameters(twin) == SEED_PARAMS


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_model_parameter_names_and_shapes_match_twin(preset):
    ours = GPT(PRESETS[preset], generator=mt.Generator(0), dtype=np.float64)
    twin = ref.TorchGPT(**dataclasses.asdict(PRESETS[preset]))
    ours_shapes = {n: tuple(p.shape) for n, p in ours.named_parameters()}
    twin_shapes = {n: tuple(p.shape) for n, p in twin.named_parameters()}
    assert ours_shapes == twin_shapes


@pytest.mark.parametrize("B,T", SHAPES, ids=[f"B{b}xT{t}" for b, t in SHAPES])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_model_parity_float64(preset, B, T, record):
    ours, twin = build_pair(preset, np.float64)
    idx, targets = make_batch(PRESETS[preset].vocab_size, B, T)
    rows = parity_rows(run_both(ours, twin, idx, targets), np.float64)
    assert len(rows) == 2 + len(ours.parameters())  # logits, loss, one row per parameter
    _check_and_record(record, preset, np.float64, B, T, rows)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_model_parity_float32(preset, record):
    B, T = SHAPES[0]
    ours, twin = build_pair(preset, np.float32)
    assert all(p.dtype == np.float32 for p in ours.parameters())
    idx, targets = make_batch(PRESETS[preset].vocab_size, B, T)
    pairs = run_both(ours, twin, idx, targets)
    assert pairs["logits"][0].dtype == np.float32 and pairs["wte.weight"][0].dtype == np.float32
    _check_and_record(record, preset, np.float32, B, T, parity_rows(pairs, np.float32))


# ---- negative controls: the same check must reject a twin that differs in one small way ----

def _float64_failures(ours, twin, B=2, T=32) -> list[str]:
    idx, targets = make_batch(ours.config.vocab_size, B, T)
    return failures(parity_rows(run_both(ours, twin, idx, targets), np.float64))


def test_model_parity_catches_changed_norm_eps():
    ours, twin = build_pair("seed")
    assert _float64_failures(ours, twin) == []
    twin.h[1].ln_2.eps = 1e-3  # one LayerNorm out of seven
    bad = _float64_failures(ours, twin)
    assert "logits" in bad and "loss" in bad and "h.1.ln_2.weight" in bad


def test_model_parity_catches_transposed_weight():
    ours, twin = build_pair("gpt2-mini")
    arrays = ours.state_dict()
    arrays["h.0.attn.c_proj.weight"] = arrays["h.0.attn.c_proj.weight"].T.copy()  # square, loads
    ref.load_named_arrays(twin, arrays)
    bad = _float64_failures(ours, twin)
    assert "logits" in bad and "h.0.attn.c_proj.weight" in bad


def test_model_parity_catches_interleaved_rope(monkeypatch):
    """RoPE over adjacent pairs (x0, x1), (x2, x3), ... instead of the two halves must fail."""

    def interleaved(x, cos, sin):
        even, odd = x[..., 0::2], x[..., 1::2]  # (B, nh, T, hs/2) each
        return torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)

    ours, twin = build_pair("llama-mini")
    monkeypatch.setattr(ref, "apply_rope", interleaved)
    bad = _float64_failures(ours, twin)
    assert "logits" in bad and "h.0.attn.c_attn.weight" in bad


def test_model_parity_rejects_mismatched_names():
    ours, twin = build_pair("seed")
    arrays = ours.state_dict()
    arrays["h.0.attn.c_attn.bias"] = np.zeros(192)  # the seed preset has no Q/K/V bias
    with pytest.raises(KeyError, match="c_attn.bias"):
        ref.load_named_arrays(twin, arrays)
    del arrays["h.0.attn.c_attn.bias"], arrays["ln_f.bias"]
    with pytest.raises(KeyError, match="ln_f.bias"):
        ref.load_named_arrays(twin, arrays)


def test_torch_twin_rejects_bad_config():
    good = dataclasses.asdict(PRESETS["seed"])
    with pytest.raises(KeyError, match="n_layers"):
        ref.TorchGPT({**good, "n_layers": 4})
    with pytest.raises(KeyError, match="rope_theta"):
        ref.TorchGPT({k: v for k, v in good.items() if k != "rope_theta"})
    with pytest.raises(TypeError, match="n_head"):
        ref.TorchGPT({**good, "n_head": "4"})
    with pytest.raises(ValueError, match="norm"):
        ref.TorchGPT({**good, "norm": "batchnorm"})
