"""A GPT-style decoder-only transformer (pre-norm blocks) built from minitorch.nn layers, with
GPT-2's initialization; the application model, kept out of nn as nanoGPT keeps model.py.

Parameter names follow GPT-2 (wte, wpe, h.{i}.attn.c_attn, ln_f, lm_head) so they compare with
an independent torch implementation by name. Shapes: B batch, T time, C n_embd, nh heads, hs C/nh.

The architecture is written once, here. Every module has `forward` (Tensors, builds the graph)
and, beside it, `infer` (plain arrays, optional KV cache, no graph) for generation; both run the
same kernels (engine/kernels.py), so a change to a layer is made in one place.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..engine import Generator, Tensor, default_generator
from ..engine import kernels as K
from ..nn import Embedding, LayerNorm, Linear, Module, ModuleList, RMSNorm, init
from ..nn import functional as F
from ..nn.utils import skip_init


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

    def num_parameters(self) -> int:
        """Parameters of GPT(self), counted without building it (checked exact against the
        built model for every preset and option); the size cap on loaded configs uses it."""
        C, H, V, T = self.n_embd, self.n_hidden, self.vocab_size, self.block_size
        norm = C * (2 if self.norm == "layernorm" and self.bias else 1)
        attn = 3 * C * C + (3 * C if self.qkv_bias else 0) + C * C + (C if self.bias else 0)
        mlp = 2 * C * H + (H + C if self.bias else 0)
        block = 2 * norm + attn + mlp
        embed = V * C + (T * C if self.pos == "learned" else 0)
        head = V * C + (V if self.bias else 0)
        return embed + self.n_layer * block + norm + head


PRESETS: dict[str, GPTConfig] = {
    # The first model: 1 head, ReLU, LayerNorm; 161,985 parameters at 65 tokens (Tiny Shakespeare).
    "seed": GPTConfig(),
    # GPT-2 flavour: multi-head, GELU, LayerNorm, learned positions, biases everywhere.
    "gpt2-mini": GPTConfig(n_head=4, activation="gelu", qkv_bias=True),
    # LLaMA flavour: RoPE, RMSNorm, no biases.
    "llama-mini": GPTConfig(n_head=4, activation="gelu", norm="rmsnorm", pos="rope", bias=False),
}


@dataclass
class KVCache:
    """Keys and values of every layer for the positions seen so far (plain arrays, no graph).

    k[i], v[i] are (B, nh, capacity, hs) buffers preallocated to block_size, so appending a token
    writes in place and costs the same at every length; `length` positions are filled.
    """

    k: list[np.ndarray]
    v: list[np.ndarray]
    length: int = 0
    capacity: int = field(init=False)

    def __post_init__(self) -> None:
        self.capacity = self.k[0].shape[2]

    @property
    def batch(self) -> int:
        return self.k[0].shape[0]


@dataclass
class AttentionRecord:
    """One layer's attention: Q/K/V shapes (B, nh, T, hs) and probabilities (B, nh, Tq, Tk)."""

    layer: int
    q_shape: tuple[int, ...]
    k_shape: tuple[int, ...]
    v_shape: tuple[int, ...]
    probs: np.ndarray


class Normed:
    """norm(x), not computed yet: what a PreLayerNorm/PreRMSNorm returns, for the NormLinear
    after it to compute together with its own product (F.norm_linear), so that norm(x) is never
    stored for backward (one (..., C) array less per norm). x (..., C)."""

    __slots__ = ("x", "norm")

    def __init__(self, x: Tensor, norm: PreLayerNorm | PreRMSNorm):
        self.x, self.norm = x, norm

    @property
    def shape(self) -> tuple[int, ...]:
        return self.x.shape


class PreLayerNorm(LayerNorm):
    """nn.LayerNorm over the last dim whose forward leaves the work to the NormLinear that
    reads it (a Normed); infer computes it (graph-free inference keeps nothing for backward)."""

    def forward(self, x: Tensor) -> Normed:
        return Normed(x, self)


class PreRMSNorm(RMSNorm):
    """nn.RMSNorm over the last dim, deferred to the NormLinear after it as PreLayerNorm is."""

    def forward(self, x: Tensor) -> Normed:
        return Normed(x, self)


class NormLinear(Linear):
    """nn.Linear that reads a pre-norm's output: given a Normed, the norm and this Linear run as
    one fused op (F.norm_linear, equal to linear(norm(x)): verification/test_fused.py); given
    a Tensor, it is nn.Linear."""

    def forward(self, x: Tensor | Normed) -> Tensor:
        if not isinstance(x, Normed):
            return super().forward(x)
        norm, rms = x.norm, isinstance(x.norm, RMSNorm)
        eps = float(np.finfo(x.x.dtype).eps) if norm.eps is None else norm.eps
        return F.norm_linear(x.x, norm.weight, None if rms else norm.bias, self.weight, self.bias,
                             eps, rms=rms)


