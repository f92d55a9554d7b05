"""A GPT-style decoder-only transformer (pre-norm blocks) built from minitorch layers.

Parameter names follow GPT-2 (wte, wpe, h.{i}.attn.c_attn, ln_f, lm_head) so they compare with
an independent torch implementation by name. Shapes: B batch, T time, C n_embd, nh heads, hs C/nh.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..engine import Generator, Tensor, default_generator
from . import functional as F
from .layers import Embedding, LayerNorm, Linear, RMSNorm
from .module import Module, ModuleList


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 65  # number of token ids
    block_size: int = 64  # longest context (positions)
    n_layer: int = 3  # transformer blocks
    n_head: int = 1  # attention heads; n_embd must divide evenly
    n_embd: int = 64  # model width C
    n_hidden: int = 256  # MLP hidden width
    activation: str = "relu"  # MLP nonlinearity: "relu" or "gelu" (tanh approximation)
    norm: str = "layernorm"  # "layernorm" or "rmsnorm"
    pos: str = "learned"  # position encoding: "learned" (wpe table) or "rope"
    qkv_bias: bool = False  # bias on the fused Q/K/V projection
    bias: bool = True  # bias on the other Linears (attention output, MLP, head) and LayerNorm
    norm_eps: float = 1e-5  # epsilon inside the norms
    rope_theta: float = 10000.0  # RoPE base frequency

    def __post_init__(self):
        checks = {
            "activation": self.activation in ("relu", "gelu"),
            "norm": self.norm in ("layernorm", "rmsnorm"),
            "pos": self.pos in ("learned", "rope"),
            "n_head": self.n_head >= 1 and self.n_embd % self.n_head == 0,
            "n_layer": self.n_layer >= 1,
            "vocab_size": self.vocab_size >= 1,
            "block_size": self.block_size >= 1,
        }
        if self.pos == "rope":
            checks["n_embd"] = (self.n_embd // max(self.n_head, 1)) % 2 == 0
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"GPTConfig: invalid value for {bad}: {self}")

    def replace(self, **overrides) -> GPTConfig:
        return dataclasses.replace(self, **overrides)


PRESETS: dict[str, GPTConfig] = {
    # The seed document's TinyTransformer: exactly 161,985 parameters.
    "seed": GPTConfig(),
    # GPT-2 flavour: multi-head, GELU, LayerNorm, learned positions, biases everywhere.
    "gpt2-mini": GPTConfig(n_head=4, activation="gelu", qkv_bias=True),
    # LLaMA flavour: RoPE, RMSNorm, no biases.
    "llama-mini": GPTConfig(n_head=4, activation="gelu", norm="rmsnorm", pos="rope", bias=False),
}


def _norm(cfg: GPTConfig, dtype) -> Module:
    if cfg.norm == "rmsnorm":
        return RMSNorm(cfg.n_embd, cfg.norm_eps, dtype=dtype)
    return LayerNorm(cfg.n_embd, cfg.norm_eps, bias=cfg.bias, dtype=dtype)


class CausalSelfAttention(Module):
    """Multi-head causal self-attention with one fused Q/K/V projection and optional RoPE."""

    def __init__(self, cfg: GPTConfig, generator: Generator, dtype, proj_std: float):
        self.n_head, self.cfg = cfg.n_head, cfg
        self.c_attn = Linear(cfg.n_embd, 3 * cfg.n_embd, cfg.qkv_bias, generator=generator,
                             dtype=dtype)
        self.c_proj = Linear(cfg.n_embd, cfg.n_embd, cfg.bias, std=proj_std, generator=generator,
                             dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        qkv = self.c_attn(x)  # (B, T, 3C)
        cos = sin = None
        if self.cfg.pos == "rope":
            cos, sin = F.rope_tables(T, C // self.n_head, theta=self.cfg.rope_theta)
        y = F.causal_self_attention(qkv, self.n_head, cos, sin)  # (B, T, C), heads side by side
        return self.c_proj(y)


class MLP(Module):
    """Position-wise feed-forward: Linear(C, hidden) -> activation -> Linear(hidden, C)."""

    def __init__(self, cfg: GPTConfig, generator: Generator, dtype, proj_std: float):
        self.activation = cfg.activation
        self.c_fc = Linear(cfg.n_embd, cfg.n_hidden, cfg.bias, generator=generator, dtype=dtype)
        self.c_proj = Linear(cfg.n_hidden, cfg.n_embd, cfg.bias, std=proj_std,
                             generator=generator, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        h = self.c_fc(x)  # (B, T, hidden)
        h = h.gelu(approximate="tanh") if self.activation == "gelu" else h.relu()
        return self.c_proj(h)


class Block(Module):
    """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, cfg: GPTConfig, generator: Generator, dtype):
        proj_std = 0.02 / (2 * cfg.n_layer) ** 0.5  # GPT-2: scale residual projections by depth
        self.ln_1 = _norm(cfg, dtype)
        self.attn = CausalSelfAttention(cfg, generator, dtype, proj_std)
        self.ln_2 = _norm(cfg, dtype)
        self.mlp = MLP(cfg, generator, dtype, proj_std)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(Module):
    """Token embedding (+ learned positions), n_layer blocks, final norm, linear head.

    Args:
        config: the architecture.
        generator: random source for the initial weights (default: minitorch's global one).
        dtype: float32 (default) or float64.
    """

    def __init__(self, config: GPTConfig, generator: Generator | None = None, dtype=np.float32):
        g = generator or default_generator
        self.config = config
        self.wte = Embedding(config.vocab_size, config.n_embd, generator=g, dtype=dtype)
        self.wpe = (Embedding(config.block_size, config.n_embd, generator=g, dtype=dtype)
                    if config.pos == "learned" else None)
        self.h = ModuleList(Block(config, g, dtype) for _ in range(config.n_layer))
        self.ln_f = _norm(config, dtype)
        self.lm_head = Linear(config.n_embd, config.vocab_size, config.bias, generator=g,
                              dtype=dtype)

    def forward(self, idx, targets=None) -> tuple[Tensor, Tensor | None]:
        """idx (B, T) int token ids -> logits (B, T, vocab); loss is mean cross-entropy vs
        targets (B, T), or None when targets is None."""
        ids = idx.data if isinstance(idx, Tensor) else np.asarray(idx)
        if ids.ndim != 2:
            raise ValueError(f"GPT expects token ids of shape (B, T), got {ids.shape}")
        B, T = ids.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        x = self.wte(ids)  # (B, T, C)
        if self.wpe is not None:
            x = x + self.wpe(np.arange(T))  # (T, C) broadcast over B
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, vocab)
        if targets is None:
            return logits, None
        t = targets.data if isinstance(targets, Tensor) else np.asarray(targets)
        if t.shape != (B, T):
            raise ValueError(f"cross_entropy targets shape {t.shape} does not match the token ids' "
                             f"{(B, T)}")
        loss = F.cross_entropy(logits.reshape(B * T, -1), t.reshape(B * T))  # rows (B*T, vocab)
        return logits, loss
