"""Graph-free GPT inference: a snapshot of a GPT's weights run through `GPT.infer` on plain NumPy
arrays, with an optional KV cache. No Tensor op runs and no graph is built: that bookkeeping is
what this path exists to skip. The architecture itself is models/gpt.py's (one definition), so the
logits match the training model's (tested in float64).
"""

from __future__ import annotations

import numpy as np

from ..data import load_tokenizer
from ..engine import Generator
from ..io import load_checkpoint, model_config_of
from ..models.gpt import GPT, AttentionRecord, GPTConfig, KVCache

__all__ = ["AttentionRecord", "InferenceGPT", "KVCache"]


class InferenceGPT:
    """A GPT's forward pass on NumPy arrays from a state_dict; no autograd.

    Args:
        config: the architecture the weights were trained with.
        state: parameter name -> array; names and shapes must match `config` exactly.
        dtype: compute dtype (default: the dtype of `wte.weight`).
    """

    def __init__(self, config: GPTConfig, state: dict[str, np.ndarray], dtype=None):
        dtype = np.dtype(dtype or np.asarray(state["wte.weight"]).dtype
                         if "wte.weight" in state else dtype or np.float32)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"InferenceGPT: dtype must be float32 or float64, got {dtype}")
        self.config, self.dtype = config, dtype
        self.model = GPT(config, Generator(0), dtype=dtype)  # its own generator: no global draw
        try:
            self.model.load_state_dict(state)  # copies: later training cannot change the snapshot
        except KeyError as e:
            raise KeyError(f"InferenceGPT: state_dict does not fit {config}: {e.args[0]}") from None

    @classmethod
    def from_model(cls, model: GPT, dtype=None) -> InferenceGPT:
        """Snapshot a minitorch GPT's current weights."""
        return cls(model.config, model.state_dict(), dtype=dtype)

    @classmethod
    def from_checkpoint(cls, path, dtype=None):
        """(engine, tokenizer) from a run folder written by training."""
        ckpt = load_checkpoint(path)  # validated: config under the size cap, arrays checked
        config = model_config_of(ckpt.model_config, path)
        return cls(config, ckpt.model, dtype=dtype), load_tokenizer(ckpt.tokenizer)

    def new_cache(self, batch: int = 1) -> KVCache:
        """An empty cache holding up to block_size positions for `batch` sequences."""
        return self.model.new_cache(batch)

    def __call__(self, ids, cache: KVCache | None = None, **kwargs) -> np.ndarray:
        return self.forward(ids, cache, **kwargs)

    def forward(self, ids, cache: KVCache | None = None, last_only: bool = False,
                attention: list[AttentionRecord] | None = None) -> np.ndarray:
        """Logits (B, T, V) (or (B, 1, V) with last_only) for ids (B, T) after the cached
        positions; see GPT.infer."""
        return self.model.infer(ids, cache, last_only=last_only, attention=attention)