def _norm(cfg: GPTConfig, dtype) -> Module:
    if cfg.norm == "rmsnorm":
        return PreRMSNorm(cfg.n_embd, cfg.norm_eps, dtype=dtype)
    return PreLayerNorm(cfg.n_embd, cfg.norm_eps, bias=cfg.bias, dtype=dtype)


def _linear(cls: type[Linear], n_in: int, n_out: int, bias: bool, dtype) -> Linear:
    """A Linear left uninitialized: GPT.init_weights draws its weights (GPT-2's init)."""
    return skip_init(cls, n_in, n_out, bias, dtype=dtype)


class CausalSelfAttention(Module):
    """Multi-head causal self-attention with one fused Q/K/V projection and optional RoPE."""

    def __init__(self, cfg: GPTConfig, dtype):
        self.n_head, self.cfg = cfg.n_head, cfg
        self.c_attn = _linear(NormLinear, cfg.n_embd, 3 * cfg.n_embd, cfg.qkv_bias, dtype)
        self.c_proj = _linear(Linear, cfg.n_embd, cfg.n_embd, cfg.bias, dtype)
        self.rope_cos = self.rope_sin = None  # constant RoPE tables (block_size, hs/2), a buffer
        if cfg.pos == "rope":
            self.rope_cos, self.rope_sin = K.rope_tables(
                cfg.block_size, cfg.n_embd // cfg.n_head, theta=cfg.rope_theta)

    def rope(self, past: int, T: int):
        """cos, sin (T, hs/2) for positions past..past+T-1, or (None, None) without RoPE."""
        if self.rope_cos is None:
            return None, None
        return self.rope_cos[past:past + T], self.rope_sin[past:past + T]

    def forward(self, x: Tensor | Normed) -> Tensor:
        """Attention over x (B, T, C); a pre-norm's Normed runs fused into c_attn."""
        qkv = self.c_attn(x)  # (B, T, 3C)
        cos, sin = self.rope(0, x.shape[1])
        y = F.causal_self_attention(qkv, self.n_head, cos, sin)  # (B, T, C), heads side by side
        return self.c_proj(y)

    def infer(self, x: np.ndarray, layer: int = 0, cache: KVCache | None = None,
              records: list[AttentionRecord] | None = None) -> np.ndarray:
        """forward on arrays; with a cache, x holds the positions after the cache.length cached
        ones: their keys/values are appended and attention covers all of them."""
        T, past = x.shape[1], 0 if cache is None else cache.length
        q, k, v = K.split_heads(self.c_attn.infer(x), self.n_head)  # each (B, nh, T, hs)
        cos, sin = self.rope(past, T)
        if cos is not None:
            cos, sin = cos.astype(x.dtype), sin.astype(x.dtype)
            q, k = K.rotate(q, cos, sin), K.rotate(k, cos, sin)
        if cache is not None:  # write the new positions, then attend over everything cached
            cache.k[layer][:, :, past:past + T] = k
            cache.v[layer][:, :, past:past + T] = v
            k, v = cache.k[layer][:, :, :past + T], cache.v[layer][:, :, :past + T]
        y, att = K.causal_attention(q, k, v)  # (B, nh, T, hs), P (B, nh, T, Tk)
        if records is not None:
            records.append(AttentionRecord(layer, q.shape, k.shape, v.shape, att))
        return self.c_proj.infer(K.merge_heads(y))


class MLP(Module):
    """Position-wise feed-forward: Linear(C, hidden) -> activation -> Linear(hidden, C)."""

    def __init__(self, cfg: GPTConfig, dtype):
        self.activation = cfg.activation
        self.c_fc = _linear(NormLinear, cfg.n_embd, cfg.n_hidden, cfg.bias, dtype)
        self.c_proj = _linear(Linear, cfg.n_hidden, cfg.n_embd, cfg.bias, dtype)

    def forward(self, x: Tensor | Normed) -> Tensor:
        """The MLP of x (B, T, C); a pre-norm's Normed runs fused into c_fc."""
        h = self.c_fc(x)  # (B, T, hidden)
        h = h.gelu(approximate="tanh") if self.activation == "gelu" else h.relu()
        return self.c_proj(h)

    def infer(self, x: np.ndarray) -> np.ndarray:
        h = self.c_fc.infer(x)  # (B, T, hidden)
        h = K.gelu(h, approximate="tanh")[0] if self.activation == "gelu" else K.relu(h)
        return self.c_proj.infer(h)


class Block(Module):
    """Pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)). Each norm runs
    fused into the first Linear after it (PreLayerNorm -> NormLinear: F.norm_linear), so its
    output is never stored; inference keeps nothing for backward and runs them in turn."""

    def __init__(self, cfg: GPTConfig, dtype):
        self.ln_1 = _norm(cfg, dtype)
        self.attn = CausalSelfAttention(cfg, dtype)
        self.ln_2 = _norm(cfg, dtype)
        self.mlp = MLP(cfg, dtype)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x

    def infer(self, x: np.ndarray, layer: int, cache: KVCache | None,
              records: list[AttentionRecord] | None) -> np.ndarray:
        x = x + self.attn.infer(self.ln_1.infer(x), layer, cache, records)
        return x + self.mlp.infer(self.ln_2.infer(x))


class GPT(Module):
    """Token embedding (+ learned positions), n_layer blocks, final norm, linear head.

    Args:
        config: the architecture.
        generator: random source for the initial weights (default: minitorch's global one).
        dtype: float32 (default) or float64.
    """

    def __init__(self, config: GPTConfig, generator: Generator | None = None, dtype=np.float32):
        self.config = config
        self.wte = skip_init(Embedding, config.vocab_size, config.n_embd, dtype=dtype)
        self.wpe = (skip_init(Embedding, config.block_size, config.n_embd, dtype=dtype)
                    if config.pos == "learned" else None)
        self.h = ModuleList(Block(config, dtype) for _ in range(config.n_layer))
        self.ln_f = _norm(config, dtype)
        self.lm_head = _linear(NormLinear, config.n_embd, config.vocab_size, config.bias, dtype)
        self.init_weights(generator or default_generator)
        self.flatten_parameters()  # one buffer: whole-buffer optimizer steps, one grad buffer

    def init_weights(self, generator: Generator) -> None:
        """GPT-2's init, drawn in module order: Linear and Embedding weights N(0, 0.02), the
        residual projections (c_proj) N(0, 0.02 / sqrt(2 n_layer)), biases 0; norms 1 and 0."""
        proj_std = 0.02 / (2 * self.config.n_layer) ** 0.5  # scale residual adds by depth
        for name, m in self.named_modules():
            if isinstance(m, Linear):
                std = proj_std if name.endswith("c_proj") else 0.02
                init.normal_(m.weight, 0.0, std, generator=generator)
                if m.bias is not None:
                    init.zeros_(m.bias)
            elif isinstance(m, Embedding):
                init.normal_(m.weight, 0.0, 0.02, generator=generator)

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
        # the targets reshaped by an op, not by NumPy, so a captured step (minitorch.replay)
        # sees them as derived from its input
        loss = F.cross_entropy(logits.reshape(B * T, -1), Tensor(t).reshape(B * T))  # (B*T, V)
        return logits, loss

    def new_cache(self, batch: int = 1) -> KVCache:
        """An empty KV cache for `infer`, holding up to block_size positions of `batch` rows."""
        cfg = self.config
        shape = (batch, cfg.n_head, cfg.block_size, cfg.n_embd // cfg.n_head)
        dtype = self.wte.weight.dtype
        return KVCache([np.zeros(shape, dtype) for _ in range(cfg.n_layer)],
                       [np.zeros(shape, dtype) for _ in range(cfg.n_layer)])

    def infer(self, ids, cache: KVCache | None = None, last_only: bool = False,
              attention: list[AttentionRecord] | None = None) -> np.ndarray:
        """forward on arrays, no graph: logits for ids (B, T) that follow the cache.length
        positions already in `cache` (keys/values of the new ones are appended to it).

        Args:
            ids: (B, T) integer token ids.
            cache: from new_cache(B), or None to attend over ids alone.
            last_only: logits of the last position only, (B, 1, V) (a cheaper head).
            attention: if a list, one AttentionRecord per layer is appended to it.
        Returns:
            logits (B, T, V), or (B, 1, V) with last_only.
        """
        ids = self._check_ids(ids, cache)
        T, past = ids.shape[1], 0 if cache is None else cache.length
        x = self.wte.infer(ids)  # (B, T, C)
        if self.wpe is not None:
            x = x + self.wpe.infer(np.arange(past, past + T))  # (T, C) broadcast over B
        for i, block in enumerate(self.h):
            x = block.infer(x, i, cache, attention)
        if cache is not None:
            cache.length = past + T
        if last_only:
            x = x[:, -1:]  # (B, 1, C)
        return self.lm_head.infer(self.ln_f.infer(x))  # (B, T or 1, V)

    def _check_ids(self, ids, cache: KVCache | None) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.ndim != 2 or ids.dtype.kind not in "iu":
            raise ValueError(f"GPT.infer expects integer token ids of shape (B, T), got "
                             f"shape {ids.shape} dtype {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.config.vocab_size):
            raise IndexError(f"token id out of range [0, {self.config.vocab_size}): "
                             f"min {ids.min()}, max {ids.max()}")
        past = 0 if cache is None else cache.length
        if cache is not None and cache.batch != ids.shape[0]:
            raise ValueError(f"cache holds batch {cache.batch}, ids have batch {ids.shape[0]}")
        if past + ids.shape[1] > self.config.block_size:
            raise ValueError(f"{past} cached + {ids.shape[1]} new positions exceed block_size "
                             f"{self.config.block_size}; crop the context or start a new cache")
        return ids
