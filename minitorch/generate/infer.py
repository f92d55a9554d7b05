"""Graph-free GPT inference: the model's forward on plain NumPy arrays, with an optional KV cache.

Reads a state_dict (GPT-2 parameter names) and a GPTConfig; builds no Tensor and no graph. The
math mirrors nn/gpt.py op for op, so its logits match the training model's (tested in float64).
It must not use Tensor or build a graph: that bookkeeping is what it exists to skip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..data import load_tokenizer
from ..engine.ops.elementwise import GELU_C
from ..engine.ops.fused import rotate
from ..io import load_checkpoint, model_config_of
from ..nn.functional import rope_tables
from ..nn.gpt import GPTConfig


def expected_shapes(cfg: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape for a GPT built from `cfg` (the same names GPT.state_dict uses)."""
    C, H, V = cfg.n_embd, cfg.n_hidden, cfg.vocab_size
    shapes: dict[str, tuple[int, ...]] = {"wte.weight": (V, C)}
    if cfg.pos == "learned":
        shapes["wpe.weight"] = (cfg.block_size, C)

    def norm(name: str) -> None:
        shapes[f"{name}.weight"] = (C,)
        if cfg.norm == "layernorm" and cfg.bias:
            shapes[f"{name}.bias"] = (C,)

    def linear(name: str, n_in: int, n_out: int, bias: bool) -> None:
        shapes[f"{name}.weight"] = (n_out, n_in)
        if bias:
            shapes[f"{name}.bias"] = (n_out,)

    for i in range(cfg.n_layer):
        p = f"h.{i}"
        norm(f"{p}.ln_1")
        linear(f"{p}.attn.c_attn", C, 3 * C, cfg.qkv_bias)
        linear(f"{p}.attn.c_proj", C, C, cfg.bias)
        norm(f"{p}.ln_2")
        linear(f"{p}.mlp.c_fc", C, H, cfg.bias)
        linear(f"{p}.mlp.c_proj", H, C, cfg.bias)
    norm("ln_f")
    linear("lm_head", C, V, cfg.bias)
    return shapes


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

    def keys(self, layer: int) -> np.ndarray:
        return self.k[layer][:, :, : self.length]

    def values(self, layer: int) -> np.ndarray:
        return self.v[layer][:, :, : self.length]


@dataclass
class AttentionRecord:
    """One layer's attention: Q/K/V shapes (B, nh, T, hs) and probabilities (B, nh, Tq, Tk)."""

    layer: int
    q_shape: tuple[int, ...]
    k_shape: tuple[int, ...]
    v_shape: tuple[int, ...]
    probs: np.ndarray


