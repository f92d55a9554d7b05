"""TrainConfig: strict typed overrides (unknown key / wrong type name the key), model-field routing,
the JSON round trip, every field commented, and the two named recipes."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re

import pytest

from minitorch.models.gpt import GPT, PRESETS, GPTConfig
from minitorch.optim import AdamW
from minitorch.train import ConfigError, TrainConfig, build_optimizer, parse_overrides, resolve
from minitorch.train.config import RECIPES_DIR, field_help, load_recipe


def test_overrides_both_spellings_and_types():
    ov = parse_overrides(["--lr", "1e-3", "--iters=20", "--data", "/x/y.txt", "--betas",
                          "(0.9, 0.95)", "--grad-clip", "1", "--schedule", "cosine"])
    assert ov == {"lr": 1e-3, "iters": 20, "data": "/x/y.txt", "betas": (0.9, 0.95),
                  "grad_clip": 1.0, "schedule": "cosine"}
    cfg = resolve(None, ov)
    assert cfg.lr == 1e-3 and cfg.iters == 20 and isinstance(cfg.grad_clip, float)
    assert resolve(None, parse_overrides(["--data", "None"])).data is None


def test_model_keys_route_to_gptconfig():
    cfg = resolve(None, parse_overrides(["--n_layer", "4", "--model.n_head=2", "--activation",
                                         "gelu", "--qkv_bias", "True"]))
    assert cfg.model == {"n_layer": 4, "n_head": 2, "activation": "gelu", "qkv_bias": True}
    mc = cfg.model_config(vocab_size=65)
    assert (mc.n_layer, mc.n_head, mc.activation, mc.qkv_bias, mc.vocab_size) == (4, 2, "gelu",
                                                                                  True, 65)


@pytest.mark.parametrize("args, pattern", [
    (["--nlayers", "4"], r"unknown config key 'nlayers'"),
    (["--model.bogus=1"], r"unknown config key 'model.bogus'"),
    (["--iters", "1.5"], r"config key 'iters' expects int, got 1.5"),
    (["--iters", "True"], r"config key 'iters' expects int, got True"),
    (["--lr", "fast"], r"config key 'lr': cannot parse 'fast'"),
    (["--n_layer", "'3'"], r"config key 'n_layer' expects int"),
    (["--betas", "(0.9,)"], r"config key 'betas' expects"),
    (["--qkv_bias", "1"], r"config key 'qkv_bias' expects bool"),
    (["--lr"], r"config key 'lr' is missing a value"),
    (["lr", "3"], r"expected --key value"),
    (["--model.vocab_size", "80"], r"'model.vocab_size' is set by the tokenizer"),
])
def test_override_errors_name_the_key(args, pattern):
    with pytest.raises(ConfigError, match=pattern):
        resolve(None, parse_overrides(args))


@pytest.mark.parametrize("change, key", [
    ({"schedule": "linear"}, "schedule"), ({"optimizer": "lion"}, "optimizer"),
    ({"dtype": "float16"}, "dtype"), ({"preset": "huge"}, "preset"), ({"iters": 0}, "iters"),
    ({"lr": -1.0}, "lr"), ({"min_lr_ratio": 2.0}, "min_lr_ratio"),
    ({"betas": (0.9, 1.0)}, "betas"), ({"model": {"n_head": 3}}, "n_head"),
])
def test_invalid_values_name_the_field(change, key):
    with pytest.raises(ConfigError, match=key):
        TrainConfig().replace(**change)


def test_config_json_roundtrip():
    cfg = resolve("better", {"seed": 3, "data": "a.txt"})
    again = TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg and isinstance(again.betas, tuple)


def test_every_config_field_is_documented():
    """TrainConfig's help lives in field metadata (what --help prints); GPTConfig (nn) keeps its
    trailing comments until it moves to metadata too (TODO(#11))."""
    missing = [f.name for f in dataclasses.fields(TrainConfig) if not field_help(TrainConfig,
                                                                               f.name)]
    assert not missing, f"TrainConfig fields without help metadata: {missing}"
    src = inspect.getsource(GPTConfig)
    commented = set(re.findall(r"^\s+(\w+):[^#\n]*#\s*\S", src, flags=re.M))
    missing = {f.name for f in dataclasses.fields(GPTConfig)} - commented - {
        f.name for f in dataclasses.fields(GPTConfig) if f.metadata.get("help")}
    assert not missing, f"GPTConfig fields without a comment: {sorted(missing)}"


@pytest.mark.parametrize("change, pattern", [
    ({"lr": float("nan")}, "lr must be a finite number >= 0, got nan"),
    ({"lr": float("inf")}, "lr must be a finite number >= 0, got inf"),
    ({"eps": float("nan")}, "eps"), ({"weight_decay": float("inf")}, "weight_decay"),
    ({"grad_clip": float("nan")}, "grad_clip"), ({"seed": -1}, "seed must be"),
    ({"seed": 2**64}, "seed must be < 2\\*\\*63"), ({"keep_last": -1}, "keep_last"),
    ({"min_lr_ratio": float("nan")}, "min_lr_ratio"), ({"betas": (float("nan"), 0.9)}, "betas"),
    ({"on_nonfinite": "ignore"}, "on_nonfinite must be one of"),
    ({"tokenizer": "bpe", "vocab_size": 100}, "vocab_size must be >= 256"),
    ({"model": {"n_embd": 0}}, "model key 'n_embd' must be an int >= 1, got 0"),
    ({"model": {"n_hidden": -5}}, "model key 'n_hidden' must be an int >= 1, got -5"),
    ({"model": {"norm_eps": 0.0}}, "model key 'norm_eps' must be a finite number > 0"),
    ({"model": {"rope_theta": float("inf")}}, "rope_theta"),
    ({"out_dir": ""}, "out_dir must not be empty"),
])
def test_non_finite_and_out_of_range_values_are_refused(change, pattern):
    with pytest.raises(ConfigError, match=pattern):
        TrainConfig().replace(**change)


def test_recipes_load_and_match_their_documented_configs():
    assert {p.stem for p in RECIPES_DIR.glob("*.json")} >= {"seed", "better"}
    seed, better = resolve("seed"), resolve("better")
    assert (seed.optimizer, seed.lr, seed.batch_size, seed.iters, seed.schedule,
            seed.weight_decay, seed.grad_clip, seed.preset, seed.model) == (
        "adam", 3e-4, 32, 4000, "constant", 0.0, 0.0, "seed", {})
    assert (better.optimizer, better.lr, better.warmup, better.schedule, better.min_lr_ratio,
            better.weight_decay, better.grad_clip, better.iters, better.batch_size) == (
        "adamw", 2e-3, 200, "cosine", 0.1, 0.1, 1.0, 4000, 32)
    for cfg in (seed, better):
        model = GPT(cfg.model_config(vocab_size=65))  # Tiny Shakespeare's 65 characters
        assert model.num_parameters() == 161_985
    bm = better.model_config(65)
    assert (bm.n_head, bm.activation) == (4, "gelu")
    assert PRESETS["seed"].replace(vocab_size=65) == seed.model_config(65)


def test_lr_variant_recipe_differs_from_better_only_in_lr():
    assert resolve("better-lr3e-3") == resolve("better", {"lr": 3e-3})


def test_better_recipe_decays_matrices_only():
    cfg = resolve("better")
    model = GPT(cfg.model_config(65))
    opt = build_optimizer(cfg, model)
    assert isinstance(opt, AdamW)
    by_id = {id(p): n for n, p in model.named_parameters()}
    decayed = {by_id[id(p)] for g in opt.param_groups if g["weight_decay"] for p in g["params"]}
    assert decayed == {n for n, p in model.named_parameters() if p.ndim == 2}
    assert "h.0.attn.c_attn.weight" in decayed and "ln_f.weight" not in decayed
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]


def test_command_line_wins_over_recipe():
    cfg = resolve("better", parse_overrides(["--lr", "1e-3", "--n_head", "2"]))
    assert cfg.lr == 1e-3 and cfg.model == {"n_head": 2, "activation": "gelu"}


def test_recipe_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"recipe 'nosuch' not found.*known recipes: \[.*'seed'"):
        load_recipe("nosuch")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"config": {"learning_rate": 1.0}}))
    with pytest.raises(ConfigError, match="unknown config key 'learning_rate'"):
        resolve(str(bad))
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_recipe(str(bad))
