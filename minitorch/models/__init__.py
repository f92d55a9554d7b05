"""Application models built on minitorch.nn (torch's nn knows none of them): the GPT, its
config and presets. nn never imports this package."""

from .gpt import GPT, MLP, PRESETS, Block, CausalSelfAttention, GPTConfig

__all__ = ["GPT", "MLP", "PRESETS", "Block", "CausalSelfAttention", "GPTConfig"]
