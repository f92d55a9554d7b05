"""Graph-free inference and the KV cache against the autograd GPT, for every preset.

Weights are the model's init plus N(0, 0.2) noise, so attention is far from uniform and a wrong
position offset or mask shows up in the logits (the negative controls below prove it does).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import kernels as K
from minitorch.generate.cached import (
    autograd_next_logits,
    generate_cached,
    generate_recompute,
    infer_next_logits,
    sample_next,
)
from minitorch.generate.infer import InferenceGPT
from minitorch.generate.sample import generate, next_token_probs
from minitorch.models.gpt import GPT, PRESETS, CausalSelfAttention

PRESET_NAMES = sorted(PRESETS)
TOL_EXACT = 1e-12  # graph-free forward vs the autograd model, float64
TOL_CACHE = 1e-10  # cached incremental decoding vs full recomputation, float64


def make_model(preset: str, dtype=np.float64, seed: int = 0, **overrides) -> GPT:
    """A GPT of `preset` whose weights are perturbed away from the tiny-init regime."""
    model = GPT(PRESETS[preset].replace(**overrides), mt.Generator(seed), dtype=dtype)
    rng = np.random.default_rng(seed + 100)
    for p in model.parameters():
        p.data = (p.data + rng.normal(0.0, 0.2, p.shape)).astype(dtype)
    return model


def reference_logits(model: GPT, ids: np.ndarray) -> np.ndarray:
    with mt.no_grad():
        return model(ids)[0].data


def decode_incrementally(engine: InferenceGPT, ids: np.ndarray, chunks: list[int]) -> np.ndarray:
    """Feed ids through one cache in chunks of the given sizes (the rest one at a time)."""
    cache, out, t = engine.new_cache(ids.shape[0]), [], 0
    sizes = list(chunks) + [1] * (ids.shape[1] - sum(chunks))
    for n in sizes:
        out.append(engine(ids[:, t:t + n], cache))
        t += n
    assert cache.length == ids.shape[1]
    return np.concatenate(out, axis=1)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_inference_state_names_match_model(preset):
    """The snapshot is the model's own architecture: same names, shapes and values."""
    model = GPT(PRESETS[preset])
    snapshot = InferenceGPT.from_model(model).model.state_dict()
    assert {k: v.shape for k, v in snapshot.items()} == {
        k: v.shape for k, v in model.state_dict().items()}
    assert all(np.array_equal(snapshot[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_inference_logits_match_autograd(preset, record):
    model = make_model(preset)
    cfg = model.config
    ids = np.random.default_rng(1).integers(0, cfg.vocab_size, (2, cfg.block_size))
    ref = reference_logits(model, ids)
    out = InferenceGPT.from_model(model)(ids)
    err = float(np.abs(out - ref).max())
    record("inference_f64", preset, f"B=2,T={ids.shape[1]}", err, tol=TOL_EXACT,
           passed=err <= TOL_EXACT)
    assert out.dtype == np.float64 and out.shape == ref.shape
    assert err <= TOL_EXACT


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_inference_float32_matches_autograd(preset, record):
    model = make_model(preset, dtype=np.float32)
    ids = np.random.default_rng(2).integers(0, model.config.vocab_size, (1, 32))
    ref, out = reference_logits(model, ids), InferenceGPT.from_model(model)(ids)
    err = float(np.abs(out - ref).max())
    record("inference_f32", preset, "B=1,T=32", err, tol=1e-4, passed=err <= 1e-4)
    assert out.dtype == np.float32 and err <= 1e-4


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("chunks", [[1], [3], [7, 2, 5], [64]], ids=lambda c: f"chunks{c}")
def test_cache_parity_every_position(preset, chunks, record):
    """Prompt of len chunks[0], then the rest, reaching block_size: every position matches."""
    model = make_model(preset)
    T = model.config.block_size
    ids = np.random.default_rng(3).integers(0, model.config.vocab_size, (2, T))
    ref = reference_logits(model, ids)
    inc = decode_incrementally(InferenceGPT.from_model(model), ids, chunks)
    per_pos = np.abs(inc - ref).max(axis=(0, 2))  # (T,)
    err = float(per_pos.max())
    record("kv_cache_f64", preset, f"chunks={chunks},T={T}", err, tol=TOL_CACHE,
           passed=err <= TOL_CACHE)
    assert inc.shape == ref.shape
    assert err <= TOL_CACHE, f"worst position {int(per_pos.argmax())}: {err:.3e}"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_cache_parity_against_prefix_recomputation(preset):
    """Each position against a fresh forward of exactly that prefix (not only one full pass)."""
    model = make_model(preset, block_size=12)
    ids = np.random.default_rng(4).integers(0, model.config.vocab_size, (1, 12))
    engine = InferenceGPT.from_model(model)
    cache = engine.new_cache(1)
    engine(ids[:, :2], cache)
    for t in range(2, 12):
        step = engine(ids[:, t:t + 1], cache)[:, 0]
        prefix = reference_logits(model, ids[:, :t + 1])[:, -1]
        assert np.abs(step - prefix).max() <= TOL_CACHE, f"position {t}"


def test_cache_parity_catches_missing_rope_offset(monkeypatch):
    model = make_model("llama-mini", block_size=16)
    ids = np.random.default_rng(5).integers(0, model.config.vocab_size, (1, 16))
    ref = reference_logits(model, ids)
    good = decode_incrementally(InferenceGPT.from_model(model), ids, [4])
    rope = CausalSelfAttention.rope
    # the bug: new positions rotated as if they started at 0
    monkeypatch.setattr(CausalSelfAttention, "rope", lambda self, past, T: rope(self, 0, T))
    bad = decode_incrementally(InferenceGPT.from_model(model), ids, [4])
    monkeypatch.undo()
    assert np.abs(good - ref).max() <= TOL_CACHE
    assert np.abs(bad[:, :4] - ref[:, :4]).max() <= TOL_CACHE  # prefill is unaffected
    assert np.abs(bad - ref).max() > 1e-3


def test_cache_parity_catches_unshifted_mask(monkeypatch):
    """A causal mask not offset by the cached length hides the cache from a multi-token chunk."""
    model = make_model("gpt2-mini", block_size=16)
    ids = np.random.default_rng(6).integers(0, model.config.vocab_size, (1, 16))
    ref = reference_logits(model, ids)
    triu = np.triu
    monkeypatch.setattr(np, "triu", lambda m, k=0: triu(m, k=1))  # the bug: mask ignores past
    K.causal_bias.cache_clear()  # the masks are cached: build them with the bug, then without
    bad = decode_incrementally(InferenceGPT.from_model(model), ids, [5, 4])
    monkeypatch.undo()
    K.causal_bias.cache_clear()
    good = decode_incrementally(InferenceGPT.from_model(model), ids, [5, 4])
    assert np.abs(good - ref).max() <= TOL_CACHE
    assert np.abs(bad[:, 5:9] - ref[:, 5:9]).max() > 1e-3


def test_cache_rejects_positions_past_block_size():
    model = make_model("seed", block_size=8)
    engine = InferenceGPT.from_model(model)
    cache = engine.new_cache(1)
    engine(np.zeros((1, 6), np.int64), cache)
    with pytest.raises(ValueError, match="6 cached \\+ 3 new positions exceed block_size 8"):
        engine(np.zeros((1, 3), np.int64), cache)
    assert cache.length == 6  # the failed call changed nothing
    with pytest.raises(ValueError, match="cache holds batch 1"):
        engine(np.zeros((2, 1), np.int64), cache)


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("prompt_len", [5, 12], ids=lambda n: f"prompt{n}")
def test_generate_slides_past_block_size_like_recompute(preset, prompt_len, record):
    """overflow='slide': cached generation == the autograd model on the cropped context, token
    for token and logit for logit, through 20 tokens past a block of 8 (and a prompt > block)."""
    model = make_model(preset, block_size=8)
    prompt = np.random.default_rng(7).integers(0, model.config.vocab_size, (2, prompt_len))
    got_logits, ref_logits = [], []
    got = generate_cached(InferenceGPT.from_model(model), prompt, 20, temperature=0.8, top_k=20,
                          rng=11, logits_out=got_logits)
    ref = generate_recompute(autograd_next_logits(model), prompt, 20, block_size=8,
                             temperature=0.8, top_k=20, rng=11, logits_out=ref_logits)
    err = max(float(np.abs(a - b).max()) for a, b in zip(got_logits, ref_logits, strict=True))
    record("generate_slide_f64", preset, f"prompt={prompt_len},new=20,block=8", err,
           tol=TOL_CACHE, passed=err <= TOL_CACHE)
    assert got.shape == (2, prompt_len + 20)
    np.testing.assert_array_equal(got, ref)
    assert err <= TOL_CACHE


def test_generate_overflow_error_is_clear():
    engine = InferenceGPT.from_model(make_model("seed", block_size=8))
    with pytest.raises(ValueError, match="needs 9 positions > block_size 8"):
        generate_cached(engine, np.zeros((1, 5), np.int64), 5, overflow="error")
    out = generate_cached(engine, np.zeros((1, 5), np.int64), 4, overflow="error", rng=0)
    assert out.shape == (1, 9)  # exactly fills the block: allowed
    with pytest.raises(ValueError, match="overflow must be one of"):
        generate_cached(engine, np.zeros((1, 5), np.int64), 1, overflow="crop")


def test_generate_cached_equals_uncached_graph_free():
    engine = InferenceGPT.from_model(make_model("llama-mini"))
    prompt = np.arange(10)[None]
    a = generate_cached(engine, prompt, 30, temperature=1.0, rng=3)
    b = generate_recompute(infer_next_logits(engine), prompt, 30, 64, temperature=1.0, rng=3)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_generate_cached_equals_sample_generate(preset):
    """The cached path draws the same tokens as the autograd sampler (sample.generate)."""
    model = make_model(preset, block_size=16)
    prompt = np.random.default_rng(12).integers(0, model.config.vocab_size, (2, 4))
    want = generate(model, prompt, 24, temperature=0.9, top_k=30, rng=np.random.default_rng(5))
    got = generate_cached(InferenceGPT.from_model(model), prompt, 24, temperature=0.9, top_k=30,
                          rng=np.random.default_rng(5))
    np.testing.assert_array_equal(got, want)


def test_generate_is_seeded():
    engine = InferenceGPT.from_model(make_model("gpt2-mini"))
    prompt = np.array([1, 2, 3])
    a, b = (generate_cached(engine, prompt, 25, rng=42) for _ in range(2))
    c = generate_cached(engine, prompt, 25, rng=43)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (28,)  # a (T,) prompt gives a (T + n,) result, as sample.generate
    np.testing.assert_array_equal(a[:3], prompt)


def test_sample_greedy_and_top_k_one_are_argmax():
    logits = np.random.default_rng(8).normal(size=(4, 30))
    want = logits.argmax(-1)
    np.testing.assert_array_equal(sample_next(logits, temperature=0.0), want)
    np.testing.assert_array_equal(sample_next(logits, 1.3, top_k=1, rng=0), want)


def test_sample_top_k_stays_in_top_k():
    logits = np.random.default_rng(9).normal(size=(1, 50)).repeat(4000, axis=0)
    draws = sample_next(logits, 2.0, top_k=5, rng=1)
    top5 = set(np.argsort(logits[0])[-5:].tolist())
    assert set(draws.tolist()) == top5  # all five appear, nothing else does


@pytest.mark.slow
@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_sample_matches_softmax_distribution(temperature):
    logits = np.array([[2.0, 1.0, 0.0, -1.0, 0.5]])
    n = 40000
    draws = sample_next(logits.repeat(n, axis=0), temperature, rng=2)
    freq = np.bincount(draws, minlength=5) / n
    p = np.exp(logits[0] / temperature)
    p /= p.sum()
    # 5 sigma of a binomial proportion at n=40000 is <= 0.0125; the temperatures tested move
    # some probability by >= 0.08, so ignoring the temperature would fail this.
    assert np.abs(freq - p).max() < 0.0125


BAD_SAMPLING = [
    (dict(temperature=-1.0), "temperature must be a finite number >= 0, got -1.0"),
    (dict(temperature=float("nan")), "temperature must be a finite number >= 0, got nan"),
    (dict(temperature=float("inf")), "temperature must be a finite number >= 0, got inf"),
    (dict(temperature="1"), "temperature must be a finite number >= 0, got '1'"),
    (dict(top_k=0), "top_k must be None or an int >= 1, got 0"),
    (dict(top_k=-3), "top_k must be None or an int >= 1, got -3"),
    (dict(top_k=2.5), "top_k must be None or an int >= 1, got 2.5"),
    (dict(top_k=True), "top_k must be None or an int >= 1, got True"),
]


@pytest.mark.parametrize("bad, match", BAD_SAMPLING,
                         ids=[",".join(f"{k}={v!r}" for k, v in b.items())
                              for b, _ in BAD_SAMPLING])
def test_sample_rejects_bad_arguments_on_every_path(bad, match):
    """One check, one message, on every entry point, before any forward pass or draw."""
    args = {"temperature": 1.0, "top_k": None, **bad}
    model = make_model("seed", block_size=8)
    engine = InferenceGPT.from_model(model)
    calls = {
        "next_token_probs": lambda: next_token_probs(np.zeros((1, 4)), **args),
        "sample_next": lambda: sample_next(np.zeros((1, 4)), **args),
        "generate": lambda: generate(model, [1, 2], 3, **args),
        "generate_cached": lambda: generate_cached(engine, [1, 2], 3, **args),
        "generate_recompute": lambda: generate_recompute(infer_next_logits(engine), [1, 2], 3,
                                                         8, **args),
        "no new tokens": lambda: generate_cached(engine, [1, 2], 0, **args),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=re.escape(match)):
            call()
            pytest.fail(f"{name} accepted {bad}")
    with pytest.raises(ValueError, match="shape \\(B, V\\)"):
        sample_next(np.zeros(4))


@pytest.mark.parametrize("temperature, top_k", [(0.0, None), (0.8, 5), (1.0, 1)])
def test_generate_paths_consume_the_rng_identically(temperature, top_k):
    """The autograd sampler, the recompute loop and the cached loop leave a shared Generator in
    the same state (greedy draws nothing), so a caller that keeps using it sees no difference."""
    model = make_model("gpt2-mini", block_size=16)
    model.train()
    engine = InferenceGPT.from_model(model)
    prompt = np.array([[3, 1, 4], [1, 5, 9]])
    opts = dict(temperature=temperature, top_k=top_k)
    rngs = [np.random.default_rng(21) for _ in range(3)]
    outs = [generate(model, prompt, 6, rng=rngs[0], **opts),
            generate_recompute(infer_next_logits(engine), prompt, 6, 16, rng=rngs[1], **opts),
            generate_cached(engine, prompt, 6, rng=rngs[2], **opts)]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    follow = [r.random(4).tolist() for r in rngs]
    assert follow[0] == follow[1] == follow[2]
    assert model.training  # generate put the model in eval mode and back


def test_inference_rejects_bad_state_dict():
    model = GPT(PRESETS["seed"])
    state = model.state_dict()
    state.pop("h.1.mlp.c_fc.bias")
    with pytest.raises(KeyError, match="missing keys \\['h.1.mlp.c_fc.bias'\\]"):
        InferenceGPT(model.config, state)
    state = model.state_dict()
    state["ln_f.weight"] = state["ln_f.weight"][:10]
    with pytest.raises(ValueError, match="'ln_f.weight' has shape \\(10,\\), expected \\(64,\\)"):
        InferenceGPT(model.config, state)
    engine = InferenceGPT.from_model(model)
    with pytest.raises(IndexError, match="token id out of range"):
        engine(np.array([[65]]))
    with pytest.raises(ValueError, match="shape \\(B, T\\)"):
        engine(np.array([1, 2]))


def test_inference_snapshot_is_independent_of_training():
    model = make_model("seed")
    engine = InferenceGPT.from_model(model)
    ids = np.arange(8)[None]
    before = engine(ids)
    for p in model.parameters():
        p.data += 1.0  # training moves on; the snapshot must not
    np.testing.assert_array_equal(engine(ids), before)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_inference_attention_records_are_causal_distributions(preset):
    model = make_model(preset)
    engine, records = InferenceGPT.from_model(model), []
    engine(np.arange(10)[None], attention=records)
    cfg = model.config
    hs = cfg.n_embd // cfg.n_head
    assert [r.layer for r in records] == list(range(cfg.n_layer))
    for r in records:
        assert r.q_shape == r.k_shape == r.v_shape == (1, cfg.n_head, 10, hs)
        assert r.probs.shape == (1, cfg.n_head, 10, 10)
        np.testing.assert_allclose(r.probs.sum(-1), 1.0, atol=1e-12)
        assert np.all(np.triu(r.probs, k=1) == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: d.__name__)
def test_inference_gelu_is_the_engine_op_bit_for_bit(dtype):
    """The graph-free MLP applies exactly the engine's gelu forward (its constant, its x*x*x),
    so the two paths differ only where their matmuls do."""
    engine = InferenceGPT.from_model(make_model("gpt2-mini", dtype=dtype))
    mlp = engine.model.h[0].mlp
    x = np.random.default_rng(13).normal(0.0, 3.0, (2, 9, engine.config.n_embd)).astype(dtype)
    h = mlp.c_fc.infer(x)  # (B, T, hidden)
    with mt.no_grad():
        act = mt.Tensor(h).gelu(approximate="tanh").data
    want = mlp.c_proj.infer(act)
    np.testing.assert_array_equal(mlp.infer(x), want)
    # negative control: cubing with np.power (h**3) rounds differently, so this check sees it
    c = np.sqrt(2.0 / np.pi)
    pow3 = 0.5 * h * (1.0 + np.tanh(c * (h + 0.044715 * h**3)))
    assert not np.array_equal(mlp.c_proj.infer(pow3), want)


# ---- a trained checkpoint (BPE tokenizer saved beside it), through the CLI -------------------
TINY_RUN = ["--preset", "llama-mini", "--n_layer", "2", "--n_embd", "32", "--n_hidden", "64",
            "--block_size", "24", "--dtype", "float64", "--tokenizer", "bpe", "--vocab_size", "300",
            "--iters", "6", "--eval_interval", "3", "--eval_iters", "1", "--batch_size", "4",
            "--sample_tokens", "8", "--plot", "False"]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    from minitorch import cli

    out = tmp_path_factory.mktemp("run")
    assert cli.main(["train", *TINY_RUN, "--out", str(out)]) == 0
    return out


def test_checkpoint_engine_matches_loaded_model(trained_run, record):
    from minitorch.data.bpe import BPETokenizer
    from minitorch.io import load_model

    engine, tokenizer = InferenceGPT.from_checkpoint(trained_run)
    model, tok2, _ = load_model(trained_run)
    assert isinstance(tokenizer, BPETokenizer) and tokenizer.merges == tok2.merges
    assert tokenizer.vocab_size == engine.config.vocab_size == 300
    ids = np.array([tokenizer.encode("To be, or not to be, that is the question:")[:24]])
    err = float(np.abs(engine(ids) - reference_logits(model, ids)).max())
    record("inference_checkpoint_f64", "llama-mini(tiny,bpe)", f"T={ids.shape[1]}", err,
           tol=TOL_EXACT, passed=err <= TOL_EXACT)
    assert engine.dtype == np.float64 and err <= TOL_EXACT


def test_cli_sample_cache_and_no_cache_agree(trained_run, capsys):
    """`minitorch sample` (cached by default) and --no-cache print the same text, past the block."""
    from minitorch import cli

    args = ["sample", "--checkpoint", str(trained_run), "--prompt", "First Citizen:",
            "--tokens", "40", "--seed", "7", "--top_k", "50"]
    assert cli.main(args) == 0
    cached = capsys.readouterr().out
    assert cli.main([*args, "--no-cache"]) == 0
    assert capsys.readouterr().out == cached
    assert cached.startswith("First Citizen:") and len(cached) > len("First Citizen:") + 1
