"""Neural-network layers and functional composites on top of the engine."""

from . import composites, functional  # noqa: F401
from .gpt import GPT, MLP, PRESETS, Block, CausalSelfAttention, GPTConfig
from .layers import Embedding, LayerNorm, Linear, RMSNorm
from .module import Module, ModuleList, Parameter

__all__ = ["GPT", "PRESETS", "Block", "CausalSelfAttention", "Embedding", "GPTConfig", "LayerNorm",
           "Linear", "MLP", "Module", "ModuleList", "Parameter", "RMSNorm", "composites",
           "functional"]