class InferenceGPT:
    """A GPT's forward pass on NumPy arrays from a state_dict; no autograd.

    Args:
        config: the architecture the weights were trained with.
        state: parameter name -> array; names and shapes must match `config` exactly.
        dtype: compute dtype (default: the dtype of `wte.weight`).
    """

    def __init__(self, config: GPTConfig, state: dict[str, np.ndarray], dtype=None):
        want = expected_shapes(config)
        missing, unexpected = sorted(set(want) - set(state)), sorted(set(state) - set(want))
        if missing or unexpected:
            raise KeyError(f"InferenceGPT: state_dict does not fit {config}: missing keys "
                           f"{missing}, unexpected keys {unexpected}")
        dtype = np.dtype(dtype or np.asarray(state["wte.weight"]).dtype)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"InferenceGPT: dtype must be float32 or float64, got {dtype}")
        self.config, self.dtype = config, dtype
        self.w: dict[str, np.ndarray] = {}
        for name, shape in want.items():
            arr = np.asarray(state[name])
            if arr.shape != shape:
                raise ValueError(f"InferenceGPT: '{name}' has shape {arr.shape}, expected {shape}")
            self.w[name] = np.array(arr, dtype=dtype, copy=True)  # owned: training can't change it
        self.hs = config.n_embd // config.n_head
        if config.pos == "rope":  # tables for every position once; sliced per call
            cos, sin = rope_tables(config.block_size, self.hs, theta=config.rope_theta)
            self.rope_cos, self.rope_sin = cos.astype(dtype), sin.astype(dtype)

    @classmethod
    def from_model(cls, model, dtype=None) -> InferenceGPT:
        """Snapshot a minitorch GPT's current weights."""
        return cls(model.config, model.state_dict(), dtype=dtype)

    @classmethod
    def from_checkpoint(cls, path, dtype=None):
        """(engine, tokenizer) from a run folder written by training; builds no GPT module."""
        ckpt = load_checkpoint(path)  # validated: config under the size cap, arrays checked
        config = model_config_of(ckpt.model_config, path)
        return cls(config, ckpt.model, dtype=dtype), load_tokenizer(ckpt.tokenizer)

    def new_cache(self, batch: int = 1) -> KVCache:
        """An empty cache holding up to block_size positions for `batch` sequences."""
        cfg = self.config
        shape = (batch, cfg.n_head, cfg.block_size, self.hs)
        return KVCache([np.zeros(shape, self.dtype) for _ in range(cfg.n_layer)],
                       [np.zeros(shape, self.dtype) for _ in range(cfg.n_layer)])

    def __call__(self, ids, cache: KVCache | None = None, **kwargs) -> np.ndarray:
        return self.forward(ids, cache, **kwargs)

    def forward(self, ids, cache: KVCache | None = None, last_only: bool = False,
                attention: list[AttentionRecord] | None = None) -> np.ndarray:
        """Logits for token ids (B, T) that follow the `cache.length` positions already cached.

        Args:
            ids: (B, T) integer token ids.
            cache: if given, keys/values of the new positions are appended to it and attention
                also covers the cached ones (positions are offset by cache.length).
            last_only: return logits of the last position only, (B, 1, V) (cheaper head).
            attention: if a list, one AttentionRecord per layer is appended to it.
        Returns:
            logits (B, T, V), or (B, 1, V) with last_only.
        """
        ids = self._check_ids(ids, cache)
        B, T = ids.shape
        past = 0 if cache is None else cache.length
        x = self.w["wte.weight"][ids]  # (B, T, C)
        if self.config.pos == "learned":
            x = x + self.w["wpe.weight"][past:past + T]  # (T, C) broadcast over B
        for i in range(self.config.n_layer):
            x = x + self._attention(i, self._norm(f"h.{i}.ln_1", x), cache, past, attention)
            x = x + self._mlp(i, self._norm(f"h.{i}.ln_2", x))
        if cache is not None:
            cache.length = past + T
        if last_only:
            x = x[:, -1:]  # (B, 1, C)
        return self._linear("lm_head", self._norm("ln_f", x))  # (B, T or 1, V)

    def _check_ids(self, ids, cache: KVCache | None) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.ndim != 2 or ids.dtype.kind not in "iu":
            raise ValueError(f"InferenceGPT expects integer token ids of shape (B, T), got "
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

    # ---- layers (each mirrors the composite of the same name in nn/functional.py) ----------
    def _linear(self, name: str, x: np.ndarray) -> np.ndarray:
        y = x @ self.w[f"{name}.weight"].T  # weight (out, in)
        bias = self.w.get(f"{name}.bias")
        return y if bias is None else y + bias

    def _norm(self, name: str, x: np.ndarray) -> np.ndarray:
        # add.reduce / n is what np.mean and np.var compute, minus their Python overhead
        eps, weight = self.config.norm_eps, self.w[f"{name}.weight"]
        bias = self.w.get(f"{name}.bias")
        n = x.shape[-1]
        if self.config.norm == "rmsnorm":
            return x / np.sqrt(np.add.reduce(x * x, axis=-1, keepdims=True) / n + eps) * weight
        centered = x - np.add.reduce(x, axis=-1, keepdims=True) / n
        var = np.add.reduce(centered * centered, axis=-1, keepdims=True) / n
        y = centered / np.sqrt(var + eps) * weight
        return y if bias is None else y + bias

    def _rope(self, x: np.ndarray, past: int) -> np.ndarray:
        """The engine's rotate-half RoPE on (B, nh, T, hs) for positions past..past+T-1."""
        T = x.shape[-2]
        return rotate(x, self.rope_cos[past:past + T], self.rope_sin[past:past + T])  # (T, hs/2)

    def _attention(self, i: int, x: np.ndarray, cache: KVCache | None, past: int,
                   records: list[AttentionRecord] | None) -> np.ndarray:
        B, T, C = x.shape
        nh, hs = self.config.n_head, self.hs
        qkv = self._linear(f"h.{i}.attn.c_attn", x)  # (B, T, 3C), split q|k|v on the last dim
        q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
                   for j in range(3))  # each (B, nh, T, hs)
        if self.config.pos == "rope":
            q, k = self._rope(q, past), self._rope(k, past)
        if cache is not None:  # write the new positions, then attend over everything cached
            cache.k[i][:, :, past:past + T] = k
            cache.v[i][:, :, past:past + T] = v
            k, v = cache.k[i][:, :, :past + T], cache.v[i][:, :, :past + T]  # (B, nh, Tk, hs)
        Tk = k.shape[2]
        att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hs))  # (B, nh, T, Tk)
        if T > 1:  # query t (absolute position past+t) sees keys j <= past+t
            future = np.triu(np.ones((T, Tk), dtype=bool), k=Tk - T + 1)
            att = np.where(future, -np.inf, att)
        e = np.exp(att - np.max(att, axis=-1, keepdims=True))
        att = e / np.sum(e, axis=-1, keepdims=True)
        if records is not None:
            records.append(AttentionRecord(i, q.shape, k.shape, v.shape, att.copy()))
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)  # heads side by side
        return self._linear(f"h.{i}.attn.c_proj", y)

    def _mlp(self, i: int, x: np.ndarray) -> np.ndarray:
        h = self._linear(f"h.{i}.mlp.c_fc", x)  # (B, T, hidden)
        if self.config.activation == "gelu":  # the gelu op's forward, term for term
            h = 0.5 * h * (1.0 + np.tanh(GELU_C * (h + 0.044715 * h * h * h)))
        else:
            h = np.maximum(h, 0.0)
        return self._linear(f"h.{i}.mlp.c_proj", h)
