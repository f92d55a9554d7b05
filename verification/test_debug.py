"""The execution debugger: it changes nothing, removes its hooks, and what it records is right
(op statistics, gradient norms per node and parameter, attention vs the graph-free path)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitorch as mt
from artifacts import write_json
from minitorch.debug import format_trace, trace, value_stats
from minitorch.engine import runtime
from minitorch.generate.infer import InferenceGPT
from minitorch.models.gpt import GPT, PRESETS

PRESET_NAMES = sorted(PRESETS)


def make_model(preset: str, dtype=np.float64, seed: int = 0) -> GPT:
    model = GPT(PRESETS[preset].replace(block_size=16), mt.Generator(seed), dtype=dtype)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():  # away from the tiny init so attention is not uniform
        p.data = (p.data + rng.normal(0.0, 0.2, p.shape)).astype(dtype)
    return model


def batch(model: GPT, B: int = 2, T: int = 10) -> np.ndarray:
    return np.random.default_rng(1).integers(0, model.config.vocab_size, (B, T))


def plain_run(model: GPT, ids: np.ndarray):
    model.zero_grad()
    logits, loss = model(ids[:, :-1], ids[:, 1:])
    loss.backward()
    grads = {n: p.grad.data.copy() for n, p in model.named_parameters()}
    model.zero_grad()
    return logits.data, loss.item(), grads


def no_wrappers_left(model: GPT) -> bool:
    return all("forward" not in vars(m) for _, m in model.named_modules())


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_trace_leaves_results_bit_identical(preset, dtype):
    model = make_model(preset, dtype)
    ids = batch(model)
    state = model.state_dict()
    logits, loss, grads = plain_run(model, ids)
    tr = trace(model, ids)
    np.testing.assert_array_equal(tr.logits, logits)
    assert tr.loss == loss
    assert set(tr.grads) == set(grads)
    for name, g in grads.items():
        np.testing.assert_array_equal(tr.grads[name], g, err_msg=name)
    # The model is left as found: weights untouched, .grad back to None, no wrappers.
    after = model.state_dict()
    assert all(np.array_equal(after[k], v) for k, v in state.items())
    assert all(p.grad is None for p in model.parameters())
    assert no_wrappers_left(model)
    # ... and a later plain run still gives the same numbers.
    logits2, _, grads2 = plain_run(model, ids)
    np.testing.assert_array_equal(logits2, logits)
    assert all(np.array_equal(grads2[k], g) for k, g in grads.items())


def test_trace_restores_existing_grads():
    model = make_model("seed")
    ids = batch(model)
    _, loss = model(ids[:, :-1], ids[:, 1:])
    loss.backward()
    before = {n: p.grad.data.copy() for n, p in model.named_parameters()}
    trace(model, ids)
    for n, p in model.named_parameters():
        np.testing.assert_array_equal(p.grad.data, before[n])


def test_trace_hooks_empty_when_off_and_after_errors():
    model = make_model("gpt2-mini")
    assert runtime.forward_hooks == [] and runtime.backward_hooks == []
    trace(model, batch(model))
    assert runtime.forward_hooks == [] and runtime.backward_hooks == []
    with pytest.raises(ValueError, match="targets shape"):
        trace(model, batch(model), targets=np.zeros((2, 3), np.int64))  # fails mid-forward
    assert runtime.forward_hooks == [] and runtime.backward_hooks == []
    assert no_wrappers_left(model)
    assert all(p.grad is None for p in model.parameters())


def test_trace_keeps_other_hooks():
    seen = []
    other = lambda op, inputs, out, seconds: seen.append(op.name)  # noqa: E731
    model = make_model("seed")  # before the hook: its init writes (nn.init's copy_) are ops too
    runtime.forward_hooks.append(other)
    try:
        tr = trace(model, batch(model))
        assert runtime.forward_hooks == [other]
        assert seen == [r.op for r in tr.ops]  # the same ops, in the same order
    finally:
        runtime.forward_hooks.remove(other)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_trace_op_records(preset):
    model = make_model(preset)
    ids = batch(model)
    tr = trace(model, ids)
    assert [r.index for r in tr.ops] == list(range(len(tr.ops)))
    first, last = tr.ops[0], next(r for r in reversed(tr.ops) if r.module.startswith("lm_head"))
    # The embedding lookup and the head's output are checked against independent arrays.
    assert first.op == "embedding" and first.module == "wte"
    assert first.inputs[1]["source"] == "param:wte.weight" and first.inputs[0]["source"] == "input"
    assert first.stats == value_stats(model.wte.weight.data[ids[:, :-1]])
    assert last.shape == tr.logits.shape and last.stats == value_stats(tr.logits)
    assert all(r.seconds >= 0 for r in tr.ops)
    # float64 throughout, but for the targets' reshape to rows (an op, so replay can follow it)
    assert [r.op for r in tr.ops if r.dtype != "float64"] == ["reshape"]
    modules = {r.module for r in tr.ops}
    assert {"wte", "h.0.attn", "h.0.attn.c_attn", "h.0.mlp.c_fc", "lm_head"} <= modules
    # each norm runs fused into the Linear after it, which the trace names
    fused = [r.module for r in tr.ops if r.op == "norm_linear"]
    assert fused == [f"h.{i}.{m}" for i in range(len(model.h))
                     for m in ("attn.c_attn", "mlp.c_fc")] + ["lm_head"]
    assert any(r.op == "cross_entropy" or r.op == "log_softmax" for r in tr.ops)


def test_value_stats_counts_nan_and_inf():
    s = value_stats(np.array([1.0, np.nan, np.inf, -np.inf, 3.0]))
    assert s == {"mean": 2.0, "std": 1.0, "min": 1.0, "max": 3.0, "nan": 1, "inf": 2}
    assert value_stats(np.array([np.nan]))["mean"] is None
    assert value_stats(np.array([True, False]))["mean"] == 0.5


def test_trace_shows_where_a_nan_enters():
    """Negative control for the stats: a NaN planted in one weight appears first at its op."""
    model = make_model("seed")
    model.h[1].mlp.c_fc.weight.data[3, 5] = np.nan
    tr = trace(model, batch(model))
    first_bad = next(r for r in tr.ops if r.stats["nan"])
    assert first_bad.module == "h.1.mlp.c_fc" and first_bad.op == "norm_linear"
    sources = [i["source"] for i in first_bad.inputs]  # x, ln_2's weight and bias, c_fc's
    assert sources[1:] == ["param:h.1.ln_2.weight", "param:h.1.ln_2.bias",
                           "param:h.1.mlp.c_fc.weight", "param:h.1.mlp.c_fc.bias"]
    rows = int(np.prod(first_bad.shape[:-1]))
    assert first_bad.stats["nan"] == rows  # weight row 3 feeds output column 3 of every row
    assert all(r.stats["nan"] == 0 for r in tr.ops[:first_bad.index])


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_trace_gradient_norms(preset):
    model = make_model(preset)
    ids = batch(model)
    tr = trace(model, ids)
    _, _, grads = plain_run(model, ids)
    for p in tr.params:
        assert p["grad_norm"] == pytest.approx(np.linalg.norm(grads[p["name"]]), rel=1e-12)
    # Every backward edge was matched to the forward op that consumed that input.
    assert tr.backward and all(e.consumer is not None for e in tr.backward)
    assert all(tr.ops[e.consumer].op == e.op for e in tr.backward)
    # Node gradient: d loss / d logits = (softmax - onehot) / N, independent of the engine.
    head = next(r for r in reversed(tr.ops) if r.shape == tr.logits.shape)
    x = tr.logits - tr.logits.max(-1, keepdims=True)
    p = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    targets = ids[:, 1:]
    onehot = np.eye(model.config.vocab_size)[targets]
    want = np.linalg.norm((p - onehot) / targets.size)
    assert head.grad_norm == pytest.approx(want, rel=1e-10)
    # Per-parameter edges: the norms of the gradient pieces sent to wte are recorded.
    assert any(e.parent == "param:wte.weight" for e in tr.backward)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_trace_attention_matches_inference_path(preset, record):
    model = make_model(preset)
    ids = batch(model)
    tr = trace(model, ids)
    records = []
    InferenceGPT.from_model(model)(ids[:, :-1], attention=records)
    cfg = model.config
    assert len(tr.attention) == cfg.n_layer
    err = 0.0
    for a, r in zip(tr.attention, records, strict=True):
        assert a.module == f"h.{a.layer}.attn"
        assert a.q_shape == r.q_shape and a.k_shape == r.k_shape and a.v_shape == r.v_shape
        assert a.q_shape == (2, cfg.n_head, 9, cfg.n_embd // cfg.n_head)
        err = max(err, float(np.abs(a.probs - r.probs).max()))
    record("debug_attention_f64", preset, "B=2,T=9", err, tol=1e-12, passed=err <= 1e-12)
    assert err <= 1e-12


def test_trace_table_and_json():
    model = make_model("llama-mini")
    ids = batch(model, B=1, T=9)
    tr = trace(model, ids, tokens=[str(int(t)) for t in ids[0, :-1]])
    text = format_trace(tr, max_rows=20)
    assert "h.0.attn.c_attn" in text and "lm_head.weight" in text and "h.2.attn" in text
    assert f"... {len(tr.ops) - 20} more ops" in text
    full = tr.table()
    assert "causal_self_attention" in full and len(full.splitlines()) > len(tr.ops)
    d = json.loads(json.dumps(tr.to_dict()))
    assert len(d["ops"]) == len(tr.ops) and len(d["attention"]) == model.config.n_layer
    probs = np.array(d["attention"][0]["probs"])
    assert probs.shape == (1, model.config.n_head, 8, 8)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    write_json("trace.json", d)  # the report's attention heatmaps read this


def test_trace_rejects_bad_input():
    model = make_model("seed")
    with pytest.raises(ValueError, match="shape \\(B, T\\)"):
        trace(model, np.arange(5))
    with pytest.raises(ValueError, match="T >= 2"):
        trace(model, np.array([[3]]))


def test_bit_identity_check_catches_a_meddling_hook():
    """Negative control: a hook that nudges one op's output in place changes logits and grads,
    so the bit-identity comparison above would catch a tracer that did so."""
    model = make_model("gpt2-mini")
    ids = batch(model)
    logits, _, grads = plain_run(model, ids)

    def meddle(op, inputs, out, seconds):
        if op.name == "gelu":
            out.data *= 1.0 + 1e-12

    runtime.forward_hooks.append(meddle)
    try:
        tr = trace(model, ids)
    finally:
        runtime.forward_hooks.remove(meddle)
    assert not np.array_equal(tr.logits, logits)
    assert any(not np.array_equal(tr.grads[k], g) for k, g in grads.items())


def test_cli_trace_prints_table_and_writes_json(tmp_path, capsys):
    from minitorch import cli

    out = tmp_path / "run"
    tiny = ["--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
            "--iters", "2", "--eval_interval", "1", "--eval_iters", "1", "--batch_size", "2",
            "--sample_tokens", "4", "--plot", "False"]
    assert cli.main(["train", *tiny, "--out", str(out)]) == 0
    capsys.readouterr()
    path = tmp_path / "trace.json"
    assert cli.main(["trace", "--checkpoint", str(out), "--text", "The ferry left at dawn.",
                     "--json", str(path), "--rows", "12"]) == 0
    printed = capsys.readouterr().out
    assert "more ops" in printed and "lm_head.weight" in printed and "h.0.attn" in printed
    d = json.loads(path.read_text())
    assert d["tokens"][:3] == ["T", "h", "e"] and len(d["tokens"]) == 16  # cropped to block
    assert np.array(d["attention"][0]["probs"]).shape == (1, 1, 16, 16)
    assert cli.main(["trace", "--checkpoint", str(out), "--text", "T"]) == 2
    assert "at least 2 tokens" in capsys.readouterr().err
