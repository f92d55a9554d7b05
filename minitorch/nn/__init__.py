"""Neural-network layers, containers, initializers and functional composites on top of the
engine (torch.nn names); nothing here imports optim, train or generate."""

from . import composites, functional, init, utils  # noqa: F401
from .gpt import GPT, MLP, PRESETS, Block, CausalSelfAttention, GPTConfig
from .layers import Dropout, Embedding, LayerNorm, Linear, RMSNorm
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["GPT", "PRESETS", "Block", "CausalSelfAttention", "Dropout", "Embedding", "GPTConfig",
           "LayerNorm", "Linear", "MLP", "Module", "ModuleDict", "ModuleList", "Parameter",
           "RMSNorm", "Sequential", "composites", "functional", "init", "utils"]
