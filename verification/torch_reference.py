"""An independent PyTorch twin of minitorch's GPT presets, used only by the parity tests.

Written from torch ops and torch.nn layers alone: it never imports minitorch. It is configured
from a plain dict of config values (the fields of GPTConfig), and its parameters carry the same
GPT-2 names (wte, wpe, h.{i}.attn.c_attn, ln_f, lm_head) so weights and gradients compare by name.
Shapes: B batch, T time, C n_embd, nh heads, hs C/nh.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# Every config key the twin understands, with the Python type its value must have.
CONFIG_FIELDS: dict[str, type] = {
    "vocab_size": int, "block_size": int, "n_layer": int, "n_head": int, "n_embd": int,
    "n_hidden": int, "activation": str, "norm": str, "pos": str, "qkv_bias": bool, "bias": bool,
    "norm_eps": float, "rope_theta": float,
}
CHOICES = {"activation": ("relu", "gelu"), "norm": ("layernorm", "rmsnorm"),
           "pos": ("learned", "rope")}


def check_config(config: Mapping) -> dict:
    """A validated copy of `config`: exactly the keys of CONFIG_FIELDS, each of the right type."""
    keys = set(config)
    missing, unknown = sorted(set(CONFIG_FIELDS) - keys), sorted(keys - set(CONFIG_FIELDS))
    if missing or unknown:
        raise KeyError(f"torch twin config: missing keys {missing}, unknown keys {unknown}")
    for key, kind in CONFIG_FIELDS.items():
        value = config[key]
        if not _has_type(value, kind):
            raise TypeError(f"torch twin config: '{key}' must be {kind.__name__}, "
                            f"got {type(value).__name__} {value!r}")
        if key in CHOICES and value not in CHOICES[key]:
            raise ValueError(f"torch twin config: '{key}' must be one of {CHOICES[key]}, "
                             f"got {value!r}")
    if config["n_embd"] % config["n_head"]:
        raise ValueError(f"torch twin config: n_embd {config['n_embd']} is not divisible by "
                         f"n_head {config['n_head']}")
    return dict(config)


def _has_type(value, kind: type) -> bool:
    """Exact type match, except that an int is accepted where a float is expected (not a bool)."""
    if kind is float and type(value) is int:
        return True
    return type(value) is kind


def rope_cos_sin(T: int, hs: int, theta: float, dtype: torch.dtype):
    """cos and sin of angle pos * theta^(-2i/hs), each (T, hs/2), computed in float64."""
    inv_freq = 1.0 / theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs)  # (hs/2,)
    angle = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, hs/2)
    return angle.cos().to(dtype), angle.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, rotate-half form: x*cos + rotate_half(x)*sin, where the first and second
    halves of the head dim form the rotated pairs. x (B, nh, T, hs); cos, sin (T, hs/2)."""
    first, second = x.chunk(2, dim=-1)  # 2 x (B, nh, T, hs/2)
    rotated = torch.cat((-second, first), dim=-1)  # (B, nh, T, hs)
    return x * torch.cat((cos, cos), dim=-1) + rotated * torch.cat((sin, sin), dim=-1)


def make_norm(cfg: dict) -> nn.Module:
    if cfg["norm"] == "rmsnorm":
        return nn.RMSNorm(cfg["n_embd"], eps=cfg["norm_eps"])
    return nn.LayerNorm(cfg["n_embd"], eps=cfg["norm_eps"], bias=cfg["bias"])


class Attention(nn.Module):
    """Causal multi-head self-attention: fused Q/K/V Linear, optional RoPE, torch SDPA."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        self.c_attn = nn.Linear(cfg["n_embd"], 3 * cfg["n_embd"], bias=cfg["qkv_bias"])
        self.c_proj = nn.Linear(cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        nh = self.cfg["n_head"]
        q, k, v = self.c_attn(x).split(C, dim=2)  # 3 x (B, T, C)
        q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        if self.cfg["pos"] == "rope":
            cos, sin = rope_cos_sin(T, C // nh, self.cfg["rope_theta"], x.dtype)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    """Linear(C, hidden) -> ReLU or tanh-approximated GELU -> Linear(hidden, C)."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.activation = cfg["activation"]
        self.c_fc = nn.Linear(cfg["n_embd"], cfg["n_hidden"], bias=cfg["bias"])
        self.c_proj = nn.Linear(cfg["n_hidden"], cfg["n_embd"], bias=cfg["bias"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.c_fc(x)  # (B, T, hidden)
        h = F.gelu(h, approximate="tanh") if self.activation == "gelu" else F.relu(h)
        return self.c_proj(h)


class Block(nn.Module):
    """Pre-norm residual block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.ln_1 = make_norm(cfg)
        self.attn = Attention(cfg)
        self.ln_2 = make_norm(cfg)
        self.mlp = FeedForward(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(nn.Module):
    """The twin. Build with TorchGPT(config_dict) or TorchGPT(**config_values); weights come from
    load_named_arrays, not from any particular initialisation."""

    def __init__(self, config: Mapping | None = None, **kwargs):
        super().__init__()
        cfg = check_config({**(config or {}), **kwargs})
        self.cfg = cfg
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = (nn.Embedding(cfg["block_size"], cfg["n_embd"])
                    if cfg["pos"] == "learned" else None)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = make_norm(cfg)
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=cfg["bias"])

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """idx (B, T) int64 -> logits (B, T, vocab), and the mean cross-entropy (or None)."""
        T = idx.shape[1]
        if T > self.cfg["block_size"]:
            raise ValueError(f"sequence length {T} exceeds block_size {self.cfg['block_size']}")
        x = self.wte(idx)  # (B, T, C)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(T))  # (T, C) broadcast over B
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab)
        if targets is None:
            return logits, None
        V = logits.shape[-1]
        return logits, F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


def load_named_arrays(model: nn.Module, arrays: Mapping[str, np.ndarray]) -> None:
    """Copy arrays into the model's parameters by name; both name sets and all shapes must match.

    The parameters keep their own dtype (the arrays are cast), so one set of float64 arrays
    can fill a float32 twin.
    """
    params = dict(model.named_parameters())
    missing, unexpected = sorted(set(params) - set(arrays)), sorted(set(arrays) - set(params))
    if missing or unexpected:
        raise KeyError(f"parameter names differ: only in torch {missing}, "
                       f"only in the source {unexpected}")
    with torch.no_grad():
        for name, p in params.items():
            value = torch.from_numpy(np.ascontiguousarray(arrays[name]))
            if tuple(value.shape) != tuple(p.shape):
                raise ValueError(f"parameter '{name}': source shape {tuple(value.shape)}, "
                                 f"torch shape {tuple(p.shape)}")
            p.copy_(value.to(p.dtype))


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())



def max_errors(actual, expected) -> tuple[float, float]:
    """(max |a - e|, max |a - e| / max |e|): the largest absolute error, and that error relative
    to the tensor's scale (elementwise ratios blow up on entries that are nearly zero)."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise ValueError(f"shape mismatch: {a.shape} vs {e.shape}")
    if a.size == 0:
        return 0.0, 0.0
    max_abs = float(np.max(np.abs(a - e)))
    scale = float(np.max(np.abs(e)))
    return max_abs, (max_abs / scale if scale > 0 else max_abs)


def within(actual, expected, atol: float, rtol: float) -> bool:
    """Elementwise |a - e| <= atol + rtol*|e| (torch.testing / numpy.isclose rule), NaNs fail."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    return a.shape == e.shape and bool(np.all(np.abs(a - e) <= atol + rtol * np.abs(e)))
