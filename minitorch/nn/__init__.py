"""Neural-network layers, containers, initializers and functional composites on top of the
engine (torch.nn names); nothing here imports optim, train or generate."""

from . import composites, functional, init, utils  # noqa: F401
from .activation import (
    ELU,
    GELU,
    Flatten,
    Identity,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .gpt import GPT, MLP, PRESETS, Block, CausalSelfAttention, GPTConfig
from .layers import BatchNorm1d, BatchNorm2d, Dropout, Embedding, LayerNorm, Linear, RMSNorm
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "CrossEntropyLoss",
           "ELU", "Flatten", "GELU", "GPT", "PRESETS", "Block", "CausalSelfAttention", "Dropout",
           "Embedding", "GPTConfig",
           "HuberLoss", "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax",
           "MLP", "MSELoss", "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU",
           "RMSNorm", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus",
           "Tanh", "composites", "functional", "init", "utils"]
